#!/bin/sh
# bench/bench-dp.sh: data-parallel scaling of robotrain train on this machine's CPUs: 1 process
# vs 2 processes (robotrain launch --cpu, Gloo), 1 thread each, the same batch per process, for
#   small:  the tests' small ACT (dim_model 32, 1+1 layers, chunk 5, resnet18 backbone; 11.2M
#           parameters, 45 MB of f32 gradients);
#   pusht:  ACT's defaults as LeRobot trains PushT (dim_model 512, 8 heads, 4 encoder layers,
#           1 decoder layer, feedforward 3200, chunk 100, VAE; 51.6M parameters, 206 MB of
#           gradients), on data/example (64x64 camera, state/action 2), as PushT's 96x96.
# For each: seconds per step (updt_s, averaged over the second half of the steps), samples per
# second over all processes, and the time per step spent averaging gradients (the "Data
# parallel" summary line of rank 0).
#
#   bench/bench-dp.sh [BUILDDIR [STEPS [BATCH]]]   (defaults . 6 8; STEPS is even)
set -eu
builddir=$(cd "${1:-.}" && pwd)
steps=${2:-6}
batch=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
rt=$builddir/robotrain
[ -x "$rt" ] || { echo "bench-dp.sh: $rt not found: run make first" >&2; exit 2; }
export ROBOTRAIN_PLUGIN_PATH=${ROBOTRAIN_PLUGIN_PATH:-$builddir/plugins/.libs}
data=$here/../data/example
out=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-bench-dp.XXXXXX")
trap 'rm -rf "$out"' EXIT
half=$((steps / 2))
common="--dataset.repo_id=bench/example --dataset.root=$data --policy.type=act --policy.pretrained_backbone_weights=null
  --policy.push_to_hub=false --policy.device=cpu --num_workers=1 --seed=1 --save_checkpoint=false
  --steps=$steps --log_freq=$half --batch_size=$batch"
small="--policy.dim_model=32 --policy.n_heads=2 --policy.dim_feedforward=64 --policy.n_encoder_layers=1
  --policy.n_vae_encoder_layers=1 --policy.chunk_size=5 --policy.n_action_steps=5 --policy.latent_dim=4"
pusht="--policy.chunk_size=100 --policy.n_action_steps=100"

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) core(s) online, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "steps $steps (timings: the last $half), batch $batch per process, 1 thread per process"
printf '%-6s %-5s %10s %10s %12s %s\n' config procs updt_s data_s "samples/s" "gradient sync (rank 0)"
for config in small pusht; do
  eval flags=\$$config
  for n in 1 2; do
    log=$out/$config-$n.log
    if [ $n -eq 1 ]; then
      OMP_NUM_THREADS=1 "$rt" train $common $flags --output_dir="$out/$config-$n" >"$log" 2>&1
    else
      "$rt" launch --cpu --num_processes=$n --num_cpu_threads_per_process=1 --main_process_port=0 -- \
        "$rt" train $common $flags --output_dir="$out/$config-$n" >"$log" 2>&1
    fi
    line=$(grep "step:$steps " "$log" | tail -1)
    updt=$(echo "$line" | sed 's/.*updt_s:\([0-9.]*\).*/\1/')
    dat=$(echo "$line" | sed 's/.*data_s:\([0-9.]*\).*/\1/')
    sps=$(awk -v u="$updt" -v d="$dat" -v b="$batch" -v n="$n" 'BEGIN { printf "%.1f", b * n / (u + d) }')
    sync=$(grep -o "averaging gradients took .*" "$log" | sed 's/averaging gradients took //' || true)
    printf '%-6s %-5s %10s %10s %12s %s\n' "$config" "$n" "$updt" "$dat" "$sps" "${sync:--}"
  done
done
