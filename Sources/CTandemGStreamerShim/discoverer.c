// GstDiscoverer: probes a URI synchronously and copies what it found (streams, codecs, duration, tags, missing
// plugins) out of its GObject tree, which Swift would have to walk through type-check macros.
#include "shim_internal.h"

#include <gst/pbutils/pbutils.h>
#include <string.h>

// --- Track languages, read where they cannot be missed ---
//
// GstDiscoverer (1.22) takes a stream's tags from the tag *messages* its fakesink posts, but it calls a probe done
// once a sparse subtitle stream's first data has *entered* the queue in front of that sink. On a loaded machine the
// subtitle's tag event is still in the queue then, and the track comes out without its language (2 probes in 10
// next to a busy loop). A tag event passes the decoded pad before the data that follows it, on the same streaming
// thread, so a probe on that pad has seen each track's language by the time the discoverer is done. The
// languages are kept by stream id, which the discoverer reads from the same pad.

typedef struct {
    GMutex lock;
    GHashTable *languages;   // stream id -> language code (both owned)
} language_watch;

static language_watch *language_watch_ref(language_watch *watch) {
    return g_atomic_rc_box_acquire(watch);
}

static void language_watch_clear(language_watch *watch) {
    g_hash_table_unref(watch->languages);
    g_mutex_clear(&watch->lock);
}

static void language_watch_unref(gpointer watch) {
    g_atomic_rc_box_release_full(watch, (GDestroyNotify)language_watch_clear);
}

/// Records the stream-scoped language in `event` (a tag event on `pad`) under the pad's stream id.
static void language_watch_note(language_watch *watch, GstPad *pad, GstEvent *event) {
    if (GST_EVENT_TYPE(event) != GST_EVENT_TAG) return;
    GstTagList *tags = NULL;
    gst_event_parse_tag(event, &tags);
    gchar *language = NULL;
    if (!tags || gst_tag_list_get_scope(tags) != GST_TAG_SCOPE_STREAM
        || !gst_tag_list_get_string(tags, GST_TAG_LANGUAGE_CODE, &language)) return;
    gchar *stream_id = gst_pad_get_stream_id(pad);
    if (stream_id) {
        g_mutex_lock(&watch->lock);
        g_hash_table_replace(watch->languages, stream_id, language);
        g_mutex_unlock(&watch->lock);
    } else {
        g_free(language);
    }
}

static GstPadProbeReturn language_probe(GstPad *pad, GstPadProbeInfo *info, gpointer watch) {
    language_watch_note(watch, pad, GST_PAD_PROBE_INFO_EVENT(info));
    return GST_PAD_PROBE_OK;
}

static gboolean note_sticky_event(GstPad *pad, GstEvent **event, gpointer watch) {
    language_watch_note(watch, pad, *event);
    return TRUE;
}

static void language_pad_added(GstElement *decodebin, GstPad *pad, gpointer watch) {
    (void)decodebin;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, language_probe, language_watch_ref(watch),
                      language_watch_unref);
    // Tags the pad already passed on before the probe was there.
    gst_pad_sticky_events_foreach(pad, note_sticky_event, watch);
}

/// The discoverer's uridecodebin is the parent of the source it announces; watch the pads it adds.
static void language_source_setup(GstDiscoverer *discoverer, GstElement *source, gpointer watch) {
    (void)discoverer;
    GstObject *decodebin = gst_object_get_parent(GST_OBJECT(source));
    if (!decodebin) return;
    if (!g_object_get_data(G_OBJECT(decodebin), "tdm-language-watch")) {
        g_object_set_data(G_OBJECT(decodebin), "tdm-language-watch", watch);
        g_signal_connect_data(decodebin, "pad-added", G_CALLBACK(language_pad_added), language_watch_ref(watch),
                              (GClosureNotify)(void (*)(void))language_watch_unref, 0);
    }
    gst_object_unref(decodebin);
}

/// The language the watch saw for `info`'s stream, or NULL; caller frees.
static gchar *language_watch_lookup(language_watch *watch, GstDiscovererStreamInfo *info) {
    const gchar *stream_id = gst_discoverer_stream_info_get_stream_id(info);
    if (!stream_id) return NULL;
    g_mutex_lock(&watch->lock);
    gchar *language = g_strdup(g_hash_table_lookup(watch->languages, stream_id));
    g_mutex_unlock(&watch->lock);
    return language;
}

