// GstDiscoverer: probes a URI synchronously and copies what it found (streams, codecs, duration, tags, missing
// plugins) out of its GObject tree, which Swift would have to walk through type-check macros.
#include "shim_internal.h"

#include <gst/pbutils/pbutils.h>
#include <string.h>

static void fill_stream(GstDiscovererStreamInfo *info, tdm_gst_stream_info *out) {
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
        out->language = g_strdup(gst_discoverer_audio_info_get_language(audio));
    } else if (GST_IS_DISCOVERER_SUBTITLE_INFO(info)) {
        out->kind = 2;
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
        fill_stream(l->data, &result->streams[result->stream_count++]);
    }
    gst_discoverer_stream_info_list_free(streams);
    gst_discoverer_info_unref(info);
    gst_object_unref(discoverer);
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
