#ifndef TANDEM_GST_SHIM_H
#define TANDEM_GST_SHIM_H
// C helpers for what Swift cannot import from GStreamer/GLib: cast macros, varargs calls, signal handlers and
// code that must run on GStreamer's streaming threads without touching Swift. Every function is prefixed
// tdm_gst_ and says who owns what it returns. What Swift can call itself (state changes, seeks, queries, clock
// calibration, g_free, gst_object_unref) it calls directly; the sections below name the file of each concern.
#include <gst/gst.h>
#include <stdint.h>
#include <stddef.h>

// MARK: - Process (init.c)

/// Initialises GStreamer once per process (thread-safe, idempotent). Returns 1 on success, 0 on failure.
int tdm_gst_init(void);

// MARK: - Elements and properties (elements.c: g_object_set/get are variadic)

/// Builds a bin from a gst-launch style description (gst_parse_bin_from_description with ghost pads).
/// Returns a full reference the caller unrefs, or NULL and sets *error_message (caller frees with
/// g_free) and *missing_element to 1 when the failure is an unknown element name.
/// When the description is a single element it is returned as is (no wrapping bin).
GstElement *tdm_gst_bin_from_description(const char *description, char **error_message, int *missing_element);

/// Creates a playbin named `name` (network sources download-buffered). Full reference, caller unrefs; NULL if missing.
GstElement *tdm_gst_playbin_new(const char *name);

/// Sets a string property; does nothing when the property does not exist.
void tdm_gst_set_string(void *object, const char *property, const char *value);
/// Sets an object property; the object takes its own reference, the caller keeps theirs.
void tdm_gst_set_object(void *object, const char *property, void *value);
/// Reads an int property (0 when missing).
int tdm_gst_get_int(void *object, const char *property);

// MARK: - Bus messages (messages.c) and the error trap (error_trap.c)

/// The first error (or missing plugin) seen on a pipeline's bus, recorded synchronously in the posting thread.
/// Installed as the bus sync handler; the bus owns it (freed with the bus).
typedef struct tdm_gst_error_trap tdm_gst_error_trap;

/// Installs an error trap as `pipeline`'s bus sync handler (messages still reach the bus afterwards).
/// The returned pointer stays valid as long as the pipeline (its bus) lives; do not free it.
tdm_gst_error_trap *tdm_gst_install_error_trap(GstElement *pipeline);

/// How the threads that feed a pipeline's sinks are scheduled (process-wide; read when such a thread starts):
/// REALTIME asks for SCHED_FIFO where the system allows it, else nice -10 where allowed, else leaves them be;
/// NORMAL leaves them be. Other streaming threads get nice +5 either way.
enum { TDM_GST_SINK_PRIORITY_NORMAL = 0, TDM_GST_SINK_PRIORITY_REALTIME = 1 };
void tdm_gst_set_sink_thread_priority(int mode);
int tdm_gst_get_sink_thread_priority(void);
/// How the latest sink thread to start was scheduled in the end.
enum { TDM_GST_SINK_THREADS_UNKNOWN = -1, TDM_GST_SINK_THREADS_ORDINARY = 0, TDM_GST_SINK_THREADS_RAISED = 1,
       TDM_GST_SINK_THREADS_REALTIME = 2 };
int tdm_gst_sink_thread_scheduling(void);

/// Error domains, as plain numbers.
enum { TDM_GST_DOMAIN_OTHER = 0, TDM_GST_DOMAIN_CORE = 1, TDM_GST_DOMAIN_LIBRARY = 2,
       TDM_GST_DOMAIN_RESOURCE = 3, TDM_GST_DOMAIN_STREAM = 4 };

/// What the shim extracts from a bus message. Strings are owned by the struct: release with
/// tdm_gst_message_info_clear.
typedef struct {
    int kind;               ///< TDM_GST_MSG_*
    int from_pipeline;      ///< 1 when the pipeline itself posted it
    int percent;            ///< buffering percent
    int domain;             ///< TDM_GST_DOMAIN_* for error/warning
    int code;               ///< the GError code
    char *text;             ///< error/warning text, or the missing plugin's human description
    char *debug;            ///< error/warning debug details
    char *source;           ///< name of the posting object
    char *missing_detail;   ///< installer detail of a missing plugin ("gstreamer|1.0|app|desc|decoder-video/x-h264")
    char *title;            ///< title tag (TDM_GST_MSG_TAG)
} tdm_gst_message_info;

