// The error trap: a bus sync handler that runs in whichever thread posts a message. It records the first error,
// missing plugin and title synchronously (so a load that fails can say why before the bus thread catches up),
// lowers the priority of streaming threads that do not feed a sink, and lets a blocking wait for preroll stop
// as soon as an error is recorded.
#include "shim_internal.h"

#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000  // linux/sched.h; glibc only names it under _GNU_SOURCE
#endif

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

// A streaming thread announces itself (STREAM_STATUS ENTER) from inside that thread, and says it is leaving (LEAVE)
// from inside it too. The threads that feed the sinks (playsink's "vqueue" and "aqueue") must release buffers on
// time; the others (demuxing, decoding) only have to keep queues filled. Those others get a lower priority (nice +5:
// allowed without privileges), so that when several players share a few cores, a decoder waking up does not delay
// another player's sink. The sinks' threads get a real-time priority (SCHED_FIFO, low, reset on fork) where the
// system allows it (root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 10 or more), else nice -10 where allowed, else stay as
// they are: a sink thread woken late by the scheduler shows its frame late, and on a busy machine that tail is most
// of the spread between peers. A thread that leaves gets back the ordinary policy, so a pooled thread that later
// runs another task does not keep it.
static int sink_thread_priority_mode = TDM_GST_SINK_PRIORITY_REALTIME;
static int sink_thread_scheduling = TDM_GST_SINK_THREADS_UNKNOWN;
static __thread int thread_priority_changed;

void tdm_gst_set_sink_thread_priority(int mode) { g_atomic_int_set(&sink_thread_priority_mode, mode); }
int tdm_gst_get_sink_thread_priority(void) { return g_atomic_int_get(&sink_thread_priority_mode); }
int tdm_gst_sink_thread_scheduling(void) { return g_atomic_int_get(&sink_thread_scheduling); }

static void raise_sink_thread(void) {
    int mode = g_atomic_int_get(&sink_thread_priority_mode);
    if (mode == TDM_GST_SINK_PRIORITY_NORMAL) {
        g_atomic_int_set(&sink_thread_scheduling, TDM_GST_SINK_THREADS_ORDINARY);
        return;
    }
    struct sched_param param = { .sched_priority = 10 };
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) {
        thread_priority_changed = 1;
        g_atomic_int_set(&sink_thread_scheduling, TDM_GST_SINK_THREADS_REALTIME);
        return;
    }
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10) == 0) {
        thread_priority_changed = 1;
        g_atomic_int_set(&sink_thread_scheduling, TDM_GST_SINK_THREADS_RAISED);
        return;
    }
    g_atomic_int_set(&sink_thread_scheduling, TDM_GST_SINK_THREADS_ORDINARY);
}

static void prioritise_streaming_thread(GstMessage *message) {
    GstStreamStatusType status;
    GstElement *owner = NULL;
    gst_message_parse_stream_status(message, &status, &owner);
    if (status == GST_STREAM_STATUS_TYPE_LEAVE) {
        if (!thread_priority_changed) return;
        struct sched_param param = { .sched_priority = 0 };
        (void)sched_setscheduler(0, SCHED_OTHER, &param);
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 0);
        thread_priority_changed = 0;
        return;
    }
    if (status != GST_STREAM_STATUS_TYPE_ENTER || owner == NULL) return;
    const char *name = GST_OBJECT_NAME(owner);
    if (name && (g_str_has_prefix(name, "vqueue") || g_str_has_prefix(name, "aqueue"))) {
        raise_sink_thread();
        return;
    }
    // best effort: a failure changes nothing
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 5) == 0) thread_priority_changed = 1;
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
    int64_t deadline = tdm_shim_monotonic_now() + timeout_ns;
    for (;;) {
        GstStateChangeReturn ret = gst_element_get_state(pipeline, NULL, NULL, 20 * GST_MSECOND);
        if (trap_has_error(trap)) return 0;
        if (ret == GST_STATE_CHANGE_SUCCESS || ret == GST_STATE_CHANGE_NO_PREROLL) return 1;
        if (ret == GST_STATE_CHANGE_FAILURE) {
            // The error that caused the failure may still be on its way from a streaming thread.
            for (int i = 0; i < 25 && trap && !trap_has_error(trap); i++) g_usleep(10000);
            return 0;
        }
        if (tdm_shim_monotonic_now() > deadline) return -1;
    }
}
