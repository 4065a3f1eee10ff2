#include "tandem_gst_shim.h"

#include <gst/audio/audio.h>
#include <gst/base/gstbasesink.h>
#include <gst/pbutils/pbutils.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// MARK: - Process and memory

int tdm_gst_init(void) {
    static gsize once = 0;
    static int ok = 0;
    if (g_once_init_enter(&once)) {
        GError *error = NULL;
        ok = gst_init_check(NULL, NULL, &error) ? 1 : 0;
        if (ok) gst_pb_utils_init();
        if (error) g_error_free(error);
        g_once_init_leave(&once, 1);
    }
    return ok;
}

void tdm_gst_free(void *pointer) { g_free(pointer); }

void tdm_gst_unref(void *object) {
    if (object) gst_object_unref(object);
}

int64_t tdm_gst_monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// MARK: - Elements and properties

GstElement *tdm_gst_element_make(const char *factory, const char *name) {
    GstElement *element = gst_element_factory_make(factory, name);
    if (element) gst_object_ref_sink(element);
    return element;
}

GstElement *tdm_gst_bin_from_description(const char *description, char **error_message, int *missing_element) {
    GError *error = NULL;
    *error_message = NULL;
    *missing_element = 0;
    GstParseContext *context = gst_parse_context_new();
    GstElement *element = gst_parse_launch_full(description, context, GST_PARSE_FLAG_NONE, &error);
    if (element && !error) {
        // A lone element is used directly; a chain is wrapped into a bin with a ghost sink pad.
        if (!GST_IS_PIPELINE(element)) {
            gst_parse_context_free(context);
            return gst_object_ref_sink(element);
        }
        gst_object_unref(element);
        element = NULL;
    }
    if (element) gst_object_unref(element);
    if (error) {
        if (g_error_matches(error, GST_PARSE_ERROR, GST_PARSE_ERROR_NO_SUCH_ELEMENT)) {
            *missing_element = 1;
            gchar **missing = gst_parse_context_get_missing_elements(context);
            if (missing && missing[0]) {
                *error_message = g_strdup(missing[0]);
            }
            g_strfreev(missing);
        }
        if (!*error_message) *error_message = g_strdup(error->message);
        g_error_free(error);
        gst_parse_context_free(context);
        return NULL;
    }
    gst_parse_context_free(context);
    element = gst_parse_bin_from_description(description, TRUE, &error);
    if (!element || error) {
        *error_message = g_strdup(error ? error->message : "could not build the bin");
        if (error) g_error_free(error);
        if (element) gst_object_unref(element);
        return NULL;
    }
    return gst_object_ref_sink(element);
}

static GParamSpec *find_property(void *object, const char *property) {
    if (!object) return NULL;
    return g_object_class_find_property(G_OBJECT_GET_CLASS(object), property);
}

int tdm_gst_has_property(void *object, const char *property) { return find_property(object, property) != NULL; }

void tdm_gst_set_string(void *object, const char *property, const char *value) {
    if (find_property(object, property)) g_object_set(object, property, value, NULL);
}
void tdm_gst_set_bool(void *object, const char *property, int value) {
    if (find_property(object, property)) g_object_set(object, property, (gboolean)(value != 0), NULL);
}
void tdm_gst_set_int(void *object, const char *property, int value) {
    if (find_property(object, property)) g_object_set(object, property, (gint)value, NULL);
}
void tdm_gst_set_uint(void *object, const char *property, unsigned value) {
    if (find_property(object, property)) g_object_set(object, property, (guint)value, NULL);
}
void tdm_gst_set_int64(void *object, const char *property, int64_t value) {
    if (find_property(object, property)) g_object_set(object, property, (gint64)value, NULL);
}
void tdm_gst_set_uint64(void *object, const char *property, uint64_t value) {
    if (find_property(object, property)) g_object_set(object, property, (guint64)value, NULL);
}
void tdm_gst_set_double(void *object, const char *property, double value) {
    if (find_property(object, property)) g_object_set(object, property, (gdouble)value, NULL);
}
void tdm_gst_set_object(void *object, const char *property, void *value) {
    if (find_property(object, property)) g_object_set(object, property, value, NULL);
}
int tdm_gst_get_int(void *object, const char *property) {
    gint value = 0;
    if (find_property(object, property)) g_object_get(object, property, &value, NULL);
    return value;
}
char *tdm_gst_get_string(void *object, const char *property) {
    gchar *value = NULL;
    if (find_property(object, property)) g_object_get(object, property, &value, NULL);
    return value;
}

