#!/bin/sh
# robotrain train end to end on the tiny v3.0 dataset (tests/data/dataset/tiny-v3) with a small
# ACT on the CPU: the command line's errors, LeRobot's log lines and checkpoint files, a resumed
# run identical bit for bit to an uninterrupted one, and SIGINT saving a checkpoint.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
data="$ROBOTRAIN_TEST_SRCDIR/data/dataset/tiny-v3"
[ -f "$data/meta/info.json" ] || skip_all "no tiny-v3 dataset"
small="--policy.type=act --policy.pretrained_backbone_weights=null --policy.dim_model=32 --policy.n_heads=2
  --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 --policy.chunk_size=5
  --policy.n_action_steps=5 --policy.latent_dim=4"
run_args="--dataset.repo_id=user/tiny --dataset.root=$data $small --policy.push_to_hub=false --policy.device=cpu
  --batch_size=2 --num_workers=0 --log_freq=1"

# --help, with and without the policy's options
ok_run "--help" "$R" train --help
contains "the train options" "$T/out" "  --steps=INT"
contains "LeRobot's dataset flag" "$T/out" "  --dataset.repo_id=TEXT"
ok_run "--help with a policy" "$R" train --policy.type=act --help
contains "the policy's options" "$T/out" "  --policy.chunk_size=INT"

# what validation refuses, as LeRobot does and beyond
fail_run 2 "no policy" "$R" train --dataset.repo_id=x/y
contains "no policy: the message" "$T/err" "robotrain train: Policy is not configured: give --policy.type=act"
fail_run 2 "push_to_hub without a repo id" "$R" train --dataset.repo_id=x/y --policy.type=act
contains "LeRobot's message" "$T/err" "'repo_id' argument missing. Please specify it to push the model to the hub"
# push_to_hub with a repo id passes validation (tests/net-cli.sh pushes for real): here it stops at the
# dataset, offline and not in the empty cache, before anything is trained or pushed
HF_HUB_OFFLINE=1 HF_HOME="$T/hf" HF_LEROBOT_HOME="$T/cache" fail_run 1 "push_to_hub with a repo id is accepted" \
  "$R" train --dataset.repo_id=x/y --policy.type=act --policy.repo_id=u/m "--output_dir=$T/push"
contains "push_to_hub is not refused" "$T/err" "--dataset.repo_id=x/y: "
# (--policy.use_amp and ROBOTRAIN_MIXED_PRECISION: tests/train-amp.sh)
fail_run 2 "use_amp against the launcher's precision" env ROBOTRAIN_MIXED_PRECISION=no "$R" train \
  --dataset.repo_id=x/y --policy.type=act --policy.push_to_hub=false --policy.use_amp=true
contains "the conflict named" "$T/err" "--policy.use_amp=true conflicts with ROBOTRAIN_MIXED_PRECISION=no"
fail_run 2 "resume without a config path" "$R" train --dataset.repo_id=x/y --policy.type=act \
  --policy.push_to_hub=false --resume=true
contains "resume: the message" "$T/err" "A config_path is expected when resuming a run"
mkdir "$T/exists"
fail_run 2 "an existing output folder" "$R" train --dataset.repo_id=x/y --policy.type=act \
  --policy.push_to_hub=false "--output_dir=$T/exists"
contains "output folder: the message" "$T/err" "Output directory $T/exists already exists and resume is False"
fail_run 2 "an unknown policy type" "$R" train --dataset.repo_id=x/y --policy.type=nosuch
contains "names the type" "$T/err" "nosuch"
fail_run 2 "an unknown flag" "$R" train --dataset.repo_id=x/y --policy.type=act --stepz=3
contains "suggests the flag" "$T/err" "--steps"
HF_HUB_OFFLINE=1 HF_HOME="$T/hf" HF_LEROBOT_HOME="$T/cache" fail_run 1 "a dataset with no local copy, offline" \
  "$R" train --dataset.repo_id=x/y --policy.type=act --policy.push_to_hub=false "--output_dir=$T/nodata"
contains "names the flag" "$T/err" "--dataset.repo_id=x/y: "
contains "says it is offline" "$T/err" "HF_HUB_OFFLINE"
contains "says how to give a local copy" "$T/err" "--dataset.root=FOLDER"

