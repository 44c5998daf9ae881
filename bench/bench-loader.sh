#!/bin/sh
# bench/bench-loader.sh: training samples per second the loader delivers for an ALOHA-like
# LeRobotDataset v3.0 (one 480x640 AV1 camera encoded the way LeRobot encodes: libsvtav1,
# yuv420p, g=2, crf=30, preset 12; 14-dimensional state and action; fps 50), with ACT's
# request (action chunk 100, MEAN_STD, ImageNet stats), batches of 8, 1 and 2 loader threads;
# then the same on the real v2.1 episode of ../shared/data when it is there.
#
#   bench/bench-loader.sh [BUILDDIR [SECONDS [EPISODES [FRAMES]]]]   (defaults . 5 4 250)
#
# Needs ffmpeg with an AV1 encoder, node and npm: the Parquet tables are written with the npm
# package hyparquet-writer, installed once into ${XDG_CACHE_HOME:-~/.cache}/robotrain-bench
# (the only step that needs the network).
set -eu
builddir=${1:-.}
seconds=${2:-5}
episodes=${3:-4}
frames=${4:-250}
fps=50
here=$(cd "$(dirname "$0")" && pwd)
bench=$builddir/bench/bench-loader
[ -x "$bench" ] || { echo "bench-loader.sh: $bench not found: run make first" >&2; exit 2; }
for tool in ffmpeg node npm; do
  command -v $tool >/dev/null || { echo "bench-loader.sh: $tool not found" >&2; exit 2; }
done

cache=${XDG_CACHE_HOME:-$HOME/.cache}/robotrain-bench
if [ ! -d "$cache/node_modules/hyparquet-writer" ]; then
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund hyparquet-writer@0.17.0 >/dev/null
fi
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
if echo "$encoders" | grep -q libsvtav1; then
  codec="-c:v libsvtav1 -crf 30 -preset 12 -svtav1-params fast-decode=0"; name=libsvtav1
elif echo "$encoders" | grep -q libaom-av1; then
  codec="-c:v libaom-av1 -crf 30 -b:v 0 -cpu-used 8 -row-mt 1"; name=libaom-av1
else
  echo "bench-loader.sh: this ffmpeg has no AV1 encoder" >&2; exit 2
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-bench-loader.XXXXXX")
trap 'rm -rf "$root"' EXIT
# (run from the cache, where node finds the package)
cp "$here/bench-loader-dataset.mjs" "$cache/"
node "$cache/bench-loader-dataset.mjs" "$root" "$episodes" "$frames" "$fps"
# the episodes one after the other in one mp4, as LeRobot's v3 concatenation leaves them
mkdir -p "$root/videos/observation.images.top/chunk-000"
total=$((episodes * frames))
ffmpeg -hide_banner -loglevel error -f lavfi -i "testsrc2=size=640x480:rate=$fps" -frames:v $total \
  $codec -pix_fmt yuv420p -g 2 -movflags +faststart "$root/videos/observation.images.top/chunk-000/file-000.mp4"
echo "dataset: $episodes episodes x $frames frames at $fps fps, state/action 14, camera 480x640 AV1 by $name," \
  "$(wc -c <"$root/videos/observation.images.top/chunk-000/file-000.mp4") bytes of video"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) core(s) online"
for workers in 1 2; do
  "$bench" --workers=$workers --seconds="$seconds" "$root"
done
"$bench" --workers=1 --seconds="$seconds" --no-normalize "$root"

real=${ROBOTRAIN_SHARED_DIR:-$here/../../shared}/data/real-v2.1-g1
if [ -d "$real" ]; then
  echo "real v2.1 episode 29 (640x480 AV1 at 30 fps, state/action 26):"
  for workers in 1 2; do
    "$bench" --workers=$workers --seconds="$seconds" --episodes=29 "$real"
  done
fi