// MARK: - Pipeline control

GstElement *tdm_gst_playbin_new(const char *name) {
    GstElement *playbin = tdm_gst_element_make("playbin", name);
    if (!playbin) return NULL;
    // video | audio | soft volume; no subtitles or visualisations.
    g_object_set(playbin, "flags", (1 << 0) | (1 << 1) | (1 << 4), NULL);
    return playbin;
}

void tdm_gst_pipeline_use_clock(GstElement *pipeline, GstClock *clock) {
    gst_pipeline_use_clock(GST_PIPELINE(pipeline), clock);
}

void tdm_gst_pipeline_set_latency(GstElement *pipeline, uint64_t latency) {
    gst_pipeline_set_latency(GST_PIPELINE(pipeline), latency);
}

uint64_t tdm_gst_query_latency(GstElement *pipeline) {
    GstQuery *query = gst_query_new_latency();
    uint64_t result = 0;
    if (gst_element_query(pipeline, query)) {
        gboolean live = FALSE;
        GstClockTime min = 0, max = 0;
        gst_query_parse_latency(query, &live, &min, &max);
        if (GST_CLOCK_TIME_IS_VALID(min)) result = min;
    }
    gst_query_unref(query);
    return result;
}

int tdm_gst_set_state(GstElement *element, int state) {
    return (int)gst_element_set_state(element, (GstState)state);
}

int tdm_gst_seek(GstElement *pipeline, double rate, int64_t position) {
    GstSeekFlags flags = GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE;
    return gst_element_seek(pipeline, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, position,
                            GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE) ? 1 : 0;
}

int64_t tdm_gst_query_position(GstElement *pipeline) {
    gint64 position = -1;
    if (!gst_element_query_position(pipeline, GST_FORMAT_TIME, &position)) return -1;
    return position;
}

int64_t tdm_gst_query_duration(GstElement *pipeline) {
    gint64 duration = -1;
    if (!gst_element_query_duration(pipeline, GST_FORMAT_TIME, &duration)) return -1;
    return duration;
}

int tdm_gst_query_seekable(GstElement *pipeline) {
    GstQuery *query = gst_query_new_seeking(GST_FORMAT_TIME);
    gboolean seekable = FALSE;
    if (gst_element_query(pipeline, query)) {
        gst_query_parse_seeking(query, NULL, &seekable, NULL, NULL);
    }
    gst_query_unref(query);
    return seekable ? 1 : 0;
}

// MARK: - Bus messages and the error trap

static int domain_of(GQuark domain) {
    if (domain == GST_CORE_ERROR) return TDM_GST_DOMAIN_CORE;
    if (domain == GST_LIBRARY_ERROR) return TDM_GST_DOMAIN_LIBRARY;
    if (domain == GST_RESOURCE_ERROR) return TDM_GST_DOMAIN_RESOURCE;
    if (domain == GST_STREAM_ERROR) return TDM_GST_DOMAIN_STREAM;
    return TDM_GST_DOMAIN_OTHER;
}

void tdm_gst_message_info_clear(tdm_gst_message_info *info) {
    g_free(info->text);
    g_free(info->debug);
    g_free(info->source);
    g_free(info->missing_detail);
    g_free(info->title);
    memset(info, 0, sizeof *info);
}

