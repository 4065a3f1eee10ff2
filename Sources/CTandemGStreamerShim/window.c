// The video window the application owns: an X window created when the video sink asks for one (its
// prepare-window-handle message, answered synchronously on the thread that posts it), handed to the sink with
// gst_video_overlay_set_window_handle. Owning it is what lets the player name it (WM_NAME and _NET_WM_NAME) and
// make it full screen, which GStreamer's X sinks cannot do themselves. The sink still selects the window's input
// on its own connection, so key presses keep arriving as navigation events.
#include "shim_internal.h"
#include <gst/video/video.h>
#include <gst/video/videooverlay.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <string.h>

struct tdm_gst_window {
    GMutex lock;
    GstBus *bus;
    gulong handler;
    GstElement *video_sink;   // the player's video sink (an element or a bin): its display and size
    Display *display;     // our own connection, opened when a sink first asks for a window
    Window window;        // 0 until then
    char *title;          // UTF-8
    int fullscreen;
    int failed;           // the sink's display could not be opened: the sink makes its own window
    volatile int broken;  // the connection to the X server broke (it went away): no more requests
    int saved_x, saved_y, saved_width, saved_height;
};

// Xlib's default error handler ends the process; a failed request on a window (one a window manager destroyed, a
// display going away) must not end everyone's session.
static int on_x_error(Display *display, XErrorEvent *event) {
    char text[160];
    XGetErrorText(display, event->error_code, text, sizeof text);
    GST_WARNING("X error on the video window: %s (request %d)", text, event->request_code);
    return 0;
}

static void install_error_handler(void) {
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        XSetErrorHandler(on_x_error);
        g_once_init_leave(&once, 1);
    }
}

// Xlib ends the process when a connection breaks, unless the display has an exit handler of its own: the X server
// going away ends the window, not the session.
static void on_connection_broken(Display *display, void *data) {
    (void)display;
    ((tdm_gst_window *)data)->broken = 1;
}

static void apply_title(tdm_gst_window *w) {
    if (!w->display || !w->window || !w->title || w->broken) return;
    Display *d = w->display;
    XStoreName(d, w->window, w->title);
    Atom utf8 = XInternAtom(d, "UTF8_STRING", False);
    int length = (int)strlen(w->title);
    XChangeProperty(d, w->window, XInternAtom(d, "_NET_WM_NAME", False), utf8, 8, PropModeReplace,
                    (const unsigned char *)w->title, length);
    XChangeProperty(d, w->window, XInternAtom(d, "_NET_WM_ICON_NAME", False), utf8, 8, PropModeReplace,
                    (const unsigned char *)w->title, length);
}

/// The GstVideoSink inside `sink` (itself, or the first one in a bin such as autovideosink), a new reference.
static GstElement *find_video_sink(GstElement *sink) {
    if (GST_IS_VIDEO_SINK(sink)) return gst_object_ref(sink);
    if (!GST_IS_BIN(sink)) return NULL;
    GstElement *found = NULL;
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(sink));
    GValue item = G_VALUE_INIT;
    while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *element = g_value_get_object(&item);
        if (GST_IS_VIDEO_SINK(element)) found = gst_object_ref(element);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return found;
}

/// The display the sink draws on: its "display" property when it has one (ximagesink, xvimagesink), else $DISPLAY.
static char *sink_display_name(GstElement *sink) {
    GParamSpec *spec = sink ? tdm_shim_find_property(sink, "display") : NULL;
    if (!spec || spec->value_type != G_TYPE_STRING) return NULL;
    char *name = NULL;
    g_object_get(sink, "display", &name, NULL);
    return name;
}

static void create_window(tdm_gst_window *w) {
    install_error_handler();
    // The message may come from playbin's playsink (which passes the handle on); the sink itself says where and
    // how large.
    GstElement *sink = w->video_sink ? find_video_sink(w->video_sink) : NULL;
    char *name = sink_display_name(sink);
    Display *d = XOpenDisplay(name);
    g_free(name);
    if (!d) {
        if (sink) gst_object_unref(sink);
        w->failed = 1;
        return;
    }
    int width = 640, height = 480;
    if (sink && GST_VIDEO_SINK_WIDTH(sink) > 0 && GST_VIDEO_SINK_HEIGHT(sink) > 0) {
        width = GST_VIDEO_SINK_WIDTH(sink);
        height = GST_VIDEO_SINK_HEIGHT(sink);
    }
    if (sink) gst_object_unref(sink);
    int screen = DefaultScreen(d);
    Window window = XCreateSimpleWindow(d, RootWindow(d, screen), 0, 0, (unsigned)width, (unsigned)height, 0,
                                        BlackPixel(d, screen), BlackPixel(d, screen));
    // Closing it through the window manager asks (a client message) instead of cutting the connection.
    Atom delete_window = XInternAtom(d, "WM_DELETE_WINDOW", False);
    XSetWMProtocols(d, window, &delete_window, 1);
    XClassHint hint = { .res_name = "tandem", .res_class = "Tandem" };
    XSetClassHint(d, window, &hint);
    w->display = d;
    w->window = window;
    XSetIOErrorExitHandler(d, on_connection_broken, w);
    apply_title(w);
    XMapRaised(d, window);
    XSync(d, False);
}

