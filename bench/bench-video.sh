#!/bin/sh
# bench/bench-video.sh: random-access decoding of a 480x640 AV1 video encoded the way LeRobot
# encodes (libsvtav1, yuv420p, g=2, crf=30, preset 12), with 1 and 2 loader threads.
#   bench/bench-video.sh [BUILDDIR] [SECONDS]    (BUILDDIR holds bench/bench-video; default .)
# Needs ffmpeg with an AV1 encoder: libsvtav1 (LeRobot's), else libaom-av1 or librav1e.
set -eu
builddir=${1:-.}
seconds=${2:-3}
bench=$builddir/bench/bench-video
[ -x "$bench" ] || { echo "bench-video.sh: $bench not found: run make first" >&2; exit 2; }
command -v ffmpeg >/dev/null || { echo "bench-video.sh: ffmpeg not found" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-bench-video.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
if echo "$encoders" | grep -q libsvtav1; then
  codec="-c:v libsvtav1 -crf 30 -preset 12 -svtav1-params fast-decode=0"; name=libsvtav1
elif echo "$encoders" | grep -q libaom-av1; then
  codec="-c:v libaom-av1 -crf 30 -b:v 0 -cpu-used 8 -row-mt 1"; name=libaom-av1
elif echo "$encoders" | grep -q librav1e; then
  codec="-c:v librav1e -qp 80 -speed 10"; name=librav1e
else
  echo "bench-video.sh: this ffmpeg has no AV1 encoder" >&2; exit 2
fi

# 10 s at 30 fps of FFmpeg's moving test pattern. At crf 30 it takes ~8.5 KB a frame, like a
# real LeRobot camera (shared/data/real-v2.1-g1: 640x480 AV1, ~8.8 KB a frame); added noise
# would make frames larger and slower to decode than real ones.
video=$tmp/bench-480x640.mp4
ffmpeg -hide_banner -loglevel error -f lavfi -i "testsrc2=size=640x480:rate=30:duration=10" \
  $codec -pix_fmt yuv420p -g 2 "$video" 2>/dev/null
echo "video: 640x480 (HxW 480x640), 30 fps, 300 frames, AV1 by $name (yuv420p, g=2, crf=30), $(wc -c <"$video") bytes"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) core(s) online"
for threads in 1 2; do
  "$bench" --threads=$threads --seconds="$seconds" "$video"
done
"$bench" --threads=1 --seconds="$seconds" --sequential "$video"
# FFmpeg's own decoder on one thread, decoding every frame in order: the ceiling per core.
ffmpeg -hide_banner -nostdin -benchmark -threads 1 -i "$video" -f null - 2>&1 |
  awk '/^bench: utime/ { split($2, u, "="); sub("s", "", u[2]);
       printf "ffmpeg -threads 1, all 300 frames in order: %.0f frames per CPU-second (decode only)\n", 300 / u[2] }'
