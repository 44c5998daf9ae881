#!/bin/sh
# Builds the dataset metadata parsers' fuzz target with clang (libFuzzer + ASan + UBSan) and
# runs it for a bounded time on a corpus of the metadata files of the tests and of
# ../shared/data (info.json, stats.json, the JSON lines files, the first lines of a large one).
#
#   tests/fuzz/run-metadata-fuzz.sh [SECONDS [WORKDIR]]     (default 60 s, a temporary dir)
#
# Exits 0 when the fuzzer ran for SECONDS without finding anything; 1 on a crash, a sanitizer
# report, a leak, a timeout or running out of memory (the input is left in WORKDIR/artifacts/
# and listed); 2 when it cannot build. Needs clang and its fuzzer runtime (Debian: clang
# libclang-rt-14-dev), pkg-config, GLib and json-glib development files.
set -eu

seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-fuzz-metadata.XXXXXX")
fi
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
cc=${CLANG:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "run-metadata-fuzz: $cc not found; install clang and libclang-rt-14-dev" >&2
  exit 2
fi

# The parsers' sources, compiled into the target (an empty config.h stands in for configure's).
: > "$work/config.h"
srcs="src/data/meta-json.c src/data/meta-info.c src/data/meta-stats.c src/data/meta-jsonl.c
      src/data/dataset-path.c src/core/error.c"
set --
for s in $srcs; do set -- "$@" "$top/$s"; done
# shellcheck disable=SC2046
if ! "$cc" -std=gnu11 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$work" -I"$top/include" -I"$top/src" \
    $(pkg-config --cflags glib-2.0 json-glib-1.0) \
    -o "$work/fuzz-metadata" "$here/fuzz-metadata.c" "$@" \
    $(pkg-config --libs glib-2.0 json-glib-1.0); then
  echo "run-metadata-fuzz: cannot build the fuzz target (is libclang-rt-14-dev installed?)" >&2
  exit 2
fi

# Seeds: the metadata of the test datasets and of ../shared/data beside the checkout.
i=0
seed() { i=$((i + 1)); cp "$1" "$work/seeds/$i-$(basename "$1")"; }
for f in $(find "$top/tests/data/dataset" -name '*.json' -o -name '*.jsonl'); do seed "$f"; done
shared=${ROBOTRAIN_SHARED_DIR:-$top/../shared}
if [ -d "$shared/data" ]; then
  for f in $(find "$shared/data" \( -name '*.json' -o -name '*.jsonl' \) -size -64k); do seed "$f"; done
  for f in $(find "$shared/data" -name '*.jsonl' -size +64k); do
    i=$((i + 1)); head -n 3 "$f" > "$work/seeds/$i-head-$(basename "$f")"
  done
fi

echo "run-metadata-fuzz: $(ls "$work/seeds" | wc -l) seeds, $seconds s, in $work"
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$work/fuzz-metadata" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -max_len=262144 -print_final_stats=1 \
    -dict="$here/metadata.dict" -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1 || status=$?
tail -n 25 "$work/fuzz.log"
if [ "$status" -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
  echo "run-metadata-fuzz: FAILED (exit $status); inputs that fail:" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
echo "run-metadata-fuzz: no crash in $seconds s"