# run A: 2 steps, a checkpoint each
# shellcheck disable=SC2086 # the argument lists are word lists on purpose
ok_run "train 2 steps" "$R" train $run_args --steps=2 --save_freq=1 "--output_dir=$T/a"
contains "LeRobot's log line" "$T/out" " step:1 smpl:2 ep:0 epch:0.05 loss:"
contains "sub-losses" "$T/out" " l1_loss:"
contains "the parameter count" "$T/out" "num_learnable_params="
contains "checkpoint at step 2" "$T/out" "Checkpoint policy after step 2"
contains "the end" "$T/out" "End of training"
for f in 000001/pretrained_model/model.safetensors 000002/pretrained_model/config.json \
  000002/pretrained_model/train_config.json 000002/pretrained_model/policy_preprocessor.json \
  000002/pretrained_model/policy_preprocessor_step_3_normalizer_processor.safetensors \
  000002/pretrained_model/policy_postprocessor.json \
  000002/pretrained_model/policy_postprocessor_step_0_unnormalizer_processor.safetensors \
  000002/training_state/training_step.json 000002/training_state/optimizer_state.safetensors \
  000002/training_state/optimizer_param_groups.json 000002/training_state/robotrain_state.json \
  000002/training_state/rng_state.safetensors; do
  [ -f "$T/a/checkpoints/$f" ]; tap_result $? "checkpoints/$f"
done
[ "$(readlink "$T/a/checkpoints/last")" = 000002 ]; tap_result $? "last -> 000002"
[ "$(wc -l <"$T/a/metrics.jsonl")" -eq 2 ]; tap_result $? "metrics.jsonl: a line per log step"
contains "the policy config" "$T/a/checkpoints/000002/pretrained_model/config.json" '"dim_model": 32,'
contains "the device it ran on" "$T/a/checkpoints/000002/pretrained_model/config.json" '"device": "cpu",'
contains "the preset's lr recorded" "$T/a/checkpoints/000002/pretrained_model/train_config.json" '"lr": 1e-05,'
contains "the step" "$T/a/checkpoints/000002/training_state/training_step.json" '"step": 2,'

# resume A to 3 steps; run B for 3 steps at once: the same weights and optimizer state
ok_run "resume to 3 steps" "$R" train --resume=true --steps=3 \
  "--config_path=$T/a/checkpoints/last/pretrained_model/train_config.json"
contains "resuming" "$T/out" "Resuming from $T/a/checkpoints/last at step 2"
contains "continues at step 3" "$T/out" " step:3 smpl:6 "
# shellcheck disable=SC2086
ok_run "train 3 steps at once" "$R" train $run_args --steps=3 --save_freq=3 "--output_dir=$T/b"
cmp -s "$T/a/checkpoints/000003/pretrained_model/model.safetensors" \
  "$T/b/checkpoints/000003/pretrained_model/model.safetensors"
tap_result $? "resumed and uninterrupted runs: the same weights"
cmp -s "$T/a/checkpoints/000003/training_state/optimizer_state.safetensors" \
  "$T/b/checkpoints/000003/training_state/optimizer_state.safetensors"
tap_result $? "resumed and uninterrupted runs: the same optimizer state"

# SIGINT: the step in progress ends, a checkpoint is written, exit status 130
# shellcheck disable=SC2086
"$R" train $run_args --steps=100000 --save_freq=100000 "--output_dir=$T/c" >"$T/c.out" 2>"$T/c.err" &
pid=$!
i=0
while [ $i -lt 300 ] && ! grep -q " step:1 " "$T/c.out" 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
kill -INT "$pid"
wait "$pid"
rc=$?
cp "$T/c.out" "$T/out"; cp "$T/c.err" "$T/err"
[ "$rc" -eq 130 ]; tap_result $? "SIGINT: exit status 130 (got $rc)"
contains "SIGINT: said so" "$T/out" "Stopped by SIGINT at step"
n=$(sed -n 's/.*Stopped by SIGINT at step \([0-9]*\).*/\1/p' "$T/out")
[ -n "$n" ] && [ -f "$T/c/checkpoints/last/training_state/training_step.json" ]
tap_result $? "SIGINT: a checkpoint"
contains "SIGINT: the checkpoint is of that step" "$T/c/checkpoints/last/training_state/training_step.json" "\"step\": $n,"
echo "1..$tap_n"
exit $tap_failed
