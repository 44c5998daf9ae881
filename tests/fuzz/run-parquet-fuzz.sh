#!/bin/sh
# Builds the Parquet reader's fuzz target with clang (libFuzzer + ASan + UBSan) and runs it
# for a bounded time on a corpus of the test fixtures (plus ../shared/data when present).
#
#   tests/fuzz/run-parquet-fuzz.sh [SECONDS [WORKDIR]]     (default 60 s, a temporary dir)
#
# Exits 0 when the fuzzer ran for SECONDS without finding anything; non-zero on a crash, a
# sanitizer report, a leak, a timeout or running out of memory (the input that did it is
# left in WORKDIR/artifacts/ and its path printed), and 2 when it cannot build. Needs clang
# and its fuzzer runtime (Debian: clang libclang-rt-14-dev), pkg-config, GLib, libzstd,
# zlib and libsnappy development files.
set -eu

seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-fuzz-parquet.XXXXXX")
fi
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
cc=${CLANG:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "run-parquet-fuzz: $cc not found; install clang and libclang-rt-14-dev" >&2
  exit 2
fi

# The reader's sources, compiled straight into the target (no configure needed: an empty
# config.h stands in for the generated one).
: > "$work/config.h"
srcs="src/data/thrift-compact.c src/data/parquet.c src/data/parquet-footer.c
      src/data/parquet-read.c src/data/parquet-page.c src/data/parquet-levels.c src/data/parquet-codec.c
      src/data/parquet-arrow.c src/core/error.c"
set --
for s in $srcs; do set -- "$@" "$top/$s"; done
# shellcheck disable=SC2046
if ! "$cc" -std=gnu11 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$work" -I"$top/include" -I"$top/src" \
    $(pkg-config --cflags glib-2.0 libzstd zlib) \
    -o "$work/fuzz-parquet" "$here/fuzz-parquet.c" "$@" \
    $(pkg-config --libs glib-2.0 libzstd zlib) -lsnappy; then
  echo "run-parquet-fuzz: cannot build the fuzz target (is libclang-rt-14-dev installed?)" >&2
  exit 2
fi

# Seeds: every Parquet file of the tests, and of ../shared/data beside the checkout.
find "$top/tests/data/parquet" -name '*.parquet' -exec cp {} "$work/seeds/" \;
if [ -d "$top/../shared/data" ]; then
  find "$top/../shared/data" -name '*.parquet' -size -1024k | while read -r f; do
    cp "$f" "$work/seeds/shared-$(echo "$f" | tr '/' '_')"
  done
fi

echo "run-parquet-fuzz: $(ls "$work/seeds" | wc -l) seeds, $seconds s, in $work"
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$work/fuzz-parquet" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -max_len=131072 -print_final_stats=1 \
    -dict="$here/parquet.dict" -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1 || status=$?
tail -n 25 "$work/fuzz.log"
if [ "$status" -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
  echo "run-parquet-fuzz: FAILED (exit $status); inputs that fail:" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
echo "run-parquet-fuzz: no crash in $seconds s"
