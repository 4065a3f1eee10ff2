// Sinks: whether a sink (or any base sink inside a bin) prerolled a buffer, sinks made to wait on the clock,
// and audio sink tuning that follows the children autoaudiosink creates late (a "deep-element-added" signal
// handler). Walking a bin needs GValue iteration and the GST_IS_* type-check macros.
#include "shim_internal.h"

#include <gst/audio/audio.h>
#include <gst/base/gstbasesink.h>

int tdm_gst_sinks_prerolled(GstElement *sink) {
    if (GST_IS_BASE_SINK(sink)) {
        // A sink that keeps no last sample cannot tell; assume it prerolled.
        if (!gst_base_sink_is_last_sample_enabled(GST_BASE_SINK(sink))) return 1;
        GstSample *sample = gst_base_sink_get_last_sample(GST_BASE_SINK(sink));
        if (sample) { gst_sample_unref(sample); return 1; }
        return 0;
    }
    if (!GST_IS_BIN(sink)) return 0;
    int found = 0;
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(sink));
    GValue item = G_VALUE_INIT;
    while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *element = g_value_get_object(&item);
        if (GST_IS_BASE_SINK(element)) found = tdm_gst_sinks_prerolled(element);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return found;
}

typedef struct {
    gint64 drift_tolerance_us;
    guint64 alignment_threshold_ns;
} audio_tuning;

static void tune_audio_sink(GstElement *element, audio_tuning *tuning) {
    if (!GST_IS_AUDIO_BASE_SINK(element)) return;
    g_object_set(element, "drift-tolerance", tuning->drift_tolerance_us,
                 "alignment-threshold", tuning->alignment_threshold_ns, NULL);
}

static void on_deep_element_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer data) {
    (void)bin; (void)sub_bin;
    tune_audio_sink(element, data);
}

void tdm_gst_tune_audio_sinks(GstElement *bin, int64_t drift_tolerance_us, uint64_t alignment_threshold_ns) {
    audio_tuning *tuning = g_new0(audio_tuning, 1);
    tuning->drift_tolerance_us = drift_tolerance_us;
    tuning->alignment_threshold_ns = alignment_threshold_ns;
    tune_audio_sink(bin, tuning);
    if (!GST_IS_BIN(bin)) { g_free(tuning); return; }
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(bin));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        tune_audio_sink(g_value_get_object(&item), tuning);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    g_signal_connect_data(bin, "deep-element-added", G_CALLBACK(on_deep_element_added), tuning,
                          (GClosureNotify)(void (*)(void))g_free, 0);
}

/// Whether `element` renders against the clock when its boolean "sync" property says so: a base sink, or a sink
/// bin that passes "sync" on to the sink it makes (autovideosink, glimagesink).
static int syncs_by_property(GstElement *element) {
    GParamSpec *spec = tdm_shim_find_property(element, "sync");
    if (!spec || spec->value_type != G_TYPE_BOOLEAN || !(spec->flags & G_PARAM_WRITABLE)) return 0;
    return GST_IS_BASE_SINK(element) || (GST_IS_BIN(element) && GST_OBJECT_FLAG_IS_SET(element, GST_ELEMENT_FLAG_SINK));
}

/// Sets sync=TRUE on `element` when it is a clock-synchronised sink told not to sync; appends its factory name
/// to `changed` and returns 1 then.
static int force_sync_one(GstElement *element, GString *changed) {
    if (!syncs_by_property(element)) return 0;
    gboolean sync = TRUE;
    g_object_get(element, "sync", &sync, NULL);
    if (sync) return 0;
    g_object_set(element, "sync", TRUE, NULL);
    GstElementFactory *factory = gst_element_get_factory(element);
    const char *name = factory ? GST_OBJECT_NAME(factory) : GST_OBJECT_NAME(element);
    if (changed->len) g_string_append(changed, "\n");
    g_string_append(changed, name);
    return 1;
}

int tdm_gst_sinks_force_sync(GstElement *sink, char **changed) {
    GString *names = g_string_new(NULL);
    int count = force_sync_one(sink, names);
    if (GST_IS_BIN(sink)) {
        GstIterator *it = gst_bin_iterate_recurse(GST_BIN(sink));
        GValue item = G_VALUE_INIT;
        while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
            count += force_sync_one(g_value_get_object(&item), names);
            g_value_reset(&item);
        }
        g_value_unset(&item);
        gst_iterator_free(it);
    }
    // g_string_free returns the characters when told to keep them, NULL otherwise.
    *changed = g_string_free(names, count == 0);
    return count;
}