enum { TDM_GST_MSG_OTHER = 0, TDM_GST_MSG_EOS = 1, TDM_GST_MSG_ERROR = 2, TDM_GST_MSG_WARNING = 3,
       TDM_GST_MSG_BUFFERING = 4, TDM_GST_MSG_ASYNC_DONE = 5, TDM_GST_MSG_MISSING_PLUGIN = 6,
       TDM_GST_MSG_TAG = 7, TDM_GST_MSG_STATE_CHANGED = 8, TDM_GST_MSG_CLOCK_LOST = 9 };

/// Parses `message` (not consumed) into `out`.
void tdm_gst_message_parse(GstMessage *message, GstElement *pipeline, tdm_gst_message_info *out);
/// Frees the strings inside `info` and zeroes it.
void tdm_gst_message_info_clear(tdm_gst_message_info *info);

/// Forgets what the trap recorded (call before a new load).
void tdm_gst_error_trap_reset(tdm_gst_error_trap *trap);
/// Copies the recorded error into `out` (caller clears it). Returns 1 if an error was recorded.
/// A missing-plugin message recorded before the error is merged into it (kind TDM_GST_MSG_MISSING_PLUGIN).
int tdm_gst_error_trap_get(tdm_gst_error_trap *trap, tdm_gst_message_info *out);
/// The first title tag seen since the last reset; caller frees with g_free. NULL when none.
char *tdm_gst_error_trap_title(tdm_gst_error_trap *trap);

/// Waits (blocking, so never call it from an async context's thread) until the pipeline finishes an
/// asynchronous state change. Polls every 20 ms and stops early when the trap records an error.
/// Returns 1 when done, 0 on error or failure, -1 on timeout.
int tdm_gst_wait_async_done(GstElement *pipeline, tdm_gst_error_trap *trap, int64_t timeout_ns);

// MARK: - Sinks (sinks.c)

/// 1 when a base sink inside `sink` (an element or a bin) holds a prerolled buffer (its last-sample).
/// Tells a real preroll from an item that reached its end before any data (a truncated file).
int tdm_gst_sinks_prerolled(GstElement *sink);

/// Makes every sink inside `sink` (the element itself, or any element of a bin, recursively) that was told not to
/// wait for the clock (sync=FALSE: fakesink's default, or the user's choice) wait for it (sync=TRUE): a sink that
/// renders as fast as data comes runs ahead of the clock, and the pipeline's position with it. Base sinks and sink
/// bins that pass "sync" on (autovideosink) count. Returns how many it changed; when any, *changed holds their
/// factory names, one per line (caller frees with g_free), otherwise NULL.
int tdm_gst_sinks_force_sync(GstElement *sink, char **changed);

/// Sets drift-tolerance (µs) and alignment-threshold (ns) on every GstAudioBaseSink inside `bin`, now and
/// whenever one is added later (autoaudiosink creates its child late). Defaults are 40 ms — too loose.
void tdm_gst_tune_audio_sinks(GstElement *bin, int64_t drift_tolerance_us, uint64_t alignment_threshold_ns);

// MARK: - Clock (clock.c)

/// A fresh GstSystemClock on CLOCK_MONOTONIC that only this engine uses (never the shared system clock,
/// whose calibration would leak into every pipeline in the process). With `spin_ns` > 0 its blocking waits sleep
/// until `spin_ns` before the target and spin the rest, so sinks release buffers on time even where timer
/// wake-ups are late (virtual machines); 0 keeps GStreamer's own wait. Caller owns the reference.
/// Swift calibrates and reads it through GStreamer itself (gst_clock_set_calibration, gst_clock_get_time).
GstClock *tdm_gst_clock_new_monotonic(uint64_t spin_ns);

// MARK: - Instant rate change (instant_rate.c)

