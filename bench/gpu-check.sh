#!/bin/bash
# bench/gpu-check.sh OUTDIR: the GPU checks, in one run on a machine with an NVIDIA GPU.
#
# Configures a fresh build with CUDA, cuDNN and NCCL required, builds it, runs every GPU test
# (the tests named *cuda*, *nccl* or *gpu*), the CUDA tests again under compute-sanitizer, and
# the GPU benchmarks (bench/ programs named the same way; run with no arguments). Writes into
# OUTDIR: nvidia-smi.txt, env.txt, one log per step, tests/ (the harness's logs) and summary.txt.
# Exits 0 when everything passed; non-zero when a step failed, a GPU test failed, or a GPU test
# skipped although nvidia-smi sees a GPU. Needs no network and asks nothing.
#
# The source is the tree this script sits in; without a generated configure it uses a
# robotrain-*.tar.gz from `make dist` (in the top folder or a _build* folder), or runs autogen.sh
# when autoreconf exists.
# Settings: RT_GPU_CONFIGURE_FLAGS (extra configure flags), RT_GPU_CHECK_BUDGET (the time limit
# in seconds, 480), RT_GPU_CHECK_JOBS (make -j, the number of CPUs).
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
budget=${RT_GPU_CHECK_BUDGET:-480}
jobs=${RT_GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}
summary=$out/summary.txt
failed=0
: > "$summary"

note() { echo "$*" | tee -a "$summary"; }
bad() { note "FAIL: $*"; failed=1; }
# run_step NAME MAX_SECONDS COMMAND...: runs COMMAND with its output in OUTDIR/NAME.log, within
# both MAX_SECONDS and what is left of the budget. Returns the command's status (124: timed out).
run_step() {
  local name=$1 max=$2 left rc
  shift 2
  left=$((budget - SECONDS))
  [ "$left" -lt "$max" ] && max=$left
  if [ "$max" -le 0 ]; then
    echo "no time left in the ${budget}s budget" > "$out/$name.log"
    return 124
  fi
  timeout --kill-after=10 "$max" "$@" > "$out/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "timed out after ${max}s" >> "$out/$name.log"
  return "$rc"
}
finish() {
  note "time: ${SECONDS}s of ${budget}s"
  if [ "$failed" -eq 0 ]; then note "result: PASS"; else note "result: FAIL"; fi
  exit "$failed"
}

# ---- the machine
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1
  nvidia-smi -q >> "$out/nvidia-smi.txt" 2>&1
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  nvidia-smi -L 2>/dev/null | sed 's/^/gpu: /' | tee -a "$summary"
else
  echo "nvidia-smi not found" > "$out/nvidia-smi.txt"
fi
note "gpus seen by nvidia-smi: $gpus"
{
  uname -a
  gcc --version 2>&1 | head -1
  "${NVCC:-/usr/local/cuda/bin/nvcc}" --version 2>&1 | tail -2
  echo "cpus: $jobs"
  git -C "$top" log -1 --format='commit: %H %s' 2>/dev/null
} > "$out/env.txt" 2>&1

# ---- the source, configured in a fresh build directory
build=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-gpu-check.XXXXXX") || { bad "mktemp"; finish; }
trap 'rm -rf "$build"' EXIT
src=$top
if [ ! -x "$src/configure" ]; then
  tarball=$(ls -t "$top"/robotrain-*.tar.gz "$top"/_build*/robotrain-*.tar.gz 2>/dev/null | head -1)
  if [ -n "$tarball" ]; then
    tar -xzf "$tarball" -C "$build" || { bad "unpacking $tarball"; finish; }
    src=$(ls -d "$build"/robotrain-*/ | head -1)
    src=${src%/}
    note "source: $tarball"
  elif command -v autoreconf > /dev/null 2>&1; then
    run_step autogen 120 "$top/autogen.sh" || { bad "autogen.sh (autogen.log)"; finish; }
  else
    bad "no configure, no robotrain-*.tar.gz and no autoreconf: run 'make dist' and put the tarball in $top"
    finish
  fi
