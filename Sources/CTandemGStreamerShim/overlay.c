// What people see and do in the video window: typed property setters the on-screen display, volume and track
// choices need (g_object_set is variadic), key presses from the window's navigation events, and the tracks' languages.
#include "shim_internal.h"
#include <gst/base/gstbasesink.h>
#include <gst/tag/tag.h>
#include <gst/video/navigation.h>
#include <string.h>

void tdm_gst_set_int(void *object, const char *property, int value) {
    if (tdm_shim_find_property(object, property)) g_object_set(object, property, value, NULL);
}
void tdm_gst_set_double(void *object, const char *property, double value) {
    if (tdm_shim_find_property(object, property)) g_object_set(object, property, value, NULL);
}
void tdm_gst_set_boolean(void *object, const char *property, int value) {
    if (tdm_shim_find_property(object, property)) g_object_set(object, property, value ? TRUE : FALSE, NULL);
}
double tdm_gst_get_double(void *object, const char *property) {
    gdouble value = 0;
    if (tdm_shim_find_property(object, property)) g_object_get(object, property, &value, NULL);
    return value;
}
void tdm_gst_set_flag(void *object, const char *property, unsigned int flag, int on) {
    if (!tdm_shim_find_property(object, property)) return;
    guint flags = 0;
    g_object_get(object, property, &flags, NULL);
    flags = on ? (flags | flag) : (flags & ~flag);
    g_object_set(object, property, flags, NULL);
}

typedef struct {
    tdm_gst_key_callback on_key;
    tdm_gst_release_callback release;
    void *context;
} key_watch;

static GstPadProbeReturn on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    key_watch *watch = data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    if (event && GST_EVENT_TYPE(event) == GST_EVENT_NAVIGATION
        && gst_navigation_event_get_type(event) == GST_NAVIGATION_EVENT_KEY_PRESS) {
        const gchar *key = NULL;
        if (gst_navigation_event_parse_key_event(event, &key) && key) watch->on_key(watch->context, key);
    }
    return GST_PAD_PROBE_OK;
}

static void release_watch(gpointer data) {
    key_watch *watch = data;
    if (watch->release) watch->release(watch->context);
    g_free(watch);
}

unsigned long tdm_gst_watch_keys(GstElement *element, const char *pad_name, tdm_gst_key_callback on_key,
                                 tdm_gst_release_callback release, void *context) {
    GstPad *pad = element ? gst_element_get_static_pad(element, pad_name) : NULL;
    if (!pad) {
        if (release) release(context);
        return 0;
    }
    key_watch *watch = g_new0(key_watch, 1);
    watch->on_key = on_key;
    watch->release = release;
    watch->context = context;
    gulong id = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event, watch, release_watch);
    gst_object_unref(pad);
    return id;
}

/// The element inside `sink` (itself, or the first element of a bin flagged as a sink) that has a "sink" pad.
static GstElement *find_sink_element(GstElement *sink) {
    if (!GST_IS_BIN(sink)) return gst_object_ref(sink);
    GstElement *found = NULL;
    GstIterator *it = gst_bin_iterate_sinks(GST_BIN(sink));
    GValue item = G_VALUE_INIT;
    if (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        found = find_sink_element(g_value_get_object(&item));
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return found;
}

int tdm_gst_send_key_press(GstElement *sink, const char *key) {
    GstElement *element = sink ? find_sink_element(sink) : NULL;
    if (!element) return 0;
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    gst_object_unref(element);
    if (!pad) return 0;
    // As a video window does: the key press travels upstream from the sink's input.
    gst_pad_push_event(pad, gst_navigation_event_new_key_press(key, GST_NAVIGATION_MODIFIER_NONE));
    gst_object_unref(pad);
    return 1;
}

int tdm_gst_last_frame_rgbx(GstElement *sink, uint8_t *out, size_t capacity, int *width, int *height,
                            int64_t *pts) {
    GstElement *element = sink ? find_sink_element(sink) : NULL;
    if (!element) return 0;
    int copied = 0;
    if (GST_IS_BASE_SINK(element)) {
        GstSample *sample = gst_base_sink_get_last_sample(GST_BASE_SINK(element));
        if (sample) {
            GstCaps *caps = gst_sample_get_caps(sample);
            GstStructure *s = caps ? gst_caps_get_structure(caps, 0) : NULL;
            GstBuffer *buffer = gst_sample_get_buffer(sample);
            GstMapInfo map;
            if (s && buffer && gst_structure_get_int(s, "width", width) && gst_structure_get_int(s, "height", height)
                && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
                size_t needed = (size_t)(*width) * (size_t)(*height) * 4;
                if (map.size >= needed && needed <= capacity) {
                    memcpy(out, map.data, needed);
                    *pts = GST_BUFFER_PTS_IS_VALID(buffer) ? (int64_t)GST_BUFFER_PTS(buffer) : -1;
                    copied = 1;
                }
                gst_buffer_unmap(buffer, &map);
            }
            gst_sample_unref(sample);
        }
    }
    gst_object_unref(element);
    return copied;
}

// Subtitles from a file, drawn by a textoverlay in the video filter: a buffer probe on its video input picks the
// cue each frame's timestamp falls in and sets the overlay's text before the frame is drawn, so a cue appears on
// exactly the frames it covers, whatever seeks came before.
typedef struct {
    size_t count;
    int64_t *starts;
    int64_t *ends;
    char **texts;
    GstElement *overlay;     // not owned: the probe lives on the overlay's own pad
    ssize_t shown;           // the cue shown now, -1 none
} cue_table;

static ssize_t cue_at(const cue_table *table, int64_t t) {
    // Cues are sorted by start; the last one starting at or before t, if it has not ended (overlaps: the later).
    size_t lo = 0, hi = table->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table->starts[mid] <= t) lo = mid + 1; else hi = mid;
    }
    for (ssize_t i = (ssize_t)lo - 1; i >= 0 && i >= (ssize_t)lo - 8; i--) {
        if (t < table->ends[i]) return i;
    }
    return -1;
}