void tdm_gst_message_parse(GstMessage *message, GstElement *pipeline, tdm_gst_message_info *out) {
    memset(out, 0, sizeof *out);
    out->from_pipeline = GST_MESSAGE_SRC(message) == GST_OBJECT(pipeline);
    out->source = GST_MESSAGE_SRC(message) ? gst_object_get_name(GST_MESSAGE_SRC(message)) : NULL;
    GError *error = NULL;
    switch (GST_MESSAGE_TYPE(message)) {
    case GST_MESSAGE_EOS:
        out->kind = TDM_GST_MSG_EOS;
        break;
    case GST_MESSAGE_ERROR:
        out->kind = TDM_GST_MSG_ERROR;
        gst_message_parse_error(message, &error, &out->debug);
        break;
    case GST_MESSAGE_WARNING:
        out->kind = TDM_GST_MSG_WARNING;
        gst_message_parse_warning(message, &error, &out->debug);
        break;
    case GST_MESSAGE_BUFFERING:
        out->kind = TDM_GST_MSG_BUFFERING;
        gst_message_parse_buffering(message, &out->percent);
        break;
    case GST_MESSAGE_ASYNC_DONE:
        out->kind = TDM_GST_MSG_ASYNC_DONE;
        break;
    case GST_MESSAGE_STATE_CHANGED:
        out->kind = TDM_GST_MSG_STATE_CHANGED;
        break;
    case GST_MESSAGE_CLOCK_LOST:
        out->kind = TDM_GST_MSG_CLOCK_LOST;
        break;
    case GST_MESSAGE_TAG: {
        out->kind = TDM_GST_MSG_TAG;
        GstTagList *tags = NULL;
        gst_message_parse_tag(message, &tags);
        if (tags) {
            // Stream-scoped titles are track names ("Audio"), not the item's title.
            if (gst_tag_list_get_scope(tags) == GST_TAG_SCOPE_GLOBAL)
                gst_tag_list_get_string(tags, GST_TAG_TITLE, &out->title);
            gst_tag_list_unref(tags);
        }
        break;
    }
    case GST_MESSAGE_ELEMENT:
        if (gst_is_missing_plugin_message(message)) {
            out->kind = TDM_GST_MSG_MISSING_PLUGIN;
            out->text = gst_missing_plugin_message_get_description(message);
            out->missing_detail = gst_missing_plugin_message_get_installer_detail(message);
        }
        break;
    default:
        break;
    }
    if (error) {
        out->domain = domain_of(error->domain);
        out->code = error->code;
        out->text = g_strdup(error->message);
        g_error_free(error);
    }
}

struct tdm_gst_error_trap {
    GMutex lock;
    int has_error;
    tdm_gst_message_info error;
    char *missing_text;
    char *missing_detail;
    char *title;
};

static void error_trap_free(gpointer data) {
    tdm_gst_error_trap *trap = data;
    tdm_gst_message_info_clear(&trap->error);
    g_free(trap->missing_text);
    g_free(trap->missing_detail);
    g_free(trap->title);
    g_mutex_clear(&trap->lock);
    g_free(trap);
}

// A streaming thread announces itself (STREAM_STATUS ENTER) from inside that thread. The threads that feed the
// sinks (playsink's "vqueue" and "aqueue") must release buffers on time; the others (demuxing, decoding) only
// have to keep queues filled. Those others get a lower priority (nice +5: allowed without privileges), so that
// when several players share a few cores, a decoder waking up does not delay another player's sink.
static void prioritise_streaming_thread(GstMessage *message) {
    GstStreamStatusType status;
    GstElement *owner = NULL;
    gst_message_parse_stream_status(message, &status, &owner);
    if (status != GST_STREAM_STATUS_TYPE_ENTER || owner == NULL) return;
    const char *name = GST_OBJECT_NAME(owner);
    if (name && (g_str_has_prefix(name, "vqueue") || g_str_has_prefix(name, "aqueue"))) return;
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 5);  // best effort: a failure changes nothing
}

static GstBusSyncReply error_trap_handler(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    tdm_gst_error_trap *trap = data;
    GstMessageType type = GST_MESSAGE_TYPE(message);
    if (type == GST_MESSAGE_STREAM_STATUS) {
        prioritise_streaming_thread(message);
        return GST_BUS_PASS;
    }
    if (type != GST_MESSAGE_ERROR && type != GST_MESSAGE_ELEMENT && type != GST_MESSAGE_TAG) return GST_BUS_PASS;
    tdm_gst_message_info info;
    // The pipeline pointer only serves from_pipeline, which the trap does not need.
    tdm_gst_message_parse(message, NULL, &info);
    g_mutex_lock(&trap->lock);
    if (info.kind == TDM_GST_MSG_ERROR && !trap->has_error) {
        trap->has_error = 1;
        trap->error = info;
        memset(&info, 0, sizeof info);
    } else if (info.kind == TDM_GST_MSG_MISSING_PLUGIN && !trap->missing_detail) {
        trap->missing_text = info.text;
        trap->missing_detail = info.missing_detail;
        info.text = NULL;
        info.missing_detail = NULL;
    } else if (info.kind == TDM_GST_MSG_TAG && info.title && !trap->title) {
        trap->title = info.title;
        info.title = NULL;
    }
    g_mutex_unlock(&trap->lock);
    tdm_gst_message_info_clear(&info);
    return GST_BUS_PASS;
}

tdm_gst_error_trap *tdm_gst_install_error_trap(GstElement *pipeline) {
    tdm_gst_error_trap *trap = g_new0(tdm_gst_error_trap, 1);
    g_mutex_init(&trap->lock);
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_bus_set_sync_handler(bus, error_trap_handler, trap, error_trap_free);
    gst_object_unref(bus);
    return trap;
}