static void fill_stream(GstDiscovererStreamInfo *info, language_watch *watch, tdm_gst_stream_info *out) {
    memset(out, 0, sizeof *out);
    GstCaps *caps = gst_discoverer_stream_info_get_caps(info);
    if (caps) {
        out->caps = gst_caps_to_string(caps);
        out->codec = gst_pb_utils_get_codec_description(caps);
        gst_caps_unref(caps);
    }
    if (GST_IS_DISCOVERER_VIDEO_INFO(info)) {
        GstDiscovererVideoInfo *video = GST_DISCOVERER_VIDEO_INFO(info);
        out->kind = 0;
        out->width = (int)gst_discoverer_video_info_get_width(video);
        out->height = (int)gst_discoverer_video_info_get_height(video);
        out->fps_num = (int)gst_discoverer_video_info_get_framerate_num(video);
        out->fps_den = (int)gst_discoverer_video_info_get_framerate_denom(video);
        out->bitrate = gst_discoverer_video_info_get_bitrate(video);
    } else if (GST_IS_DISCOVERER_AUDIO_INFO(info)) {
        GstDiscovererAudioInfo *audio = GST_DISCOVERER_AUDIO_INFO(info);
        out->kind = 1;
        out->channels = (int)gst_discoverer_audio_info_get_channels(audio);
        out->sample_rate = (int)gst_discoverer_audio_info_get_sample_rate(audio);
        out->bitrate = gst_discoverer_audio_info_get_bitrate(audio);
        out->language = language_watch_lookup(watch, info);
        if (!out->language) out->language = g_strdup(gst_discoverer_audio_info_get_language(audio));
    } else if (GST_IS_DISCOVERER_SUBTITLE_INFO(info)) {
        out->kind = 2;
        out->language = language_watch_lookup(watch, info);
        if (!out->language)
            out->language = g_strdup(gst_discoverer_subtitle_info_get_language(GST_DISCOVERER_SUBTITLE_INFO(info)));
    } else if (GST_IS_DISCOVERER_CONTAINER_INFO(info)) {
        out->kind = 3;
    } else {
        out->kind = 4;
    }
}

tdm_gst_discover_result *tdm_gst_discover(const char *uri, int64_t timeout_ns) {
    tdm_gst_discover_result *result = g_new0(tdm_gst_discover_result, 1);
    result->duration = -1;
    GError *error = NULL;
    GstDiscoverer *discoverer = gst_discoverer_new((GstClockTime)timeout_ns, &error);
    if (!discoverer) {
        result->result = TDM_GST_DISCOVER_ERROR;
        result->error = g_strdup(error ? error->message : "cannot create a discoverer");
        if (error) g_error_free(error);
        return result;
    }
    language_watch *watch = g_atomic_rc_box_new0(language_watch);
    g_mutex_init(&watch->lock);
    watch->languages = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_signal_connect_data(discoverer, "source-setup", G_CALLBACK(language_source_setup), language_watch_ref(watch),
                          (GClosureNotify)(void (*)(void))language_watch_unref, 0);
    GstDiscovererInfo *info = gst_discoverer_discover_uri(discoverer, uri, &error);
    if (error) {
        result->domain = tdm_shim_domain_of(error->domain);
        result->code = error->code;
        result->error = g_strdup(error->message);
        g_clear_error(&error);
    }
    if (!info) {
        result->result = TDM_GST_DISCOVER_ERROR;
        gst_object_unref(discoverer);
        language_watch_unref(watch);
        return result;
    }
    result->result = (int)gst_discoverer_info_get_result(info);
    const gchar **details = gst_discoverer_info_get_missing_elements_installer_details(info);
    if (details && details[0]) result->missing = g_strjoinv("\n", (gchar **)details);
    GstClockTime duration = gst_discoverer_info_get_duration(info);
    result->duration = GST_CLOCK_TIME_IS_VALID(duration) ? (int64_t)duration : -1;
    result->seekable = gst_discoverer_info_get_seekable(info) ? 1 : 0;
    GstDiscovererStreamInfo *top = gst_discoverer_info_get_stream_info(info);
    if (top) {
        // The top-level stream's tags are the item's own (the merged list also holds track names).
        const GstTagList *tags = gst_discoverer_stream_info_get_tags(top);
        if (tags && gst_tag_list_get_scope(tags) == GST_TAG_SCOPE_GLOBAL)
            gst_tag_list_get_string(tags, GST_TAG_TITLE, &result->title);
        if (GST_IS_DISCOVERER_CONTAINER_INFO(top)) {
            GstCaps *caps = gst_discoverer_stream_info_get_caps(top);
            if (caps) {
                result->container = gst_pb_utils_get_codec_description(caps);
                gst_caps_unref(caps);
            }
        }
        gst_discoverer_stream_info_unref(top);
    }
    GList *streams = gst_discoverer_info_get_stream_list(info);
    guint count = 0;
    for (GList *l = streams; l; l = l->next) {
        if (!GST_IS_DISCOVERER_CONTAINER_INFO(l->data)) count++;
    }
    result->streams = g_new0(tdm_gst_stream_info, count ? count : 1);
    for (GList *l = streams; l; l = l->next) {
        if (GST_IS_DISCOVERER_CONTAINER_INFO(l->data)) continue;
        fill_stream(l->data, watch, &result->streams[result->stream_count++]);
    }
    gst_discoverer_stream_info_list_free(streams);
    gst_discoverer_info_unref(info);
    gst_object_unref(discoverer);
    language_watch_unref(watch);
    return result;
}

void tdm_gst_discover_result_free(tdm_gst_discover_result *result) {
    if (!result) return;
    for (int i = 0; i < result->stream_count; i++) {
        g_free(result->streams[i].codec);
        g_free(result->streams[i].language);
        g_free(result->streams[i].caps);
    }
    g_free(result->streams);
    g_free(result->error);
    g_free(result->missing);
    g_free(result->title);
    g_free(result->container);
    g_free(result);
}
