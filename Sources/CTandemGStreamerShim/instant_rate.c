// Instant rate changes (GST_SEEK_FLAG_INSTANT_RATE_CHANGE, GStreamer 1.18): the seek, and the check that the sinks
// really applied it. A seek's return value does not say so: a pipeline whose demuxer ignores the flag (oggdemux,
// for one) still returns TRUE and plays on at the old rate. What proves the change is the
// GST_EVENT_INSTANT_RATE_SYNC_TIME event the pipeline sends its sinks once one of them asked for the change; each
// base sink forwards it upstream through its sink pad, where a probe sees it.
#include "shim_internal.h"

#include <gst/base/gstbasesink.h>
#include <string.h>

typedef struct {
    gint refcount;
    GMutex lock;
    GCond seen;
    guint32 seqnum;
    int count;
    double multiplier;
    uint64_t running_time;
    uint64_t upstream_running_time;
} sync_watch;

static sync_watch *sync_watch_ref(sync_watch *watch) {
    g_atomic_int_inc(&watch->refcount);
    return watch;
}

static void sync_watch_unref(gpointer data) {
    sync_watch *watch = data;
    if (!g_atomic_int_dec_and_test(&watch->refcount)) return;
    g_mutex_clear(&watch->lock);
    g_cond_clear(&watch->seen);
    g_free(watch);
}

static GstPadProbeReturn on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    sync_watch *watch = data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    if (!event || GST_EVENT_TYPE(event) != GST_EVENT_INSTANT_RATE_SYNC_TIME) return GST_PAD_PROBE_OK;
    gdouble multiplier = 0;
    GstClockTime running_time = GST_CLOCK_TIME_NONE, upstream = GST_CLOCK_TIME_NONE;
    gst_event_parse_instant_rate_sync_time(event, &multiplier, &running_time, &upstream);
    g_mutex_lock(&watch->lock);
    if (gst_event_get_seqnum(event) == watch->seqnum) {
        watch->count++;
        watch->multiplier = multiplier;
        watch->running_time = running_time;
        watch->upstream_running_time = upstream;
        g_cond_broadcast(&watch->seen);
    }
    g_mutex_unlock(&watch->lock);
    return GST_PAD_PROBE_OK;
}

// Calls `visit` on every element inside `bin`, however deep (playbin's playsink, a sink description's bin). A bin
// that changes while it is walked (GST_ITERATOR_RESYNC) makes the walk start over after `restart` has undone what
// the visits counted, or, without `restart`, ends it there.
static void each_element(GstElement *bin, void (*visit)(GstElement *, gpointer), void (*restart)(gpointer),
                         gpointer data) {
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(bin));
    GValue item = G_VALUE_INIT;
    gboolean done = FALSE;
    while (!done) {
        switch (gst_iterator_next(it, &item)) {
        case GST_ITERATOR_OK:
            visit(g_value_get_object(&item), data);
            g_value_reset(&item);
            break;
        case GST_ITERATOR_RESYNC:
            if (!restart) { done = TRUE; break; }
            restart(data);
            gst_iterator_resync(it);
            break;
        default:
            done = TRUE;
            break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(it);
}

typedef struct {
    GstPad *pad;
    gulong id;
} attached_probe;

typedef struct {
    sync_watch *watch;
    GArray *probes;
} probe_walk;

static void attach_sync_probe(GstElement *element, gpointer data) {
    probe_walk *walk = data;
    if (!GST_IS_BASE_SINK(element)) return;
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    if (!pad) return;
    attached_probe probe = { pad, gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event,
                                                    sync_watch_ref(walk->watch), sync_watch_unref) };
    g_array_append_val(walk->probes, probe);
}

static void detach_sync_probes(GArray *probes) {
    for (guint i = 0; i < probes->len; i++) {
        attached_probe *probe = &g_array_index(probes, attached_probe, i);
        gst_pad_remove_probe(probe->pad, probe->id);
        gst_object_unref(probe->pad);
    }
    g_array_set_size(probes, 0);
}

static void restart_probe_walk(gpointer data) { detach_sync_probes(((probe_walk *)data)->probes); }

