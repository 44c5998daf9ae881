#!/bin/sh
# robotrain train on several processes, through the real launcher and Gloo on the CPU:
#   - world-size invariance: 2 processes of batch 3 and 3 processes of batch 2 end with the
#     parameters and AdamW moments of 1 process of batch 6 (dropout and the VAE on, an epoch
#     whose last batch is completed from its start, episodes ending inside batches), within
#     float tolerance; a run with another seed does not (the comparison can fail);
#   - only rank 0 prints, writes metrics.jsonl and checkpoints, laid out as a single process's;
#   - resume of a 2-process run continues it; resuming with the same global batch on 1 process
#     too; another global batch is warned about;
#   - SIGKILL of one worker: the launcher exits non-zero within 30 s naming the rank, and no
#     process is left; SIGTERM to the launcher stops every rank at one step, with a checkpoint;
#   - a worker that cannot reach the store fails within ROBOTRAIN_DDP_TIMEOUT, saying so.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
cmp="$ROBOTRAIN_TEST_BUILDDIR/dp-compare"
data="$ROBOTRAIN_TEST_SRCDIR/../data/example"
[ -f "$data/meta/info.json" ] || skip_all "no data/example dataset"
[ -n "$VALGRIND" ] && skip_all "several training processes under valgrind are too slow"
ls "$ROBOTRAIN_PLUGIN_PATH"/comm-gloo.* >/dev/null 2>&1 || [ -f "$ROBOTRAIN_PLUGIN_PATH/.libs/comm-gloo.so" ] ||
  skip_all "no comm-gloo module in this build"
unset CUDA_VISIBLE_DEVICES ROBOTRAIN_VERBOSE ROBOTRAIN_DDP_BUCKET_MB ROBOTRAIN_DDP_TIMEOUT
export OMP_NUM_THREADS=1

# Episode 0 only (32 frames): 6 batches of 6 per epoch, the 6th completed from the epoch's start.
small="--policy.type=act --policy.pretrained_backbone_weights=null --policy.dim_model=32 --policy.n_heads=2
  --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 --policy.chunk_size=5
  --policy.n_action_steps=5 --policy.latent_dim=4 --policy.push_to_hub=false"
args="--dataset.repo_id=user/example --dataset.root=$data --dataset.episodes=[0] $small --policy.device=cpu
  --num_workers=0 --seed=7 --steps=8 --save_freq=4 --log_freq=2"
launch="$R launch --cpu --main_process_port=0"

# same_state A B: the step-8 checkpoints of runs A and B agree. AdamW's moments carry the
# gradients (rtol 1e-3, plus 1e-3 of each tensor's largest value for sums of rounding noise);
# the weights move by at most lr = 1e-5 a step, and elements whose gradient is rounding noise
# (attention key biases) by a fraction of it, hence the absolute 2e-5.
same_state() {
  "$cmp" "$1/checkpoints/000008/training_state/optimizer_state.safetensors" \
    "$2/checkpoints/000008/training_state/optimizer_state.safetensors" 1e-3 1e-7 1e-3 >"$T/cmp" &&
  "$cmp" "$1/checkpoints/000008/pretrained_model/model.safetensors" \
    "$2/checkpoints/000008/pretrained_model/model.safetensors" 1e-3 2e-5 >>"$T/cmp"
  r=$?; sed 's/^/#   /' "$T/cmp" | tail -4; return $r
}
layout() { (cd "$1" && find . | LC_ALL=C sort); }
loss_at() { grep -o "step:$2 .*" "$1" | sed 's/.* loss:\([0-9.]*\) grdn:\([0-9.]*\).*/\1 \2/'; }

# ---- the reference: one process, batch 6
ok_run "1 process, batch 6" $R train $args --batch_size=6 --output_dir="$T/one"
cp "$T/out" "$T/one.log"
contains "  effective batch 6 x 1" "$T/one.log" "Effective batch size: 6 x 1 = 6"

# ---- 2 processes, batch 3
ok_run "2 processes of batch 3 through robotrain launch" $launch --num_processes=2 -- $R train $args \
  --batch_size=3 --output_dir="$T/two"
