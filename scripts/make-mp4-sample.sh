#!/usr/bin/env bash
# Makes the MP4 sample the tests that need H.264/AAC use: 10 s of 1920x1080 H.264 @ 30 fps + AAC stereo 48 kHz,
# the same picture and clicks as countdown.webm, its index at the front (faststart) so it can be streamed. About
# 5 MB: made on demand (`make samples`, or by `make test` when missing), never committed.
#
#   scripts/make-mp4-sample.sh [OUTPUT_FILE]      (default: media-samples/h264-1080p.mp4)
set -euo pipefail

file="${1:-media-samples/h264-1080p.mp4}"
mkdir -p "$(dirname "$file")"
export GST_DEBUG="${GST_DEBUG:-0}"

need() { gst-inspect-1.0 "$1" >/dev/null 2>&1 || { echo "missing GStreamer element '$1' (install $2)" >&2; exit 1; }; }
need x264enc gstreamer1.0-plugins-ugly
need avenc_aac gstreamer1.0-libav
need h264parse gstreamer1.0-plugins-bad
need mp4mux gstreamer1.0-plugins-good

seconds=10
fps=30
# Written next to the target and renamed, so that an interrupted run leaves no half file behind.
partial="$file.partial"
gst-launch-1.0 -q \
  mp4mux name=mux faststart=true ! filesink location="$partial" \
  videotestsrc pattern=smpte num-buffers=$((seconds * fps)) \
    ! "video/x-raw,width=1920,height=1080,framerate=$fps/1" \
    ! timeoverlay time-mode=running-time halignment=center valignment=center font-desc="Sans Bold 72" \
    ! videoconvert ! x264enc speed-preset=ultrafast bitrate=4000 key-int-max=$fps threads=2 \
    ! video/x-h264,profile=constrained-baseline ! h264parse ! queue ! mux. \
  audiotestsrc wave=ticks tick-interval=1000000000 sine-periods-per-tick=20 volume=0.8 samplesperbuffer=1024 \
      num-buffers=$((seconds * 48000 / 1024)) \
    ! "audio/x-raw,rate=48000,channels=2" ! audioconvert ! avenc_aac bitrate=128000 ! aacparse ! queue ! mux.
mv "$partial" "$file"
ls -l "$file"
