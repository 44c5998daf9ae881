#!/bin/sh
# bench/bench-train.sh: `robotrain train` end to end (dataset, loader, video decoding, the
# training step, logging) for LeRobot's default ACT with a batch of 8, on CPU threads:
#
#   example  data/example as it ships (v3.0, 8 episodes, 340 frames, one 64x64 AV1 camera,
#            state and action 2)
#   pusht    a PushT-like copy of it: the same episodes with the camera re-encoded at 96x96
#            (PushT's size; LeRobot's AV1 settings), state and action 2
#
#   bench/bench-train.sh [--threads "1 2"] [--steps N] [--warmup N] [--workers "0 1"] [--datasets "example pusht"]
#
# Run it from the build directory (ROBOTRAIN overrides ./robotrain; the policy module comes from
# ./plugins/.libs unless ROBOTRAIN_PLUGIN_PATH is set). Each run trains N steps (--log_freq=1,
# no checkpoint) and reads the output folder's metrics.jsonl: the first --warmup steps are left
# out; "e2e" is the samples per second between the logs of step warmup and step N (everything the
# loop does), data_s and updt_s the means of the trainer's own split of those steps (waiting for
# the batch; the graph step with the copy of the batch into it), "other" what the loop spends
# besides (logging, metrics.jsonl).
# --workers are the trainer's --num_workers (loader threads; 0 decodes in the training thread).
#
# PyTorch's side is the update only: bench/bench-act-torch.py (a PyTorch model of the same
# architecture) timing its training step on a random batch held in memory, the same shapes and
# thread count, no data loading; compare it with updt_s. PYTHON names an interpreter that can
# import torch (default python3, then /usr/bin/python3); without one, that column is empty.
# OMP_WAIT_POLICY is set to PASSIVE unless given (see bench-act.sh: spinning threads on a shared
# machine make every figure erratic).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
threads="1 2"
steps=10
warmup=2
workers="0 1"
datasets="example pusht"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --datasets) datasets=$2; shift 2 ;;
    *) echo "usage: $0 [--threads \"1 2\"] [--steps N] [--warmup N] [--workers \"0 1\"] [--datasets \"example pusht\"]" >&2
       exit 2 ;;
  esac
done
if [ "$warmup" -lt 1 ] || [ "$steps" -le "$warmup" ]; then
  echo "$0: need --warmup >= 1 (the first logged step starts the clock) and --steps > --warmup" >&2
  exit 2
fi
robotrain=${ROBOTRAIN:-./robotrain}
if [ ! -x "$robotrain" ]; then
  echo "$0: $robotrain not found: run this from the build directory after make, or set ROBOTRAIN" >&2
  exit 1
fi
ROBOTRAIN_PLUGIN_PATH=${ROBOTRAIN_PLUGIN_PATH:-$PWD/plugins/.libs}
export ROBOTRAIN_PLUGIN_PATH
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export OMP_WAIT_POLICY
example=$here/../data/example
[ -f "$example/meta/info.json" ] || { echo "$0: $example/meta/info.json not found" >&2; exit 1; }
python=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$p" -c 'import torch, torchvision' 2>/dev/null; then python=$p; break; fi
done
[ -n "$python" ] || echo "# no Python here imports torch and torchvision: no PyTorch column" >&2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-train.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# make_pusht DIR: data/example with its camera at 96x96
make_pusht() {
  cp -R "$example" "$1"
  video=$1/videos/observation.images.top/chunk-000/file-000.mp4
  encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
  if echo "$encoders" | grep -q libsvtav1; then
    codec="-c:v libsvtav1 -crf 30 -preset 12 -svtav1-params fast-decode=0"
  elif echo "$encoders" | grep -q libaom-av1; then
    codec="-c:v libaom-av1 -crf 30 -b:v 0 -cpu-used 8"
  else
    echo "$0: this ffmpeg has no AV1 encoder, needed for the PushT-like dataset" >&2; return 1
  fi
  # shellcheck disable=SC2086 # $codec is several arguments on purpose
  SVT_LOG=1 ffmpeg -hide_banner -loglevel error -i "$video" -vf scale=96:96:flags=bicubic $codec -pix_fmt yuv420p -g 2 \
    -movflags +faststart "$tmp/scaled.mp4"
  mv "$tmp/scaled.mp4" "$video"
  # info.json: the camera's shape and video size (the tables and stats stay valid)
  sed -e '/"observation.images.top"/,/"is_depth_map"/{
      s/^\( *\)64,$/\196,/
      s/"video.height": 64/"video.height": 96/
      s/"video.width": 64/"video.width": 96/
    }' "$1/meta/info.json" >"$tmp/info.json"
  mv "$tmp/info.json" "$1/meta/info.json"
  grep -q '"video.width": 96' "$1/meta/info.json"
}

