// The render probe: records, on GStreamer's streaming threads and without touching Swift, which buffer each sink
// released and when (a fakesink "handoff" signal after the clock wait, or a pad probe estimate before it), into a
// bounded ring that Swift drains.
#include "shim_internal.h"

#include <gst/base/gstbasesink.h>

struct tdm_gst_render_probe {
    gint refcount;
    GMutex lock;
    uint32_t capacity;
    uint64_t head;    // next write index (monotonically increasing)
    uint64_t tail;    // next read index
    uint64_t dropped;
    int has_latest[2];
    tdm_gst_render_record latest[2];
    tdm_gst_render_record *ring;
};

typedef struct {
    tdm_gst_render_probe *probe;
    int kind;
} probe_attachment;

tdm_gst_render_probe *tdm_gst_render_probe_new(uint32_t capacity) {
    tdm_gst_render_probe *probe = g_new0(tdm_gst_render_probe, 1);
    probe->refcount = 1;
    g_mutex_init(&probe->lock);
    probe->capacity = capacity ? capacity : 1;
    probe->ring = g_new0(tdm_gst_render_record, probe->capacity);
    return probe;
}

static tdm_gst_render_probe *render_probe_ref(tdm_gst_render_probe *probe) {
    g_atomic_int_inc(&probe->refcount);
    return probe;
}

void tdm_gst_render_probe_unref(tdm_gst_render_probe *probe) {
    if (!probe || !g_atomic_int_dec_and_test(&probe->refcount)) return;
    g_mutex_clear(&probe->lock);
    g_free(probe->ring);
    g_free(probe);
}

static void attachment_free(gpointer data, GClosure *closure) {
    (void)closure;
    probe_attachment *attachment = data;
    tdm_gst_render_probe_unref(attachment->probe);
    g_free(attachment);
}

static void attachment_free_notify(gpointer data) { attachment_free(data, NULL); }

static void render_probe_push(tdm_gst_render_probe *probe, tdm_gst_render_record record) {
    g_mutex_lock(&probe->lock);
    probe->ring[probe->head % probe->capacity] = record;
    probe->head++;
    if (probe->head - probe->tail > probe->capacity) {
        probe->tail = probe->head - probe->capacity;
        probe->dropped++;
    }
    probe->latest[record.kind] = record;
    probe->has_latest[record.kind] = 1;
    g_mutex_unlock(&probe->lock);
}

/// Stream time of the buffer's PTS in the sink's current segment, -1 when unknown.
static int64_t item_time_of(GstBaseSink *sink, GstBuffer *buffer) {
    GstClockTime pts = GST_BUFFER_PTS(buffer);
    if (!GST_CLOCK_TIME_IS_VALID(pts)) return -1;
    GST_OBJECT_LOCK(sink);
    guint64 stream_time = gst_segment_to_stream_time(&sink->segment, GST_FORMAT_TIME, pts);
    GST_OBJECT_UNLOCK(sink);
    return GST_CLOCK_TIME_IS_VALID(stream_time) ? (int64_t)stream_time : -1;
}

// fakesink emits "handoff" from render(), after basesink has waited on the clock: the exact release time.
static void on_handoff(GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer data) {
    (void)pad;
    int64_t now = tdm_shim_monotonic_now();
    probe_attachment *attachment = data;
    int64_t item_time = item_time_of(GST_BASE_SINK(sink), buffer);
    if (item_time < 0) return;
    tdm_gst_render_record record = { item_time, now, attachment->kind, 1 };
    render_probe_push(attachment->probe, record);
}

// Other sinks: a buffer probe on the sink pad runs before the clock wait, so record when the sink is
// scheduled to release the buffer (running time + base time + latency, mapped back through the clock's
// calibration to CLOCK_MONOTONIC). This is an estimate: it ignores the device's own output delay.
static GstPadProbeReturn on_sink_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    probe_attachment *attachment = data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstElement *parent = gst_pad_get_parent_element(pad);
    if (!parent || !buffer) { if (parent) gst_object_unref(parent); return GST_PAD_PROBE_OK; }
    GstBaseSink *sink = GST_BASE_SINK(parent);
    GstClockTime pts = GST_BUFFER_PTS(buffer);
    int64_t item_time = item_time_of(sink, buffer);
    GstClock *clock = gst_element_get_clock(parent);
    if (item_time >= 0 && clock && GST_CLOCK_TIME_IS_VALID(pts)) {
        GST_OBJECT_LOCK(sink);
        guint64 running = gst_segment_to_running_time(&sink->segment, GST_FORMAT_TIME, pts);
        GST_OBJECT_UNLOCK(sink);
        if (GST_CLOCK_TIME_IS_VALID(running)) {
            GstClockTime when = gst_element_get_base_time(parent) + running + gst_base_sink_get_latency(sink)
                                + gst_base_sink_get_render_delay(sink);
            int64_t monotonic = (int64_t)tdm_shim_clock_unadjust(clock, when);
            tdm_gst_render_record record = { item_time, monotonic, attachment->kind, 0 };
            render_probe_push(attachment->probe, record);
        }
    }
    if (clock) gst_object_unref(clock);
    gst_object_unref(parent);
    return GST_PAD_PROBE_OK;
}

static int attach_one(tdm_gst_render_probe *probe, GstElement *element, int kind) {
    if (!GST_IS_BASE_SINK(element)) return 0;
    probe_attachment *attachment = g_new0(probe_attachment, 1);
    attachment->probe = render_probe_ref(probe);
    attachment->kind = kind;
    if (g_signal_lookup("handoff", G_OBJECT_TYPE(element)) && tdm_shim_find_property(element, "signal-handoffs")) {
        g_object_set(element, "signal-handoffs", TRUE, NULL);
        g_signal_connect_data(element, "handoff", G_CALLBACK(on_handoff), attachment, attachment_free, 0);
        return 1;
    }
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    if (!pad) { attachment_free(attachment, NULL); return 0; }
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_sink_buffer, attachment, attachment_free_notify);
    gst_object_unref(pad);
    return 1;
}

int tdm_gst_render_probe_attach(tdm_gst_render_probe *probe, GstElement *sink, int kind) {
    if (kind != TDM_GST_KIND_AUDIO) kind = TDM_GST_KIND_VIDEO;
    if (!GST_IS_BIN(sink)) return attach_one(probe, sink, kind);
    int attached = 0;
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(sink));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        attached += attach_one(probe, g_value_get_object(&item), kind);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return attached;
}

size_t tdm_gst_render_probe_drain(tdm_gst_render_probe *probe, tdm_gst_render_record *out, size_t max) {
    size_t n = 0;
    g_mutex_lock(&probe->lock);
    while (n < max && probe->tail < probe->head) {
        out[n++] = probe->ring[probe->tail % probe->capacity];
        probe->tail++;
    }
    g_mutex_unlock(&probe->lock);
    return n;
}

int tdm_gst_render_probe_latest(tdm_gst_render_probe *probe, int kind, tdm_gst_render_record *out) {
    if (kind != TDM_GST_KIND_AUDIO) kind = TDM_GST_KIND_VIDEO;
    g_mutex_lock(&probe->lock);
    int has = probe->has_latest[kind];
    if (has) *out = probe->latest[kind];
    g_mutex_unlock(&probe->lock);
    return has;
}

uint64_t tdm_gst_render_probe_dropped(tdm_gst_render_probe *probe) {
    g_mutex_lock(&probe->lock);
    uint64_t dropped = probe->dropped;
    g_mutex_unlock(&probe->lock);
    return dropped;
}

