#!/usr/bin/env bash
# Regenerates Tandem's media samples from GStreamer test sources, deterministically.
#
#   scripts/make-samples.sh [OUTPUT_DIR]      (default: media-samples)
#
# countdown.webm  40 s, VP8 320x240 @ 30 fps + Opus stereo 48 kHz. The picture shows its own running time
#                 (timeoverlay) over a test pattern; the audio has a short click at every whole second, so a
#                 person can see and hear whether two machines are in sync.
# countdown.opus  40 s Ogg/Opus, the same clicks, audio only.
# short.webm      25 s, same kind as countdown.webm but a different duration ("not the same item" checks).
# not-media.webm  text bytes with a media-looking name (error tests).
#
# Encoders run single-threaded with fixed settings and no dithering; the fields muxers fill from the environment
# (Matroska DateUTC and TrackUIDs, the random Ogg stream serial numbers) are normalised afterwards. Rerunning the
# script gives byte-identical countdown.opus and identical pictures, durations and timing; libopus running inside
# the WebM muxing pipeline has been seen to encode an odd packet differently between runs (same length of audio,
# a different bit or two), so compare WebM files by what they contain, not by checksum.
set -euo pipefail

out="${1:-media-samples}"
mkdir -p "$out"
export GST_DEBUG="${GST_DEBUG:-0}"

need() { gst-inspect-1.0 "$1" >/dev/null 2>&1 || { echo "missing GStreamer element '$1' (install $2)" >&2; exit 1; }; }
need videotestsrc gstreamer1.0-plugins-base
need audiotestsrc gstreamer1.0-plugins-base
need timeoverlay gstreamer1.0-plugins-base
need opusenc gstreamer1.0-plugins-base
need oggmux gstreamer1.0-plugins-base
need vp8enc gstreamer1.0-plugins-good
need webmmux gstreamer1.0-plugins-good

fps=30
clicks='audiotestsrc wave=ticks tick-interval=1000000000 sine-periods-per-tick=20 volume=0.8 samplesperbuffer=960'
audio_caps='audio/x-raw,format=S16LE,layout=interleaved,rate=48000,channels=2'

# $1 output file, $2 duration in seconds
make_opus() {
  local file="$1" seconds="$2"
  local buffers=$((seconds * 50)) # 960-sample buffers at 48 kHz = 20 ms
  gst-launch-1.0 -q \
    $clicks num-buffers="$buffers" ! "$audio_caps" \
      ! audioconvert dithering=none noise-shaping=none ! opusenc bitrate=32000 bitrate-type=cbr ! oggmux ! filesink location="$file"
}

# $1 output file, $2 duration in seconds
make_webm() {
  local file="$1" seconds="$2"
  local frames=$((seconds * fps))
  # The audio starts 10 ms in (and ends 10 ms early): Opus's CodecDelay (6.5 ms) would otherwise put the first
  # audio block before zero, and Chromium, which seeks an Opus file 80 ms early (SeekPreRoll) clamped to that
  # start, then finds no Cue at or before it and fails every seek to the first ~87 ms.
  local buffers=$((seconds * 50 - 1))
  gst-launch-1.0 -q \
    webmmux name=mux writing-app=tandem-make-samples ! filesink location="$file" \
    videotestsrc pattern=smpte num-buffers="$frames" \
      ! "video/x-raw,width=320,height=240,framerate=$fps/1" \
      ! timeoverlay time-mode=running-time halignment=center valignment=center font-desc="Sans Bold 28" \
      ! videoconvert ! vp8enc deadline=0 cpu-used=4 threads=1 target-bitrate=160000 keyframe-max-dist=30 \
      ! queue ! mux. \
    $clicks num-buffers="$buffers" timestamp-offset=10000000 ! "$audio_caps" \
      ! audioconvert dithering=none noise-shaping=none ! opusenc bitrate=32000 bitrate-type=cbr ! queue ! mux.
}

make_webm "$out/countdown.webm" 40
make_webm "$out/short.webm" 25
make_opus "$out/countdown.opus" 40
printf 'This is not a media file.\nTandem uses it to check that bad input gets a clear error.\n' > "$out/not-media.webm"

# Normalise the environment-dependent bytes (see the header).
python3 - "$out/countdown.webm" "$out/short.webm" "$out/countdown.opus" <<'PY'
import sys

def crc_table():
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table

TABLE = crc_table()

def ogg_crc(data):
    crc = 0
    for b in data:
        crc = ((crc << 8) ^ TABLE[((crc >> 24) & 0xFF) ^ b]) & 0xFFFFFFFF
    return crc

def fix_ogg(path):
    data = bytearray(open(path, 'rb').read())
    serials, pos = {}, 0
    while pos + 27 <= len(data) and data[pos:pos + 4] == b'OggS':
        nseg = data[pos + 26]
        size = 27 + nseg + sum(data[pos + 27:pos + 27 + nseg])
        serial = int.from_bytes(data[pos + 14:pos + 18], 'little')
        new = serials.setdefault(serial, 0x7A6D0001 + len(serials))
        data[pos + 14:pos + 18] = new.to_bytes(4, 'little')
        data[pos + 22:pos + 26] = b'\0\0\0\0'
        data[pos + 22:pos + 26] = ogg_crc(data[pos:pos + size]).to_bytes(4, 'little')
        pos += size
    open(path, 'wb').write(data)

def fix_matroska(path):
    data = bytearray(open(path, 'rb').read())
    # DateUTC: element ID 0x4461, size byte 0x88 (8 bytes). Set it to 0 (2001-01-01, the Matroska epoch).
    at = data.find(b'\x44\x61\x88')
    if at >= 0:
        data[at + 3:at + 11] = b'\0' * 8
    # TrackUIDs (0x73C5, 8 bytes) are random: number them, everywhere they are referenced.
    at, number = 0, 1
    while True:
        at = data.find(b'\x73\xc5\x88', at)
        if at < 0:
            break
        uid = bytes(data[at + 3:at + 11])
        data[:] = data.replace(uid, number.to_bytes(8, 'big'))
        at, number = at + 11, number + 1
    open(path, 'wb').write(data)

for path in sys.argv[1:]:
    (fix_ogg if path.endswith('.opus') else fix_matroska)(path)
PY

ls -l "$out"
