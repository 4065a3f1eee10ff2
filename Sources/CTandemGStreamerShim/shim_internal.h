#ifndef TANDEM_GST_SHIM_INTERNAL_H
#define TANDEM_GST_SHIM_INTERNAL_H
// Helpers the shim's own files share: not in the public header (Swift never sees them) and not exported
// from the library (G_GNUC_INTERNAL).
#include "tandem_gst_shim.h"
#include <time.h>

/// CLOCK_MONOTONIC in nanoseconds: the true time base of the engine's clock and of the render probe
/// (Swift reads the same clock through TandemCore's SystemMonotonicClock).
static inline int64_t tdm_shim_monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/// The property `property` of `object`, or NULL when the object (or the property) does not exist.
G_GNUC_INTERNAL GParamSpec *tdm_shim_find_property(void *object, const char *property);

/// A GError domain as one of the TDM_GST_DOMAIN_* numbers.
G_GNUC_INTERNAL int tdm_shim_domain_of(GQuark domain);

/// The calibrated clock's internal (monotonic) time at which it reads `external`.
G_GNUC_INTERNAL uint64_t tdm_shim_clock_unadjust(GstClock *clock, uint64_t external);

#endif