cp "$T/out" "$T/two.log"
contains "  effective batch 3 x 2" "$T/two.log" "Effective batch size: 3 x 2 = 6"
contains "  the gradients are averaged in buckets" "$T/two.log" "Data parallel: 2 processes on 1 machine(s), gradients averaged in"
[ "$(grep -c 'End of training' "$T/two.log")" -eq 1 ]; tap_result $? "  only rank 0 prints"
same_state "$T/one" "$T/two"; tap_result $? "  same parameters and AdamW moments as 1 process of batch 6"
[ "$(loss_at "$T/one.log" 8)" = "$(loss_at "$T/two.log" 8)" ]
tap_result $? "  same logged loss and grad norm at step 8 ($(loss_at "$T/two.log" 8))"
[ "$(layout "$T/one")" = "$(layout "$T/two")" ]; tap_result $? "  the output folder is laid out as a single process's"
[ "$(wc -l <"$T/two/metrics.jsonl")" -eq 4 ]; tap_result $? "  metrics.jsonl has one line per log step (written once)"
contains "  training_step.json records 2 processes" "$T/two/checkpoints/000008/training_state/training_step.json" '"num_processes": 2'

# ---- 3 processes, batch 2, with every rank printing
ok_run "3 processes of batch 2 (launch --verbose)" $launch --verbose --num_processes=3 -- $R train $args \
  --batch_size=2 --output_dir="$T/three"
cp "$T/out" "$T/three.log"
same_state "$T/one" "$T/three"; tap_result $? "  same parameters and AdamW moments as 1 process of batch 6"
contains "  ranks 1 and 2 print, marked" "$T/three.log" "[rank 2] step:8 "
[ "$(loss_at "$T/one.log" 8)" = "$(grep -v '\[rank' "$T/three.log" | grep -o 'step:8 .*' |
  sed 's/.* loss:\([0-9.]*\) grdn:\([0-9.]*\).*/\1 \2/')" ]; tap_result $? "  rank 0 logs the averaged loss"

# ---- the comparison can fail: another seed
ok_run "2 processes with another seed" $launch --num_processes=2 -- $R train $args --seed=8 --batch_size=3 \
  --output_dir="$T/seed8"
! same_state "$T/one" "$T/seed8"; tap_result $? "  ... differ from the reference"

# ---- resume
# resume_copy NAME: a copy of the 2-process run without its step-8 checkpoint, to resume at step 4
resume_copy() { cp -r "$T/two" "$T/$1" && rm -rf "$T/$1/checkpoints/000008" "$T/$1/checkpoints/last"; }
resume_copy two-resumed
ok_run "resume the 2-process run at step 4" $launch --num_processes=2 -- $R train \
  --config_path="$T/two-resumed/checkpoints/000004/pretrained_model/train_config.json" --resume=true \
  --output_dir="$T/two-resumed"
contains "  it resumes" "$T/out" "Resuming from $T/two-resumed/checkpoints/000004 at step 4"
[ -f "$T/two-resumed/checkpoints/000008/training_state/optimizer_state.safetensors" ]
tap_result $? "  and writes its step-8 checkpoint"
same_state "$T/two" "$T/two-resumed"; tap_result $? "  and ends where the uninterrupted run ended"
resume_copy two-on-one
ok_run "resume it on 1 process of batch 6 (the same global batch)" $R train \
  --config_path="$T/two-on-one/checkpoints/000004/pretrained_model/train_config.json" --resume=true --batch_size=6 \
  --output_dir="$T/two-on-one"
same_state "$T/two" "$T/two-on-one"; tap_result $? "  continues sample for sample"
contains "  saying the order continues" "$T/out" "the global batch is unchanged (3 x 2 = 6 x 1)"
resume_copy two-other
ok_run "resume it on 1 process of batch 3" $R train \
  --config_path="$T/two-other/checkpoints/000004/pretrained_model/train_config.json" --resume=true \
  --output_dir="$T/two-other"