void tdm_gst_error_trap_reset(tdm_gst_error_trap *trap) {
    g_mutex_lock(&trap->lock);
    trap->has_error = 0;
    tdm_gst_message_info_clear(&trap->error);
    g_clear_pointer(&trap->missing_text, g_free);
    g_clear_pointer(&trap->missing_detail, g_free);
    g_clear_pointer(&trap->title, g_free);
    g_mutex_unlock(&trap->lock);
}

int tdm_gst_error_trap_get(tdm_gst_error_trap *trap, tdm_gst_message_info *out) {
    memset(out, 0, sizeof *out);
    g_mutex_lock(&trap->lock);
    int has = trap->has_error || trap->missing_detail;
    if (trap->missing_detail) {
        out->kind = TDM_GST_MSG_MISSING_PLUGIN;
        out->text = g_strdup(trap->missing_text);
        out->missing_detail = g_strdup(trap->missing_detail);
        out->domain = trap->error.domain;
        out->code = trap->error.code;
        out->debug = g_strdup(trap->error.debug);
    } else if (trap->has_error) {
        out->kind = TDM_GST_MSG_ERROR;
        out->domain = trap->error.domain;
        out->code = trap->error.code;
        out->text = g_strdup(trap->error.text);
        out->debug = g_strdup(trap->error.debug);
        out->source = g_strdup(trap->error.source);
    }
    g_mutex_unlock(&trap->lock);
    return has;
}

char *tdm_gst_error_trap_title(tdm_gst_error_trap *trap) {
    g_mutex_lock(&trap->lock);
    char *title = g_strdup(trap->title);
    g_mutex_unlock(&trap->lock);
    return title;
}

static int trap_has_error(tdm_gst_error_trap *trap) {
    if (!trap) return 0;
    g_mutex_lock(&trap->lock);
    int has = trap->has_error;
    g_mutex_unlock(&trap->lock);
    return has;
}

int tdm_gst_wait_async_done(GstElement *pipeline, tdm_gst_error_trap *trap, int64_t timeout_ns) {
    int64_t deadline = tdm_gst_monotonic_now() + timeout_ns;
    for (;;) {
        GstStateChangeReturn ret = gst_element_get_state(pipeline, NULL, NULL, 20 * GST_MSECOND);
        if (trap_has_error(trap)) return 0;
        if (ret == GST_STATE_CHANGE_SUCCESS || ret == GST_STATE_CHANGE_NO_PREROLL) return 1;
        if (ret == GST_STATE_CHANGE_FAILURE) {
            // The error that caused the failure may still be on its way from a streaming thread.
            for (int i = 0; i < 25 && trap && !trap_has_error(trap); i++) g_usleep(10000);
            return 0;
        }
        if (tdm_gst_monotonic_now() > deadline) return -1;
    }
}

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

// MARK: - Clock

// A GstSystemClock whose blocking waits end precisely: the system clock's own wait (which can be unscheduled)
// sleeps until `spin` before the target, then the thread spins to the target, watching for unscheduling.
// Timer wake-ups on virtual machines come 0.1–1 ms late and vary; every sink on this clock renders that much
// later, differently on every peer. Spinning the last stretch trades a little CPU for sub-0.1 ms releases.
typedef struct {
    GstSystemClock parent;
    GstClockTime spin;
} TdmPreciseClock;

typedef struct {
    GstSystemClockClass parent_class;
} TdmPreciseClockClass;

G_DEFINE_TYPE(TdmPreciseClock, tdm_precise_clock, GST_TYPE_SYSTEM_CLOCK)

static GstClockReturn tdm_precise_clock_wait(GstClock *clock, GstClockEntry *entry, GstClockTimeDiff *jitter) {
    GstClockClass *parent = GST_CLOCK_CLASS(tdm_precise_clock_parent_class);
    GstClockTime spin = ((TdmPreciseClock *)clock)->spin;
    GstClockTime target = GST_CLOCK_ENTRY_TIME(entry);
    GstClockTime now = gst_clock_get_time(clock);
    if (spin == 0 || !GST_CLOCK_TIME_IS_VALID(target) || GST_CLOCK_DIFF(now, target) <= 0) {
        return parent->wait(clock, entry, jitter);
    }
    if (GST_CLOCK_DIFF(now, target) > (GstClockTimeDiff)spin) {
        // Only this thread waits on a single-shot entry, so moving its time for the sleep is safe.
        entry->time = target - spin;
        GstClockReturn early = parent->wait(clock, entry, jitter);
        entry->time = target;
        if (early != GST_CLOCK_OK && early != GST_CLOCK_EARLY) return early;  // unscheduled or an error
    }
    while ((now = gst_clock_get_time(clock)) < target) {
        if (g_atomic_int_get((gint *)&entry->status) == GST_CLOCK_UNSCHEDULED) return GST_CLOCK_UNSCHEDULED;
    }
    if (jitter) *jitter = GST_CLOCK_DIFF(target, now);
    return GST_CLOCK_OK;
}