fi
mkdir -p "$build/b" || { bad "mkdir $build/b"; finish; }
cd "$build/b" || { bad "cd $build/b"; finish; }
# shellcheck disable=SC2086 # RT_GPU_CONFIGURE_FLAGS is a list of flags
if ! run_step configure 120 "$src/configure" --with-cuda=yes --with-cudnn=yes --with-nccl=yes \
      ${RT_GPU_CONFIGURE_FLAGS:-}; then
  tail -5 "$out/configure.log" >> "$summary"
  bad "configure (configure.log, config.log)"
  cp config.log "$out/" 2>/dev/null
  finish
fi
sed -n '/robotrain .* (plugin ABI/,$p' "$out/configure.log" | grep -E 'CUDA|cuDNN|NCCL' >> "$summary"
cp config.log "$out/"
if ! run_step build 300 make -j"$jobs"; then
  grep -E 'error|Error' "$out/build.log" | head -10 >> "$summary"
  bad "make (build.log)"
  finish
fi
note "build: ok (${SECONDS}s)"

# ---- the GPU tests
# Every test the makefile knows whose name says it needs a GPU.
# shellcheck disable=SC2016 # $(TESTS) is for make
all_tests=$(printf 'rt-print-tests:\n\t@echo $(TESTS)\n' | make -s --no-print-directory -f Makefile -f - rt-print-tests)
gpu_tests=$(for t in $all_tests; do case "$t" in *cuda*|*nccl*|*gpu*) printf '%s ' "$t" ;; esac; done)
gpu_tests=${gpu_tests% }
if [ -z "$gpu_tests" ]; then
  bad "no GPU tests in TESTS ($all_tests)"
  finish
fi
note "gpu tests: $gpu_tests"
run_step check 180 make -j"$jobs" check TESTS="$gpu_tests"
check_rc=$?
mkdir -p "$out/tests"
for t in $gpu_tests; do
  cp "$t.log" "$out/tests/" 2>/dev/null
  result=$(sed -n 's/^:test-result: //p' "$t.trs" 2>/dev/null | sort -u | tr '\n' ' ')
  result=${result% }
  note "test $t: ${result:-NOT RUN}"
  case "$result" in
    PASS) ;;
    SKIP) if [ "$gpus" -gt 0 ]; then bad "$t skipped although nvidia-smi sees $gpus GPU(s): $(grep -m1 'SKIP' "$t.log")"; fi ;;
    *) bad "$t: ${result:-not run} (tests/$(basename "$t").log)" ;;
  esac
done
cp test-suite.log "$out/tests/" 2>/dev/null
[ "$check_rc" -ne 0 ] && [ "$failed" -eq 0 ] && bad "make check exited $check_rc (check.log)"

# ---- the CUDA tests under compute-sanitizer (memcheck: out-of-bounds and misaligned accesses,
# leaks of device memory)
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$sanitizer" ] && [ "$gpus" -gt 0 ]; then
  for t in $gpu_tests; do
    case "$t" in *.sh) continue ;; esac
    name=sanitizer-$(basename "$t")
    if run_step "$name" 120 ./libtool --mode=execute "$sanitizer" --tool memcheck --leak-check full \
         --error-exitcode 1 "./$t"; then
      note "compute-sanitizer $t: ok"
    else
      bad "compute-sanitizer $t ($name.log)"
    fi
  done
else
  note "compute-sanitizer: not run (${sanitizer:-not found}; $gpus GPUs)"
fi

# ---- the GPU benchmarks, when there are any
for b in bench/*; do
  if [ ! -f "$b" ] || [ ! -x "$b" ]; then continue; fi
  case "$b" in *.sh|*.o|*.lo) continue ;; *cuda*|*nccl*|*gpu*) ;; *) continue ;; esac
  name=bench-$(basename "$b")
  if run_step "$name" 120 "./$b"; then
    note "bench $b: ok ($name.log)"
  else
    bad "bench $b ($name.log)"
  fi
done

finish