contains "  warns that the data order changes" "$T/out" "WARNING: the checkpoint's global batch is 3 x 2 = 6 and this run's 3 x 1 = 3"

# ---- SIGKILL of a worker in the middle of training
$launch --num_processes=2 --grace_period=5 -- $R train $args --steps=100000 --save_freq=100000 --log_freq=1 \
  --batch_size=2 --output_dir="$T/kill" >"$T/kill.out" 2>"$T/kill.err" &
lpid=$!
i=0
while ! grep -q "step:2 " "$T/kill.out" 2>/dev/null && [ $i -lt 1200 ] && kill -0 $lpid 2>/dev/null; do
  sleep 0.1; i=$((i + 1))
done
workers=$(ps -o pid= --ppid $lpid)
victim=
for p in $workers; do tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx RANK=1 && victim=$p; done
[ -n "$victim" ]; tap_result $? "a 2-process run is training (workers $(echo $workers); rank 1 is $victim)"
t0=$(date +%s)
[ -n "$victim" ] && kill -KILL "$victim"
i=0
while kill -0 $lpid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $lpid 2>/dev/null; then kill -KILL $lpid; status=999; else wait $lpid; status=$?; fi
elapsed=$(($(date +%s) - t0))
[ "$status" -ne 0 ] && [ "$status" -ne 999 ]; tap_result $? "  SIGKILL of rank 1: the launcher exits non-zero (status $status)"
[ "$elapsed" -lt 30 ]; tap_result $? "  ... within 30 s (${elapsed} s)"
contains "  ... naming rank 1" "$T/kill.err" "rank 1 (pid $victim) was killed by signal 9 (SIGKILL)"
left=
for p in $workers; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -z "$left" ]; tap_result $? "  no worker is left ($left)"

# ---- SIGTERM to the launcher: every rank stops at the same step, rank 0 checkpoints it
$launch --num_processes=2 -- $R train $args --steps=100000 --save_freq=100000 --log_freq=1 \
  --batch_size=2 --output_dir="$T/term" >"$T/term.out" 2>"$T/term.err" &
lpid=$!
i=0
while ! grep -q "step:2 " "$T/term.out" 2>/dev/null && [ $i -lt 1200 ] && kill -0 $lpid 2>/dev/null; do
  sleep 0.1; i=$((i + 1))
done
kill -TERM $lpid
i=0
while kill -0 $lpid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $lpid 2>/dev/null; then kill -KILL $lpid; status=999; else wait $lpid; status=$?; fi
[ "$status" -eq 143 ]; tap_result $? "SIGTERM to the launcher of a 2-process run: exit status 143 (got $status)"
stopped=$(sed -n 's/.*Stopped by SIGTERM at step \([0-9]*\).*/\1/p' "$T/term.out")
[ -n "$stopped" ] && [ -f "$T/term/checkpoints/$(printf '%06d' "$stopped")/training_state/optimizer_state.safetensors" ]
tap_result $? "  rank 0 wrote the checkpoint of the step it stopped at ($stopped)"
[ "$(ls "$T/term/checkpoints" | wc -l)" -eq 2 ]; tap_result $? "  one checkpoint (and last)"

# ---- a worker that cannot reach the store
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 29687)
t0=$(date +%s)
fail_run 1 "a worker with no store to join fails" env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ROBOTRAIN_STORE_HOSTED=1 ROBOTRAIN_DDP_TIMEOUT=2 \
  $R train $args --batch_size=3 --output_dir="$T/nostore"
elapsed=$(($(date +%s) - t0))
[ "$elapsed" -lt 20 ]; tap_result $? "  ... soon after its 2 s timeout (${elapsed} s)"
contains "  ... saying which store it could not join" "$T/err" "rank 1 of 2: joining the run's rendezvous store (ROBOTRAIN_DDP_TIMEOUT=2s)"
contains "  ... and where it was" "$T/err" "127.0.0.1:$port"
[ ! -e "$T/nostore/metrics.jsonl" ]; tap_result $? "  ... and wrote nothing"

plan $tap_n
exit $tap_failed
