#!/bin/sh
# Rewrites the example dataset data/example with data/make-example.mjs (see data/README).
#
#   sh data/regenerate-example.sh           regenerate data/example in place
#   sh data/regenerate-example.sh --check   regenerate into a temporary folder and compare
#                                           byte by byte with data/example (exit 1 if any differ)
#
# Needs node and npm (the pinned writers of data/package.json are installed into a temporary
# folder, never into the tree) and ffmpeg/ffprobe with the libsvtav1 encoder.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
check=no
case ${1-} in
    --check) check=yes ;;
    '') ;;
    *) echo "usage: sh $0 [--check]" >&2; exit 2 ;;
esac

for tool in node npm ffmpeg ffprobe; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$0: $tool is not installed; the generator needs node, npm, ffmpeg and ffprobe" >&2
        exit 1
    fi
done
if ! ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libsvtav1; then
    echo "$0: this ffmpeg has no libsvtav1 encoder (LeRobot's AV1 encoder); install one that has" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-example.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp "$here/make-example.mjs" "$here/package.json" "$work/"
(cd "$work" && npm install --no-audit --no-fund --ignore-scripts --no-package-lock --loglevel=error >/dev/null)
node "$work/make-example.mjs" "$work/example"

if [ "$check" = no ]; then
    rm -rf "$here/example"
    cp -R "$work/example" "$here/example"
    echo "wrote $here/example"
    exit 0
fi

for f in $(cd "$work/example" && find . -type f) $(cd "$here/example" && find . -type f); do
    if ! cmp -s "$work/example/$f" "$here/example/$f"; then
        case $f in
            *.mp4) echo "differs: ${f#./} (encoder output: another SVT-AV1 or FFmpeg version?)" ;;
            *) echo "differs: ${f#./}" ;;
        esac
    fi
done | sort -u >"$work/differences"
if [ -s "$work/differences" ]; then
    cat "$work/differences"
    exit 1
fi
echo "data/example is reproduced byte for byte"