static void tdm_precise_clock_class_init(TdmPreciseClockClass *klass) {
    GST_CLOCK_CLASS(klass)->wait = tdm_precise_clock_wait;
}

static void tdm_precise_clock_init(TdmPreciseClock *clock) { clock->spin = 0; }

GstClock *tdm_gst_clock_new_monotonic(uint64_t spin_ns) {
    TdmPreciseClock *clock = g_object_new(tdm_precise_clock_get_type(), "clock-type", GST_CLOCK_TYPE_MONOTONIC,
                                          "name", "tandem-session-clock", NULL);
    clock->spin = spin_ns;
    return gst_object_ref_sink(GST_CLOCK(clock));
}

static void rate_fraction(double rate, GstClockTime *num, GstClockTime *denom) {
    *denom = 1000000000ULL;
    *num = (GstClockTime)(rate * 1e9 + 0.5);
    if (*num == 0) *num = 1;
}

void tdm_gst_clock_calibrate(GstClock *clock, uint64_t internal_anchor, uint64_t external_anchor, double rate) {
    GstClockTime num, denom;
    rate_fraction(rate, &num, &denom);
    gst_clock_set_calibration(clock, internal_anchor, external_anchor, num, denom);
}

uint64_t tdm_gst_clock_now(GstClock *clock) { return gst_clock_get_time(clock); }

uint64_t tdm_gst_clock_adjust(GstClock *clock, uint64_t internal) {
    GstClockTime ci, ce, cn, cd;
    gst_clock_get_calibration(clock, &ci, &ce, &cn, &cd);
    return gst_clock_adjust_with_calibration(clock, internal, ci, ce, cn, cd);
}

uint64_t tdm_gst_clock_unadjust(GstClock *clock, uint64_t external) {
    GstClockTime ci, ce, cn, cd;
    gst_clock_get_calibration(clock, &ci, &ce, &cn, &cd);
    return gst_clock_unadjust_with_calibration(clock, external, ci, ce, cn, cd);
}

// MARK: - Render probe

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
    int64_t now = tdm_gst_monotonic_now();
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
            int64_t monotonic = (int64_t)tdm_gst_clock_unadjust(clock, when);
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
    if (g_signal_lookup("handoff", G_OBJECT_TYPE(element)) && find_property(element, "signal-handoffs")) {
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

// MARK: - Files

char *tdm_gst_file_fingerprint(const char *path) {
    enum { CHUNK = 64 * 1024 };
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    if (fseeko(file, 0, SEEK_END) != 0) { fclose(file); return NULL; }
    off_t size = ftello(file);
    GChecksum *checksum = g_checksum_new(G_CHECKSUM_SHA256);
    char header[32];
    snprintf(header, sizeof header, "%lld\n", (long long)size);
    g_checksum_update(checksum, (const guchar *)header, (gssize)strlen(header));
    guchar *buffer = g_malloc(CHUNK);
    off_t starts[2] = { 0, size > CHUNK ? size - CHUNK : 0 };
    for (int i = 0; i < 2; i++) {
        if (fseeko(file, starts[i], SEEK_SET) != 0) break;
        size_t n = fread(buffer, 1, CHUNK, file);
        g_checksum_update(checksum, buffer, (gssize)n);
    }
    g_free(buffer);
    fclose(file);
    char *hex = g_strdup(g_checksum_get_string(checksum));
    g_checksum_free(checksum);
    return hex;
}

// MARK: - Discoverer

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
    } else if (GST_IS_DISCOVERER_SUBTITLE_INFO(info)) {
        out->kind = 2;
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
        result->domain = domain_of(error->domain);
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
        g_free(result->streams[i].caps);
    }
    g_free(result->streams);
    g_free(result->error);
    g_free(result->missing);
    g_free(result->title);
    g_free(result->container);
    g_free(result);
}

char *tdm_gst_missing_decoder_detail(const char *caps_string) {
    GstCaps *caps = gst_caps_from_string(caps_string);
    if (!caps) return NULL;
    char *detail = gst_missing_decoder_installer_detail_new(caps);
    gst_caps_unref(caps);
    return detail;
}