static void on_sync_message(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    if (!gst_is_video_overlay_prepare_window_handle_message(message)) return;
    tdm_gst_window *w = data;
    g_mutex_lock(&w->lock);
    if (!w->window && !w->failed) create_window(w);
    Window window = w->window;
    g_mutex_unlock(&w->lock);
    if (window) gst_video_overlay_set_window_handle(GST_VIDEO_OVERLAY(GST_MESSAGE_SRC(message)), (guintptr)window);
}

tdm_gst_window *tdm_gst_window_new(GstElement *pipeline, GstElement *video_sink, const char *title) {
    tdm_gst_window *w = g_new0(tdm_gst_window, 1);
    g_mutex_init(&w->lock);
    w->video_sink = video_sink ? gst_object_ref(video_sink) : NULL;
    w->title = g_strdup(title ? title : "Tandem");
    w->bus = gst_element_get_bus(pipeline);
    gst_bus_enable_sync_message_emission(w->bus);
    w->handler = g_signal_connect(w->bus, "sync-message::element", G_CALLBACK(on_sync_message), w);
    return w;
}

void tdm_gst_window_free(tdm_gst_window *w) {
    if (!w) return;
    if (w->bus) {
        g_signal_handler_disconnect(w->bus, w->handler);
        gst_bus_disable_sync_message_emission(w->bus);
        gst_object_unref(w->bus);
    }
    if (w->display && !w->broken) {
        if (w->window) XDestroyWindow(w->display, w->window);
        XCloseDisplay(w->display);
    }
    if (w->video_sink) gst_object_unref(w->video_sink);
    g_free(w->title);
    g_mutex_clear(&w->lock);
    g_free(w);
}

void tdm_gst_window_set_title(tdm_gst_window *w, const char *title) {
    g_mutex_lock(&w->lock);
    g_free(w->title);
    w->title = g_strdup(title ? title : "Tandem");
    if (w->display && w->window && !w->broken) {
        apply_title(w);
        XFlush(w->display);
    }
    g_mutex_unlock(&w->lock);
}

unsigned long tdm_gst_window_xid(tdm_gst_window *w) {
    g_mutex_lock(&w->lock);
    unsigned long xid = w->window;
    g_mutex_unlock(&w->lock);
    return xid;
}

int tdm_gst_window_is_fullscreen(tdm_gst_window *w) {
    g_mutex_lock(&w->lock);
    int on = w->fullscreen;
    g_mutex_unlock(&w->lock);
    return on;
}

/// Whether an EWMH window manager runs on the display (it names its check window on the root).
static int window_manager_runs(Display *d) {
    Atom check = XInternAtom(d, "_NET_SUPPORTING_WM_CHECK", True);
    if (check == None) return 0;
    Atom type = None;
    int format = 0;
    unsigned long count = 0, after = 0;
    unsigned char *data = NULL;
    int found = XGetWindowProperty(d, DefaultRootWindow(d), check, 0, 1, False, XA_WINDOW, &type, &format, &count,
                                   &after, &data) == Success && type == XA_WINDOW && count == 1;
    if (data) XFree(data);
    return found;
}

