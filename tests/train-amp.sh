#!/bin/sh
# robotrain train with mixed precision on the CPU (bf16 and fp16 are emulated there): how
# ROBOTRAIN_MIXED_PRECISION and --policy.use_amp combine, the loss falling in bf16 and fp16,
# fp16 overflow forced by a huge initial loss scale (skipped steps, backed-off scale in the log
# and metrics.jsonl), and an fp16 run resumed across skipped steps identical bit for bit to an
# uninterrupted one.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
data="$ROBOTRAIN_TEST_SRCDIR/data/dataset/tiny-v3"
[ -f "$data/meta/info.json" ] || skip_all "no tiny-v3 dataset"
unset ROBOTRAIN_MIXED_PRECISION ROBOTRAIN_AMP_INIT_SCALE
small="--policy.type=act --policy.pretrained_backbone_weights=null --policy.dim_model=32 --policy.n_heads=2
  --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 --policy.chunk_size=5
  --policy.n_action_steps=5 --policy.latent_dim=4"
run_args="--dataset.repo_id=user/tiny --dataset.root=$data $small --policy.push_to_hub=false --policy.device=cpu
  --batch_size=2 --num_workers=0"
fast="--optimizer.lr=1e-3 --policy.optimizer_lr_backbone=1e-3"

# the average loss of metrics.jsonl's first and last lines
first_loss() { head -n 1 "$1" | sed 's/.*"loss": \([-0-9.e+]*\).*/\1/'; }
last_loss() { tail -n 1 "$1" | sed 's/.*"loss": \([-0-9.e+]*\).*/\1/'; }
falls() { awk -v a="$(first_loss "$2")" -v b="$(last_loss "$2")" 'BEGIN { exit !(b < a) }'
  r=$?; [ $r -eq 0 ] || echo "# loss $(first_loss "$2") -> $(last_loss "$2")"; tap_result $r "$1"; }

# what is refused before anything starts (exit status 2)
ROBOTRAIN_MIXED_PRECISION=fp8 fail_run 2 "an unknown precision" "$R" train --dataset.repo_id=x/y \
  --policy.type=act --policy.push_to_hub=false
contains "names the variable and the choices" "$T/err" "ROBOTRAIN_MIXED_PRECISION=fp8: robotrain trains in no (float32), fp16 or bf16"
ROBOTRAIN_MIXED_PRECISION=no fail_run 2 "use_amp=true against the launcher's no" "$R" train \
  --dataset.repo_id=x/y --policy.type=act --policy.push_to_hub=false --policy.use_amp=true
contains "the conflict, named" "$T/err" "--policy.use_amp=true conflicts with ROBOTRAIN_MIXED_PRECISION=no"
ROBOTRAIN_MIXED_PRECISION=bf16 fail_run 2 "use_amp=false against bf16" "$R" train \
  --dataset.repo_id=x/y --policy.type=act --policy.push_to_hub=false --policy.use_amp=false
contains "the other conflict" "$T/err" "--policy.use_amp=false conflicts with ROBOTRAIN_MIXED_PRECISION=bf16"
ROBOTRAIN_AMP_INIT_SCALE=lots fail_run 2 "a bad initial scale" "$R" train --dataset.repo_id=x/y \
  --policy.type=act --policy.push_to_hub=false
contains "names the knob" "$T/err" "ROBOTRAIN_AMP_INIT_SCALE=lots: the initial loss scale must be a positive number"

# bf16: --policy.use_amp=true on the CPU is autocast's bf16; the loss falls
# shellcheck disable=SC2086 # the argument lists are word lists on purpose
ok_run "bf16 by --policy.use_amp=true" "$R" train $run_args $fast --policy.use_amp=true --steps=8 \
  --log_freq=4 --save_freq=8 "--output_dir=$T/bf16"
contains "says what runs and why" "$T/out" "Mixed precision: bf16 (matmul, linear, conv2d and attention inputs rounded to bfloat16"
contains "the CPU's default" "$T/out" "policy.use_amp=true without ROBOTRAIN_MIXED_PRECISION: autocast's default on the CPU"
falls "bf16: the loss falls" "$T/bf16/metrics.jsonl"
contains "bf16 recorded" "$T/bf16/checkpoints/last/training_state/mixed_precision.json" '"mixed_precision": "bf16"'
contains "use_amp recorded" "$T/bf16/checkpoints/last/pretrained_model/train_config.json" '"use_amp": true,'
! grep -q lscale "$T/out"; tap_result $? "bf16: no loss scaling"

# through robotrain launch: --mixed_precision becomes the variable; its default "no" against an
# explicit --policy.use_amp=true stops the run with the conflict named
# shellcheck disable=SC2086
XDG_CONFIG_HOME="$T/config" ok_run "robotrain launch --mixed_precision=bf16" "$R" launch --mixed_precision=bf16 -- \
  "$R" train $run_args --steps=1 --log_freq=1 --save_checkpoint=false "--output_dir=$T/launched"