echo "# robotrain train, LeRobot's default ACT, batch 8, $steps steps ($warmup left out), OMP_WAIT_POLICY=$OMP_WAIT_POLICY," \
  "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# PyTorch: update only (bench-act-torch.py, a random batch in memory, no data loading)"
printf "%-8s %3s %3s %9s %8s %8s %8s %8s   %9s %8s %7s\n" dataset thr wrk "e2e smp/s" "s/step" "data_s" "updt_s" \
  "other" "pt smp/s" "pt s/st" "pt/updt"
for d in $datasets; do
  case "$d" in
    example) root=$example; shape=3x64x64 ;;
    pusht) root=$tmp/pusht; shape=3x96x96; [ -d "$root" ] || make_pusht "$root" ;;
    *) echo "$0: unknown dataset '$d' (example or pusht)" >&2; exit 2 ;;
  esac
  for t in $threads; do
    pt_line=
    if [ -n "$python" ]; then
      echo "# $d, $t thread(s): PyTorch" >&2
      "$python" "$here/bench-act-torch.py" --image_shape="$shape" --state_dim=2 --action_dim=2 --batch_size=8 \
        --steps=$((steps - warmup)) --warmup="$warmup" --threads="$t" >"$tmp/pt" || { cat "$tmp/pt" >&2; exit 1; }
      sed 's/^/#   /' "$tmp/pt" >&2
      pt_line=$(sed -n 's/^s\/step: median \([0-9.]*\),.*/\1/p' "$tmp/pt")
    fi
    for w in $workers; do
      out=$tmp/out.$d.$t.$w
      echo "# $d, $t thread(s), $w loader thread(s): robotrain train" >&2
      OMP_NUM_THREADS=$t "$robotrain" train --dataset.repo_id=bench/"$d" --dataset.root="$root" --policy.type=act \
        --policy.pretrained_backbone_weights=null --policy.push_to_hub=false --policy.device=cpu --batch_size=8 \
        --steps="$steps" --log_freq=1 --save_checkpoint=false --num_workers="$w" --output_dir="$out" \
        >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
      grep 'step:' "$tmp/log" | sed 's/^/#   /' >&2
      # metrics.jsonl: one JSON object per line; the fields are numbers
      awk -v w="$warmup" -v n="$steps" -v pt="$pt_line" -v d="$d" -v t="$t" -v wk="$w" '
        function field(name,   s) {
          if (!match($0, "\"" name "\": [-0-9.e+]+")) return ""
          s = substr($0, RSTART, RLENGTH); sub(/^[^:]*: /, "", s); return s + 0
        }
        {
          s = field("steps"); tm[s] = field("time")
          if (s > w) { k++; data += field("dataloading_s"); updt += field("update_s") }
          if (s == n) samples = field("samples") }
        END {
          if (!(w in tm) || !(n in tm) || k == 0) { print "metrics.jsonl lacks steps " w " to " n > "/dev/stderr"; exit 1 }
          batch = samples / n
          step = (tm[n] - tm[w]) / (n - w)
          ds = data / k; us = updt / k
          if (pt != "")
            printf "%-8s %3s %3s %9.2f %8.3f %8.3f %8.3f %8.3f   %9.2f %8.3f %7.2f\n", d, t, wk, batch / step, step, ds, us,
              step - ds - us, batch / pt, pt, pt / us
          else
            printf "%-8s %3s %3s %9.2f %8.3f %8.3f %8.3f %8.3f   %9s %8s %7s\n", d, t, wk, batch / step, step, ds, us,
              step - ds - us, "-", "-", "-"
        }' "$out/metrics.jsonl"
    done
  done
done
