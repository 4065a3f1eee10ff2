// Process set-up: initialises GStreamer (and the plugin-base utilities) once, whichever thread asks first.
// In C because g_once_init_enter is a macro.
#include "tandem_gst_shim.h"

#include <gst/pbutils/pbutils.h>

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
