// Sinks: whether a sink (or any base sink inside a bin) prerolled a buffer, and audio sink tuning that follows
// the children autoaudiosink creates late (a "deep-element-added" signal handler). Walking a bin needs GValue
// iteration and the GST_IS_* type-check macros.
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