/// What an instant rate change came to: when it was sent, and the sync time the pipeline chose for it.
typedef struct {
    int64_t sent_at;                  ///< CLOCK_MONOTONIC (ns) just before the seek was sent
    int sinks;                        ///< base sinks that received the pipeline's INSTANT_RATE_SYNC_TIME
    double multiplier;                ///< the rate multiplier it carried (new rate / the segment's rate)
    uint64_t running_time;            ///< the running time at which the sinks switched (the pipeline's choice:
                                      ///< its clock minus its base time when it handled the request)
    uint64_t upstream_running_time;   ///< the same instant in the running time upstream elements see
} tdm_gst_instant_rate_result;

/// Sends `pipeline` a seek with only GST_SEEK_FLAG_INSTANT_RATE_CHANGE to `rate` (start and stop types NONE: only
/// the rate multiplier of the current segment changes, nothing is flushed) and waits up to `wait_ns` for the
/// pipeline's INSTANT_RATE_SYNC_TIME to reach a sink. Returns 1 when the sinks applied it (`out` says at which
/// running time), 0 when the seek was accepted but no sink was told (an element ignored the flag: the rate did not
/// change), -1 when the seek was refused. A rate of the other sign is not an instant change: do not ask for one.
/// Blocking; call it from the player's queue. Nothing to free.
int tdm_gst_instant_rate_change(GstElement *pipeline, double rate, int64_t wait_ns, tdm_gst_instant_rate_result *out);

/// Moves the base time of a playing `pipeline` and of every element in it by `delta_ns` (negative: earlier), so
/// every sink renders that much later from its next buffer on (the next PLAYING sets a new base time). Returns how
/// many base sinks moved; 0 when nothing did.
int tdm_gst_shift_base_time(GstElement *pipeline, int64_t delta_ns);

/// 1 when the loaded pipeline holds an element known to turn an instant-rate seek into an instant-rate-change
/// event (matroskademux, qtdemux, the adaptive demuxers, appsrc), else 0. Only then is
/// tdm_gst_instant_rate_change safe: other demuxers take the seek for a non-flushing seek.
int tdm_gst_supports_instant_rate(GstElement *pipeline);

// MARK: - Render probe (render_probe.c)

/// Stream kinds of render records.
enum { TDM_GST_KIND_VIDEO = 0, TDM_GST_KIND_AUDIO = 1 };

/// One rendered buffer: its item time (stream time of the PTS) and the CLOCK_MONOTONIC time at which the sink
/// released it. `exact` is 1 for sinks that report after their clock wait (fakesink handoff), 0 for an estimate
/// (pad probe before the wait: the scheduled release time derived from the running time and the clock).
typedef struct {
    int64_t item_time;
    int64_t monotonic_time;
    int32_t kind;
    int32_t exact;
} tdm_gst_render_record;

/// A bounded ring of render records. Writers (streaming threads) take a short mutex for a few stores and never
/// wait on anything else; when full, the oldest record is overwritten and counted as dropped.
/// Reference counted: tdm_gst_render_probe_new returns one reference for the caller; every attachment holds
/// its own, released when the sink goes away.
typedef struct tdm_gst_render_probe tdm_gst_render_probe;

tdm_gst_render_probe *tdm_gst_render_probe_new(uint32_t capacity);
void tdm_gst_render_probe_unref(tdm_gst_render_probe *probe);
/// Finds the base sinks inside `sink` (an element or a bin) and records what they render as `kind`.
/// fakesink gets signal-handoffs=TRUE and an exact handoff record; other sinks a pad-probe estimate.
/// Returns how many sinks were attached.
int tdm_gst_render_probe_attach(tdm_gst_render_probe *probe, GstElement *sink, int kind);
/// Moves up to `max` records (oldest first) into `out`; returns how many.
size_t tdm_gst_render_probe_drain(tdm_gst_render_probe *probe, tdm_gst_render_record *out, size_t max);
/// The latest record of `kind` (also kept after draining). Returns 1 when there is one.
int tdm_gst_render_probe_latest(tdm_gst_render_probe *probe, int kind, tdm_gst_render_record *out);
/// Records overwritten before anyone drained them.
uint64_t tdm_gst_render_probe_dropped(tdm_gst_render_probe *probe);

