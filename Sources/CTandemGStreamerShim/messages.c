// Bus messages: copies what Swift needs out of a GstMessage (its type, error, buffering, tags and missing-plugin
// details live behind macros and out-parameters) into tdm_gst_message_info.
#include "shim_internal.h"

#include <gst/pbutils/pbutils.h>
#include <string.h>

int tdm_shim_domain_of(GQuark domain) {
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
        out->domain = tdm_shim_domain_of(error->domain);
        out->code = error->code;
        out->text = g_strdup(error->message);
        g_error_free(error);
    }
}
