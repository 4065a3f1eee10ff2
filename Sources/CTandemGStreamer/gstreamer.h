#ifndef CTANDEM_GSTREAMER_H
#define CTANDEM_GSTREAMER_H
#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <gst/pbutils/pbutils.h>
#include <gst/audio/audio.h>
#include <gst/video/navigation.h>
#endif