// MARK: - Discoverer (discoverer.c)

/// One stream found by tdm_gst_discover. Strings owned by the result.
typedef struct {
    int kind;             ///< 0 video, 1 audio, 2 subtitle, 3 container, 4 other
    char *codec;          ///< human codec description ("On2 VP8")
    char *caps;           ///< caps as a string
    int width, height, fps_num, fps_den;
    int channels, sample_rate;
    unsigned bitrate;
    char *language;       ///< audio and subtitle streams: ISO 639 code ("eng"), or NULL
} tdm_gst_stream_info;

enum { TDM_GST_DISCOVER_OK = 0, TDM_GST_DISCOVER_URI_INVALID = 1, TDM_GST_DISCOVER_ERROR = 2,
       TDM_GST_DISCOVER_TIMEOUT = 3, TDM_GST_DISCOVER_BUSY = 4, TDM_GST_DISCOVER_MISSING_PLUGINS = 5 };

/// What GstDiscoverer learnt about a URI. Free with tdm_gst_discover_result_free.
typedef struct {
    int result;                 ///< TDM_GST_DISCOVER_*
    int domain, code;           ///< of the error, when result is ERROR
    char *error;                ///< error text or NULL
    char *missing;              ///< newline-separated installer details of missing plugins, or NULL
    int64_t duration;           ///< ns, -1 unknown
    int seekable;
    char *title;
    char *container;            ///< container codec description, or NULL
    int stream_count;
    tdm_gst_stream_info *streams;
} tdm_gst_discover_result;

/// Runs GstDiscoverer synchronously on `uri` (blocking: call it from a thread of its own).
/// Returns a result the caller frees with tdm_gst_discover_result_free (never NULL).
tdm_gst_discover_result *tdm_gst_discover(const char *uri, int64_t timeout_ns);
void tdm_gst_discover_result_free(tdm_gst_discover_result *result);

// --- The video window: overlay, volume, tracks, keys (overlay.c) ---

void tdm_gst_set_int(void *object, const char *property, int value);
void tdm_gst_set_double(void *object, const char *property, double value);
void tdm_gst_set_boolean(void *object, const char *property, int value);
double tdm_gst_get_double(void *object, const char *property);
/// Sets or clears `flag` in the flags property `property` (playbin's "flags").
void tdm_gst_set_flag(void *object, const char *property, unsigned int flag, int on);

/// Called with the key name of each key press (GstNavigation names: "space", "Left", "f", …), on whichever
/// thread sent it (a video sink's window thread, a streaming thread).
typedef void (*tdm_gst_key_callback)(void *context, const char *key);
typedef void (*tdm_gst_release_callback)(void *context);
/// Watches navigation key presses travelling upstream into `pad_name` of `element`. `release(context)` is called
/// once the watch is gone (with the pad), or at once when there is no such pad (then 0 is returned).
unsigned long tdm_gst_watch_keys(GstElement *element, const char *pad_name, tdm_gst_key_callback on_key,
                                 tdm_gst_release_callback release, void *context);
/// Embedded subtitles without changing playbin's flags while it runs (turning its text flag on in a prerolled
/// pipeline can leave it stuck): playbin keeps the text flag from the start, and the subtitle overlay its sink
/// adds for an item's text stream ("subtitleoverlay") is kept silent unless `visible`, from its first frame on
/// (for every item loaded later too). A handle for tdm_gst_subtitles_set_visible, valid while `playbin` lives.
void *tdm_gst_subtitles_watch(GstElement *playbin, int visible);
/// Shows (1) or hides (0) the item's own subtitles, now and in any overlay added later.
void tdm_gst_subtitles_set_visible(void *watch, GstElement *playbin, int visible);
/// Sends a key press upstream from the input of the sink inside `sink`, as a video window does; 0 without one.
int tdm_gst_send_key_press(GstElement *sink, const char *key);
/// Copies the last frame the sink inside `sink` rendered (it must keep it: enable-last-sample, caps RGBx or
/// another 4-byte format) into `out`; 1 when copied, with its size in `width` and `height` and its timestamp
/// (the item time it shows, ns; -1 unknown) in `pts`.
int tdm_gst_last_frame_rgbx(GstElement *sink, uint8_t *out, size_t capacity, int *width, int *height,
                            int64_t *pts);

