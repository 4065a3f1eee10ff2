#ifndef TANDEM_GST_SHIM_H
#define TANDEM_GST_SHIM_H
// C helpers for what Swift cannot import from GStreamer/GLib: cast macros, varargs calls, signal handlers and
// code that must run on GStreamer's streaming threads without touching Swift. Every function is prefixed
// tdm_gst_ and says who owns what it returns.
#include <gst/gst.h>

/// Initialises GStreamer once per process (thread-safe, idempotent). Returns 1 on success, 0 on failure.
int tdm_gst_init(void);

#endif