int tdm_gst_instant_rate_change(GstElement *pipeline, double rate, int64_t wait_ns, tdm_gst_instant_rate_result *out) {
    memset(out, 0, sizeof *out);
    if (!GST_IS_BIN(pipeline)) return -1;
    GstEvent *seek = gst_event_new_seek(rate, GST_FORMAT_TIME, GST_SEEK_FLAG_INSTANT_RATE_CHANGE,
                                        GST_SEEK_TYPE_NONE, -1, GST_SEEK_TYPE_NONE, -1);
    if (!seek) return -1;
    sync_watch *watch = g_new0(sync_watch, 1);
    watch->refcount = 1;
    g_mutex_init(&watch->lock);
    g_cond_init(&watch->seen);
    watch->seqnum = gst_event_get_seqnum(seek);

    // Every base sink.
    GArray *probes = g_array_new(FALSE, FALSE, sizeof(attached_probe));
    probe_walk walk = { watch, probes };
    each_element(pipeline, attach_sync_probe, restart_probe_walk, &walk);

    out->sent_at = tdm_shim_monotonic_now();
    gboolean accepted = gst_element_send_event(pipeline, seek);   // takes the event
    int result = -1;
    if (accepted) {
        // Usually synchronous (the demuxer's event, the sinks' request, the pipeline's answer all run in this
        // thread), but a queue may pass the event on from its own thread: wait a little for it.
        gint64 deadline = g_get_monotonic_time() + wait_ns / 1000;
        g_mutex_lock(&watch->lock);
        while (watch->count == 0 && g_cond_wait_until(&watch->seen, &watch->lock, deadline)) {}
        out->sinks = watch->count;
        out->multiplier = watch->multiplier;
        out->running_time = watch->running_time;
        out->upstream_running_time = watch->upstream_running_time;
        g_mutex_unlock(&watch->lock);
        result = out->sinks > 0 ? 1 : 0;
    }
    detach_sync_probes(probes);
    g_array_free(probes, TRUE);
    sync_watch_unref(watch);
    return result;
}

// Demuxers and sources whose seek handler turns GST_SEEK_FLAG_INSTANT_RATE_CHANGE into an instant-rate-change
// event (GStreamer 1.18 to 1.22). Elsewhere the flag is not understood: oggdemux, for one, takes the seek for a
// non-flushing seek to the current segment, which in PAUSED waits on the prerolled sinks for ever.
static const char *const instant_rate_elements[] = {
    "matroskademux", "qtdemux", "dashdemux", "hlsdemux", "mssdemux", "dashdemux2", "hlsdemux2", "mssdemux2",
    "appsrc", NULL
};

static void find_instant_rate_element(GstElement *element, gpointer data) {
    GstElementFactory *factory = gst_element_get_factory(element);
    const char *name = factory ? gst_plugin_feature_get_name(GST_PLUGIN_FEATURE(factory)) : NULL;
    for (int i = 0; name && instant_rate_elements[i]; i++) {
        if (strcmp(name, instant_rate_elements[i]) == 0) *(int *)data = 1;
    }
}

static void forget_found(gpointer data) { *(int *)data = 0; }

int tdm_gst_supports_instant_rate(GstElement *pipeline) {
    if (!GST_IS_BIN(pipeline)) return 0;
    int found = 0;
    each_element(pipeline, find_instant_rate_element, forget_found, &found);
    return found;
}

// A playing pipeline's elements read their base time at every clock wait, so moving it moves every render from the
// next buffer on. The pipeline itself only hands its base time out on the way to PLAYING, which sets a new one.
typedef struct {
    int64_t delta;
    int sinks;
} base_time_shift;

static void shift_element_base_time(GstElement *element, gpointer data) {
    base_time_shift *shift = data;
    GstClockTime own = gst_element_get_base_time(element);
    if ((int64_t)own + shift->delta < 0) return;
    gst_element_set_base_time(element, (GstClockTime)((int64_t)own + shift->delta));
    if (GST_IS_BASE_SINK(element)) shift->sinks++;
}

int tdm_gst_shift_base_time(GstElement *pipeline, int64_t delta_ns) {
    if (!GST_IS_BIN(pipeline) || delta_ns == 0) return 0;
    GstClockTime base = gst_element_get_base_time(pipeline);
    if ((int64_t)base + delta_ns < 0) return 0;
    gst_element_set_base_time(pipeline, (GstClockTime)((int64_t)base + delta_ns));
    // A bin changing under a playing pipeline is rare: the walk stops there (elements already moved would move
    // twice), and the sinks seen so far keep the shift.
    base_time_shift shift = { delta_ns, 0 };
    each_element(pipeline, shift_element_base_time, NULL, &shift);
    return shift.sinks;
}
