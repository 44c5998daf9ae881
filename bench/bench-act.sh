#!/bin/sh
# bench/bench-act.sh: ACT's full training step (forward, backward, gradient clipping, AdamW) in
# robotrain (`robotrain policy bench`) and in PyTorch (bench/bench-act-torch.py, a model of the
# same architecture), side by side, for three settings:
#
#   golden  the small configuration of ../shared/golden (dim_model 64, 4 heads, feed-forward 128,
#           2 encoder layers, 1 decoder layer, 2 VAE layers, latent 8, chunk 10, dropout 0;
#           one 3x64x64 camera, state 6, action 6, batch 4)
#   pusht   LeRobot's default ACT, one 3x96x96 camera, state 2, action 2, batch 8
#   aloha   LeRobot's default ACT, one 3x480x640 camera, state 14, action 14, batch 8
#
#   bench/bench-act.sh [--threads "1 2"] [--steps N] [--warmup N] [--reps R] [--configs "golden pusht aloha"]
#
# Run it from the build directory (ROBOTRAIN overrides ./robotrain; the policy module comes from
# ./plugins/.libs unless ROBOTRAIN_PLUGIN_PATH is set). PYTHON names an interpreter that can
# import torch (default: python3, then /usr/bin/python3). Each setting and thread count runs
# robotrain and PyTorch R times, alternately, so that a busy machine slows both alike; the table
# shows the median of the runs' median step times, samples/s from it, the fastest step of all
# runs, and the ratio PyTorch time / robotrain time (> 1: robotrain is faster). The parameter
# counts of both must agree (the same architecture); a mismatch is marked.
#
# OMP_WAIT_POLICY: both sides use libgomp, whose threads spin at every barrier by default; on a
# machine whose cores other work shares, a spinning thread holds a core the other thread needs,
# and both programs run several times slower, erratically. Unless OMP_WAIT_POLICY is set, this
# script sets it to PASSIVE for both (say OMP_WAIT_POLICY=ACTIVE for a quiet, dedicated machine).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
threads="1 2"
steps=5
warmup=1
reps=1
configs="golden pusht aloha"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    *) echo "usage: $0 [--threads \"1 2\"] [--steps N] [--warmup N] [--reps R] [--configs \"golden pusht aloha\"]" >&2
       exit 2 ;;
  esac
done
robotrain=${ROBOTRAIN:-./robotrain}
if [ ! -x "$robotrain" ]; then
  echo "$0: $robotrain not found: run this from the build directory after make, or set ROBOTRAIN" >&2
  exit 1
fi
ROBOTRAIN_PLUGIN_PATH=${ROBOTRAIN_PLUGIN_PATH:-$PWD/plugins/.libs}
export ROBOTRAIN_PLUGIN_PATH
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export OMP_WAIT_POLICY
python=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$p" -c 'import torch, torchvision' 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "$0: no Python interpreter here can import torch and torchvision (Debian: apt-get install python3-torch python3-torchvision; or set PYTHON)" >&2
  exit 1
fi

# config NAME: the flags of both programs for that setting (ACT's option names are the same)
config() {
  case "$1" in
    golden) echo "--dim_model=64 --n_heads=4 --dim_feedforward=128 --n_encoder_layers=2 --n_decoder_layers=1
      --n_vae_encoder_layers=2 --latent_dim=8 --chunk_size=10 --n_action_steps=10 --dropout=0.0 --kl_weight=10
      | --cameras=1 --image_shape=3x64x64 --state_dim=6 --action_dim=6 --batch_size=4" ;;
    pusht) echo "| --cameras=1 --image_shape=3x96x96 --state_dim=2 --action_dim=2 --batch_size=8" ;;
    aloha) echo "| --cameras=1 --image_shape=3x480x640 --state_dim=14 --action_dim=14 --batch_size=8" ;;
    *) echo "$0: unknown setting '$1' (golden, pusht or aloha)" >&2; exit 2 ;;
  esac
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-act.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
echo "# robotrain policy bench vs bench/bench-act-torch.py (PyTorch $torch_version), OMP_WAIT_POLICY=$OMP_WAIT_POLICY," \
  "$steps timed steps after $warmup warm-up, $reps run(s) each, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $configs; do
  spec=$(config "$c")
  policy=${spec%%|*}
  data=${spec#*|}
  rt_policy=$(for f in $policy; do printf ' --policy.%s' "${f#--}"; done)
  for t in $threads; do
    for r in $(seq "$reps"); do
      for impl in rt pt; do
        out="$tmp/$c.$t.$impl.$r"
        echo "# $c, $t thread(s), run $r: $impl" >&2
        # shellcheck disable=SC2086 # the flag lists are several arguments on purpose
        if [ "$impl" = rt ]; then
          "$robotrain" policy bench --policy.type=act --policy.push_to_hub=false $rt_policy $data \
            --steps="$steps" --warmup="$warmup" --threads="$t" >"$out" || { cat "$out" >&2; exit 1; }
        else
          "$python" "$here/bench-act-torch.py" $policy $data --steps="$steps" --warmup="$warmup" \
            --threads="$t" >"$out" || { cat "$out" >&2; exit 1; }
        fi
        sed 's/^/#   /' "$out" >&2
      done
    done
  done
done

# one line per setting and thread count from the reports
for c in $configs; do
  for t in $threads; do
    for impl in rt pt; do
      for f in "$tmp/$c.$t.$impl".*; do
        awk -v c="$c" -v t="$t" -v impl="$impl" '
          /^policy:/ { params = $3 }
          /^batch:/ { batch = $2 }
          /^s\/step:/ { gsub(",", ""); med = $3; lo = $5 }
          END { print c, t, impl, params, batch, med, lo }' "$f"
      done
    done
  done
done | awk '
  {
    key = $1 " " $2
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    k = key " " $3
    params[k] = $4; batch[key] = $5
    runs[k] = runs[k] " " $6
    if (!(k in best) || $7 < best[k]) best[k] = $7
  }
  function median(list,   v, m, i, j, x) {
    m = split(list, v, " ")
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  END {
    printf "%-7s %3s %11s %9s %9s %8s  %9s %9s %8s  %6s %6s\n", "setting", "thr", "parameters", "rt s/step",
      "rt smp/s", "rt best", "pt s/step", "pt smp/s", "pt best", "pt/rt", "best"
    for (i = 0; i < n; i++) {
      key = order[i]; split(key, kv, " ")
      rt = median(runs[key " rt"]); pt = median(runs[key " pt"])
      same = params[key " rt"] == params[key " pt"] ? "" : " (PyTorch: " params[key " pt"] "!)"
      printf "%-7s %3s %11s %9.4f %9.2f %8.4f  %9.4f %9.2f %8.4f  %6.2f %6.2f%s\n", kv[1], kv[2],
        params[key " rt"], rt, batch[key] / rt, best[key " rt"], pt, batch[key] / pt, best[key " pt"], pt / rt,
        best[key " pt"] / best[key " rt"], same
    }
  }'
