#!/bin/sh
# bench/compare-torch.sh: robotrain's CPU kernels and PyTorch's CPU ops on the same shapes,
# side by side.
#
#   bench/compare-torch.sh [--threads N] [--reps R] [--filter TEXT]
#
# Run it from the build directory: it takes the machine's FMA peak from ./bench/bench-kernels
# (BENCH_KERNELS overrides), then runs bench-kernels-torch.py with --lib
# ./.libs/librobotrain.so (LIBROBOTRAIN overrides), which times robotrain's public kernels
# (what the graph executor calls) and PyTorch's ops in one process on the same tensors, the
# repetitions interleaved so that a busy machine slows both alike. The table shows both
# GFLOP/s from the median times, robotrain's % of the peak and the ratio robotrain / PyTorch
# (> 1: robotrain is faster), then the same from the fastest runs: load only ever slows a
# run down, so on a busy machine the fastest runs compare the code, the medians the luck. PYTHON names an interpreter that can import torch (default:
# python3, then /usr/bin/python3).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH_KERNELS:-./bench/bench-kernels}
threads=0
reps=5
filter=
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--reps R] [--filter TEXT]" >&2; exit 2 ;;
  esac
done
lib=${LIBROBOTRAIN:-./.libs/librobotrain.so}
if [ ! -f "$lib" ]; then
  echo "$0: $lib not found: run this from the build directory after make, or set LIBROBOTRAIN" >&2
  exit 1
fi
if [ ! -x "$bench" ]; then
  echo "$0: $bench not found: run this from the build directory after make, or set BENCH_KERNELS" >&2
  exit 1
fi
python=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "$0: no Python interpreter here can import torch (Debian: apt-get install python3-torch; or set PYTHON)" >&2
  exit 1
fi
if [ "$threads" = 0 ]; then
  threads=${OMP_NUM_THREADS:-$(nproc)}
  threads=${threads%%,*}
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-torch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
set -- --threads "$threads" --reps "$reps"
[ -n "$filter" ] && set -- "$@" --filter "$filter"
echo "# measuring the peak with $bench" >&2
"$bench" --threads "$threads" --filter '#peak only#' --tsv "$tmp/peak.tsv" >&2
echo "# PyTorch and robotrain, interleaved" >&2
"$python" "$here/bench-kernels-torch.py" "$@" --lib "$lib" --tsv "$tmp/both.tsv" >&2

cat "$tmp/peak.tsv" "$tmp/both.tsv" | awk -F '\t' -v threads="$threads" '
  $1 == "#peak" { if ($4 > peak) { peak = $4; isa = $2 } next }
  {
    key = $1; impl = $2; g = $4 + 0
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    b = $5 + 0
    if (impl == "robotrain") { ours[key] = g; ours_best[key] = b }
    if (impl == "torch") { torch[key] = g; torch_best[key] = b }
  }
  END {
    printf "# %d thread(s); peak (%s, FMA loop) %.1f GFLOP/s; GFLOP/s of the median and of the fastest run\n", threads, isa, peak
    printf "%-46s %9s %7s %9s %6s   %9s %9s %6s\n", "shape (batch 8)", "robotrain", "%peak", "pytorch", "ratio", "rt best", "pt best", "ratio"
    slower = 0; slower_best = 0; logsum = 0; logsum_best = 0; count = 0
    for (i = 0; i < n; i++) {
      k = order[i]
      if (!(k in ours) || !(k in torch) || torch[k] <= 0 || torch_best[k] <= 0) continue
      ratio = ours[k] / torch[k]; ratio_best = ours_best[k] / torch_best[k]
      printf "%-46s %9.1f %6.1f%% %9.1f %6.2f%s %9.1f %9.1f %6.2f%s\n", k, ours[k], 100 * ours[k] / peak, torch[k], ratio, ratio < 1 ? "<" : " ", ours_best[k], torch_best[k], ratio_best, ratio_best < 1 ? "<" : " "
      count++; logsum += log(ratio); logsum_best += log(ratio_best)
      if (ratio < 1) slower++
      if (ratio_best < 1) slower_best++
    }
    if (count > 0)
      printf "# %d shapes: geometric mean ratio %.2f (medians), %.2f (fastest runs); robotrain slower on %d, %d (marked <)\n", count, exp(logsum / count), exp(logsum_best / count), slower, slower_best
  }'