static GstPadProbeReturn on_video_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    cue_table *table = data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    if (!buffer || !GST_BUFFER_PTS_IS_VALID(buffer)) return GST_PAD_PROBE_OK;
    ssize_t cue = cue_at(table, (int64_t)GST_BUFFER_PTS(buffer));
    if (cue != table->shown) {
        table->shown = cue;
        g_object_set(table->overlay, "text", cue >= 0 ? table->texts[cue] : "", NULL);
    }
    return GST_PAD_PROBE_OK;
}

static void free_cues(gpointer data) {
    cue_table *table = data;
    for (size_t i = 0; i < table->count; i++) g_free(table->texts[i]);
    g_free(table->texts);
    g_free(table->starts);
    g_free(table->ends);
    g_free(table);
}

unsigned long tdm_gst_subtitle_cues_attach(GstElement *overlay, const int64_t *starts, const int64_t *ends,
                                           const char *const *texts, size_t count) {
    GstPad *pad = overlay ? gst_element_get_static_pad(overlay, "video_sink") : NULL;
    if (!pad) return 0;
    cue_table *table = g_new0(cue_table, 1);
    table->count = count;
    table->starts = g_new(int64_t, count ? count : 1);
    table->ends = g_new(int64_t, count ? count : 1);
    table->texts = g_new0(char *, count ? count : 1);
    for (size_t i = 0; i < count; i++) {
        table->starts[i] = starts[i];
        table->ends[i] = ends[i];
        table->texts[i] = g_strdup(texts[i]);
    }
    table->overlay = overlay;
    table->shown = -1;
    g_object_set(overlay, "text", "", NULL);
    gulong id = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_video_buffer, table, free_cues);
    gst_object_unref(pad);
    return id;
}

void tdm_gst_pad_probe_remove(GstElement *element, const char *pad_name, unsigned long id) {
    GstPad *pad = element ? gst_element_get_static_pad(element, pad_name) : NULL;
    if (!pad) return;
    if (id) gst_pad_remove_probe(pad, id);
    gst_object_unref(pad);
}

GstElement *tdm_gst_overlay_filter_new(const char *subtitle_font) {
    GstElement *subs = gst_element_factory_make("textoverlay", "subs");
    GstElement *osd = gst_element_factory_make("textoverlay", "osd");
    if (!subs || !osd) {
        if (subs) gst_object_unref(gst_object_ref_sink(subs));
        if (osd) gst_object_unref(gst_object_ref_sink(osd));
        return NULL;
    }
    gst_util_set_object_arg(G_OBJECT(subs), "valignment", "bottom");
    gst_util_set_object_arg(G_OBJECT(subs), "halignment", "center");
    g_object_set(subs, "wait-text", FALSE, "font-desc", subtitle_font, NULL);
    gst_util_set_object_arg(G_OBJECT(osd), "valignment", "top");
    gst_util_set_object_arg(G_OBJECT(osd), "halignment", "left");
    g_object_set(osd, "wait-text", FALSE, "shaded-background", TRUE, "font-desc", "Sans 20", NULL);
    GstElement *bin = gst_bin_new("overlays");
    gst_bin_add_many(GST_BIN(bin), subs, osd, NULL);
    GstPad *in = gst_element_get_static_pad(subs, "video_sink");
    GstPad *out = gst_element_get_static_pad(osd, "src");
    gboolean ok = gst_element_link_pads(subs, "src", osd, "video_sink")
        && gst_element_add_pad(bin, gst_ghost_pad_new("sink", in))
        && gst_element_add_pad(bin, gst_ghost_pad_new("src", out));
    gst_object_unref(in);
    gst_object_unref(out);
    gst_object_ref_sink(bin);
    if (!ok) {
        gst_object_unref(bin);
        return NULL;
    }
    return bin;
}