int tdm_gst_window_set_fullscreen(tdm_gst_window *w, int on) {
    g_mutex_lock(&w->lock);
    if (!w->display || !w->window || w->broken) {
        g_mutex_unlock(&w->lock);
        return -1;
    }
    on = on ? 1 : 0;
    if (on == w->fullscreen) {
        g_mutex_unlock(&w->lock);
        return on;
    }
    Display *d = w->display;
    Window root = DefaultRootWindow(d);
    // (a) What window managers honour: the EWMH state change, asked of the root window.
    XEvent event;
    memset(&event, 0, sizeof event);
    event.xclient.type = ClientMessage;
    event.xclient.window = w->window;
    event.xclient.message_type = XInternAtom(d, "_NET_WM_STATE", False);
    event.xclient.format = 32;
    event.xclient.data.l[0] = on ? 1 : 0;   // _NET_WM_STATE_ADD / _REMOVE
    event.xclient.data.l[1] = (long)XInternAtom(d, "_NET_WM_STATE_FULLSCREEN", False);
    event.xclient.data.l[2] = 0;
    event.xclient.data.l[3] = 1;            // from an application
    XSendEvent(d, root, False, SubstructureRedirectMask | SubstructureNotifyMask, &event);
    // (b) Without a window manager nobody acts on it: cover the screen, and go back, ourselves.
    if (!window_manager_runs(d)) {
        if (on) {
            XWindowAttributes attributes;
            if (XGetWindowAttributes(d, w->window, &attributes)) {
                w->saved_x = attributes.x;
                w->saved_y = attributes.y;
                w->saved_width = attributes.width;
                w->saved_height = attributes.height;
            }
            int screen = DefaultScreen(d);
            XMoveResizeWindow(d, w->window, 0, 0, (unsigned)DisplayWidth(d, screen), (unsigned)DisplayHeight(d, screen));
            XRaiseWindow(d, w->window);
        } else if (w->saved_width > 0 && w->saved_height > 0) {
            XMoveResizeWindow(d, w->window, w->saved_x, w->saved_y, (unsigned)w->saved_width,
                              (unsigned)w->saved_height);
        }
    }
    XSync(d, False);
    w->fullscreen = on;
    g_mutex_unlock(&w->lock);
    return on;
}

int tdm_gst_x_display_opens(const char *display_name) {
    install_error_handler();
    Display *d = XOpenDisplay(display_name);
    if (!d) return 0;
    XCloseDisplay(d);
    return 1;
}

static void copy_text(char *out, size_t capacity, const char *text, size_t length) {
    if (!out || capacity == 0) return;
    size_t n = length < capacity - 1 ? length : capacity - 1;
    if (text && n) memcpy(out, text, n);
    out[text ? n : 0] = 0;
}

int tdm_gst_x_window_query(const char *display_name, unsigned long xid, tdm_gst_x_window_info *out) {
    install_error_handler();
    memset(out, 0, sizeof *out);
    Display *d = XOpenDisplay(display_name);
    if (!d) return 0;
    XWindowAttributes attributes;
    int ok = XGetWindowAttributes(d, (Window)xid, &attributes) != 0;
    if (ok) {
        out->x = attributes.x;
        out->y = attributes.y;
        out->width = attributes.width;
        out->height = attributes.height;
        out->mapped = attributes.map_state != IsUnmapped;
        out->screen_width = DisplayWidth(d, DefaultScreen(d));
        out->screen_height = DisplayHeight(d, DefaultScreen(d));
        char *name = NULL;
        if (XFetchName(d, (Window)xid, &name) && name) {
            copy_text(out->wm_name, sizeof out->wm_name, name, strlen(name));
            XFree(name);
        }
        Atom type = None;
        int format = 0;
        unsigned long count = 0, after = 0;
        unsigned char *data = NULL;
        if (XGetWindowProperty(d, (Window)xid, XInternAtom(d, "_NET_WM_NAME", False), 0, 1024, False,
                               XInternAtom(d, "UTF8_STRING", False), &type, &format, &count, &after, &data) == Success
            && data && format == 8) {
            copy_text(out->net_wm_name, sizeof out->net_wm_name, (const char *)data, count);
        }
        if (data) XFree(data);
    }
    XCloseDisplay(d);
    return ok;
}

unsigned long tdm_gst_x_find_window(const char *display_name, const char *title) {
    install_error_handler();
    Display *d = XOpenDisplay(display_name);
    if (!d) return 0;
    Window root = 0, parent = 0, *children = NULL, found = 0;
    unsigned int count = 0;
    Atom net_wm_name = XInternAtom(d, "_NET_WM_NAME", False), utf8 = XInternAtom(d, "UTF8_STRING", False);
    if (XQueryTree(d, DefaultRootWindow(d), &root, &parent, &children, &count)) {
        for (unsigned int i = 0; i < count && !found; i++) {
            Atom type = None;
            int format = 0;
            unsigned long length = 0, after = 0;
            unsigned char *data = NULL;
            if (XGetWindowProperty(d, children[i], net_wm_name, 0, 1024, False, utf8, &type, &format, &length,
                                   &after, &data) == Success && data && format == 8
                && length == strlen(title) && memcmp(data, title, length) == 0) {
                found = children[i];
            }
            if (data) XFree(data);
        }
        if (children) XFree(children);
    }
    XCloseDisplay(d);
    return found;
}