contains "the launcher's precision applied" "$T/out" "Mixed precision: bf16"
contains "  and said where it came from" "$T/out" "; ROBOTRAIN_MIXED_PRECISION=bf16"
# shellcheck disable=SC2086
XDG_CONFIG_HOME="$T/config" "$R" launch -- "$R" train $run_args --steps=1 --policy.use_amp=true \
  "--output_dir=$T/conflict" >"$T/out" 2>"$T/err"
[ $? -ne 0 ]; tap_result $? "robotrain launch without --mixed_precision, --policy.use_amp=true: fails"
contains "  naming the conflict" "$T/err" "--policy.use_amp=true conflicts with ROBOTRAIN_MIXED_PRECISION=no"

# fp16 from the launcher's variable (a small initial scale: no overflow at the start)
# shellcheck disable=SC2086
ROBOTRAIN_MIXED_PRECISION=fp16 ROBOTRAIN_AMP_INIT_SCALE=1024 ok_run "fp16 by the variable" "$R" train \
  $run_args $fast --steps=8 --log_freq=4 --save_freq=8 "--output_dir=$T/fp16"
contains "fp16 applied" "$T/out" "Mixed precision: fp16 (matmul, linear, conv2d and attention inputs rounded to float16"
contains "the variable decided" "$T/out" "dynamic loss scaling); ROBOTRAIN_MIXED_PRECISION=fp16"
contains "the scaler's settings" "$T/out" "Loss scaling: initial scale 1024, growth factor 2 every 2000 steps without overflow, backoff 0.5"
contains "scale and skips in the log line" "$T/out" " lscale:"
falls "fp16: the loss falls" "$T/fp16/metrics.jsonl"
contains "the scaler saved" "$T/fp16/checkpoints/last/training_state/mixed_precision.json" '"growth_interval": 2000,'

# fp16 overflow: with an initial scale of 2^40 every scaled gradient is inf in f16, so the first
# steps are skipped and the scale halves each time
# shellcheck disable=SC2086
ROBOTRAIN_MIXED_PRECISION=fp16 ROBOTRAIN_AMP_INIT_SCALE=1099511627776 ok_run "fp16 forced overflow" "$R" \
  train $run_args --steps=2 --log_freq=1 --save_freq=2 "--output_dir=$T/over"
contains "the norm of a skipped step is nan" "$T/out" " grdn:nan lr:1.0e-05"
contains "step 1 skipped, scale halved" "$T/out" " lscale:549755813888 skip:1"
contains "step 2 skipped, halved again" "$T/out" " lscale:274877906944 skip:1"
contains "metrics.jsonl: the skip count" "$T/over/metrics.jsonl" '"skipped_steps": 1.0'
contains "metrics.jsonl: the scale" "$T/over/metrics.jsonl" '"loss_scale": 274877906944.0'
contains "the checkpoint: two skipped" "$T/over/checkpoints/last/training_state/mixed_precision.json" '"skipped_steps": 2'
contains "the checkpoint: its scale" "$T/over/checkpoints/last/training_state/mixed_precision.json" '"scale": 274877906944.0'

# resume across skipped steps: A runs 2 steps and resumes to 5 (without the variables: the
# checkpoint's fp16 and scaler continue), B runs 5 at once; the same weights, optimizer state
# and scaler. From 32768 this data overflows three times, so both sides of the resume skip
# steps and the last ones update.
# shellcheck disable=SC2086
ROBOTRAIN_MIXED_PRECISION=fp16 ROBOTRAIN_AMP_INIT_SCALE=32768 ok_run "fp16: 2 steps" "$R" train $run_args \
  --steps=2 --log_freq=1 --save_freq=2 "--output_dir=$T/a"
ok_run "fp16: resume to 5" "$R" train --resume=true --steps=5 --log_freq=1 \
  "--config_path=$T/a/checkpoints/last/pretrained_model/train_config.json"
contains "resume keeps fp16" "$T/out" "policy.use_amp=true, as the checkpoint trained"
contains "resume restores the scaler" "$T/out" "loss scaler from the checkpoint: scale"
grep -q "step:3 .* skip:1" "$T/out"; tap_result $? "the resumed run skipped a step"
grep -q "step:5 .* skip:0" "$T/out"; tap_result $? "and then updated"
# shellcheck disable=SC2086
ROBOTRAIN_MIXED_PRECISION=fp16 ROBOTRAIN_AMP_INIT_SCALE=32768 ok_run "fp16: 5 steps at once" "$R" train \
  $run_args --steps=5 --log_freq=1 --save_freq=5 "--output_dir=$T/b"
for f in pretrained_model/model.safetensors training_state/optimizer_state.safetensors \
  training_state/mixed_precision.json; do
  cmp -s "$T/a/checkpoints/000005/$f" "$T/b/checkpoints/000005/$f"
  tap_result $? "resumed and uninterrupted fp16 runs: the same $f"
done
echo "1..$tap_n"
exit $tap_failed
