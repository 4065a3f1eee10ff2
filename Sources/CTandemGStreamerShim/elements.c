// Elements and their properties: building the playbin and sink bins (gst_parse with its error context), and
// typed setters / getters over g_object_set / g_object_get, which are variadic and cannot be called from Swift.
#include "shim_internal.h"

static GstElement *element_make(const char *factory, const char *name) {
    GstElement *element = gst_element_factory_make(factory, name);
    if (element) gst_object_ref_sink(element);
    return element;
}

GstElement *tdm_gst_playbin_new(const char *name) {
    GstElement *playbin = element_make("playbin", name);
    if (!playbin) return NULL;
    // video | audio | text | soft volume | download; no visualisations. The text flag stays on: the item's own
    // subtitles are shown and hidden by their overlay (tdm_gst_subtitles_watch), as changing the flags of a
    // prerolled playbin can leave it stuck. Download applies to network sources only (a host's shared item):
    // the file is fetched ahead into a temporary file (see docs/ARCHITECTURE.md, "Streaming the host's copy").
    g_object_set(playbin, "flags", (1 << 0) | (1 << 1) | (1 << 2) | (1 << 4) | (1 << 7), NULL);
    return playbin;
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

GParamSpec *tdm_shim_find_property(void *object, const char *property) {
    if (!object) return NULL;
    return g_object_class_find_property(G_OBJECT_GET_CLASS(object), property);
}

void tdm_gst_set_string(void *object, const char *property, const char *value) {
    if (tdm_shim_find_property(object, property)) g_object_set(object, property, value, NULL);
}
void tdm_gst_set_object(void *object, const char *property, void *value) {
    if (tdm_shim_find_property(object, property)) g_object_set(object, property, value, NULL);
}
int tdm_gst_get_int(void *object, const char *property) {
    gint value = 0;
    if (tdm_shim_find_property(object, property)) g_object_get(object, property, &value, NULL);
    return value;
}