/// Shows cue i's text on `overlay` (a textoverlay) on exactly the frames whose timestamp lies in
/// [starts[i], ends[i]) (ns, sorted by start); copies everything. Returns the probe id (0 on failure).
unsigned long tdm_gst_subtitle_cues_attach(GstElement *overlay, const int64_t *starts, const int64_t *ends,
                                           const char *const *texts, size_t count);
/// playbin's video filter for the window: textoverlay "subs" (bottom centre, in `subtitle_font`) then
/// textoverlay "osd" (top left, shaded), in a bin; a new (sunk) reference, NULL when textoverlay is missing.
GstElement *tdm_gst_overlay_filter_new(const char *subtitle_font);
void tdm_gst_pad_probe_remove(GstElement *element, const char *pad_name, unsigned long id);

/// The language of the item's audio (`text` 0) or subtitle (`text` 1) track `index`, as playbin's tags give it,
/// or NULL when it has none; caller frees with g_free.
char *tdm_gst_track_language(GstElement *playbin, int text, int index);
/// `code` (ISO 639-1 or -2, any case) as ISO 639-2/T ("fr", "fre" and "FRA" all give "fra"), lower case; an
/// unknown code as given, lower case. Caller frees with g_free.
char *tdm_gst_language_normalized(const char *code);

// --- The video window the application owns (window.c) ---

/// An X window the player owns and hands to the video sink when it asks for one (prepare-window-handle), so
/// that the player can title it and make it full screen. Watches `pipeline`'s bus from creation; the X window
/// itself is made on the sink's display (its "display" property, else $DISPLAY) the first time a sink asks, and
/// never when none does (fakesink, appsink) or the display cannot be opened (the sink then makes its own).
typedef struct tdm_gst_window tdm_gst_window;

/// Starts watching `pipeline`'s bus for a window request from `video_sink` (an element or a bin: its video sink
/// gives the display and the size); the window is titled `title` (UTF-8). Free with tdm_gst_window_free once the
/// pipeline is in the NULL state.
tdm_gst_window *tdm_gst_window_new(GstElement *pipeline, GstElement *video_sink, const char *title);
void tdm_gst_window_free(tdm_gst_window *window);
/// Sets the title (WM_NAME and _NET_WM_NAME, UTF-8), now or when the window is made.
void tdm_gst_window_set_title(tdm_gst_window *window, const char *title);
/// The X window's id, 0 while there is none.
unsigned long tdm_gst_window_xid(tdm_gst_window *window);
/// Full screen on (1) or off (0): the EWMH _NET_WM_STATE_FULLSCREEN request to the root window, and, when no
/// window manager runs, the window moved over the whole screen (and back). Returns the new state, -1 without a
/// window.
int tdm_gst_window_set_fullscreen(tdm_gst_window *window, int on);
int tdm_gst_window_is_fullscreen(tdm_gst_window *window);

/// What an X server says of a window (read through a connection of its own).
typedef struct {
    int x, y, width, height, mapped;
    int screen_width, screen_height;
    char wm_name[256];       ///< WM_NAME (XFetchName)
    char net_wm_name[256];   ///< _NET_WM_NAME (UTF-8)
} tdm_gst_x_window_info;

/// 1 when `display_name` (NULL: $DISPLAY) accepts a connection.
int tdm_gst_x_display_opens(const char *display_name);
/// Reads window `xid`'s geometry, map state and titles from `display_name`; 1 when it exists.
int tdm_gst_x_window_query(const char *display_name, unsigned long xid, tdm_gst_x_window_info *out);
/// The top-level window (a child of the root) whose _NET_WM_NAME is `title`, 0 when there is none.
unsigned long tdm_gst_x_find_window(const char *display_name, const char *title);

#endif