char *tdm_gst_track_language(GstElement *playbin, int text, int index) {
    GstTagList *tags = NULL;
    g_signal_emit_by_name(playbin, text ? "get-text-tags" : "get-audio-tags", index, &tags);
    if (!tags) return NULL;
    gchar *code = NULL;
    if (!gst_tag_list_get_string(tags, GST_TAG_LANGUAGE_CODE, &code)) code = NULL;
    gst_tag_list_unref(tags);
    return code;
}

char *tdm_gst_language_normalized(const char *code) {
    if (!code) return NULL;
    const gchar *iso = gst_tag_get_language_code_iso_639_2T(code);
    return g_ascii_strdown(iso ? iso : code, -1);
}

// --- The item's own subtitles: shown or hidden by the overlay's "silent", never by playbin's flags ---

typedef struct {
    gint visible;   // atomic
} subtitle_watch;

static gboolean is_subtitle_overlay(GstElement *element) {
    GstElementFactory *factory = gst_element_get_factory(element);
    return factory && strcmp(GST_OBJECT_NAME(factory), "subtitleoverlay") == 0;
}

static void apply_visibility(GstElement *overlay, subtitle_watch *watch) {
    g_object_set(overlay, "silent", g_atomic_int_get(&watch->visible) ? FALSE : TRUE, NULL);
}

// subtitleoverlay can lose a race while it sets itself up (the subtitle caps arriving while the video pad builds the
// renderer): the first subtitle buffer then fails, and the overlay passes the video through without its renderer
// for the rest of the stream, whatever "silent" says (about one load in a hundred on a loaded machine). The flush
// playsink sends when the text stream changes clears that: the overlay builds its renderer again when data next
// flows (a preroll, or the next frame when playing). Sent only when subtitles are shown and the overlay is in that
// passthrough, so a working overlay keeps the cue it holds.
static void recover_passthrough(GstElement *overlay) {
    GstElement *identity = gst_bin_get_by_name(GST_BIN(overlay), "passthrough-identity");
    if (!identity) return;
    gst_object_unref(identity);
    GstPad *pad = gst_element_get_static_pad(overlay, "subtitle_sink");
    if (!pad) return;
    if (gst_pad_is_linked(pad)) {
        gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM_OOB,
                                                     gst_structure_new_empty("playsink-custom-subtitle-flush")));
    }
    gst_object_unref(pad);
}

// playsink sets a new overlay's "silent" to FALSE right after adding it: the watch's choice is applied when the
// first frame reaches the overlay, before it draws anything.
static GstPadProbeReturn on_first_overlay_frame(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)info;
    GstElement *overlay = gst_pad_get_parent_element(pad);
    if (overlay) {
        apply_visibility(overlay, data);
        gst_object_unref(overlay);
    }
    return GST_PAD_PROBE_REMOVE;
}

static void on_subtitle_element_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer data) {
    (void)bin; (void)sub_bin;
    if (!is_subtitle_overlay(element)) return;
    GstPad *pad = gst_element_get_static_pad(element, "video_sink");
    if (!pad) return;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_first_overlay_frame, g_atomic_rc_box_acquire(data),
                      (GDestroyNotify)g_atomic_rc_box_release);
    gst_object_unref(pad);
}

void *tdm_gst_subtitles_watch(GstElement *playbin, int visible) {
    subtitle_watch *watch = g_atomic_rc_box_new0(subtitle_watch);
    g_atomic_int_set(&watch->visible, visible ? 1 : 0);
    g_signal_connect_data(playbin, "deep-element-added", G_CALLBACK(on_subtitle_element_added), watch,
                          (GClosureNotify)(void (*)(void))g_atomic_rc_box_release, 0);
    return watch;
}

void tdm_gst_subtitles_set_visible(void *handle, GstElement *playbin, int visible) {
    subtitle_watch *watch = handle;
    g_atomic_int_set(&watch->visible, visible ? 1 : 0);
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(playbin));
    GValue item = G_VALUE_INIT;
    for (gboolean done = FALSE; !done;) {
        switch (gst_iterator_next(it, &item)) {
        case GST_ITERATOR_OK:
            if (is_subtitle_overlay(g_value_get_object(&item))) {
                apply_visibility(g_value_get_object(&item), watch);
                if (visible) recover_passthrough(g_value_get_object(&item));
            }
            g_value_reset(&item);
            break;
        case GST_ITERATOR_RESYNC:   // the bin changed: start over (applying twice does no harm)
            gst_iterator_resync(it);
            break;
        default:
            done = TRUE;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(it);
}
