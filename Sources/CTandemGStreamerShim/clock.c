// The engine clock: a GstSystemClock subclass on CLOCK_MONOTONIC (G_DEFINE_TYPE and a class vfunc, which Swift
// cannot write) whose waits end precisely, and the inverse calibration the render probe uses.
#include "shim_internal.h"

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

uint64_t tdm_shim_clock_unadjust(GstClock *clock, uint64_t external) {
    GstClockTime ci, ce, cn, cd;
    gst_clock_get_calibration(clock, &ci, &ce, &cn, &cd);
    return gst_clock_unadjust_with_calibration(clock, external, ci, ce, cn, cd);
}
