#include "tandem_gst_shim.h"

int tdm_gst_init(void) {
    static gsize once = 0;
    static int ok = 0;
    if (g_once_init_enter(&once)) {
        GError *error = NULL;
        ok = gst_init_check(NULL, NULL, &error) ? 1 : 0;
        if (error) g_error_free(error);
        g_once_init_leave(&once, 1);
    }
    return ok;
}
