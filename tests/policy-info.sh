#!/bin/sh
# robotrain policy info: parameter counts and state-dict keys of ACT against LeRobot's, and the
# configuration errors as the command line reports them.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
cam='"observation.images.top": {"type": "VISUAL", "shape": [3, 480, 640]}'
state='"observation.state": {"type": "STATE", "shape": [14]}'
in="--policy.input_features={$cam, $state}"
out='--policy.output_features={"action": {"type": "ACTION", "shape": [14]}}'

# the default configuration: 51,613,582 parameters (spec/lerobot.md §1.10), the keys of LeRobot's state dict
ok_run "policy info of the default ACT" "$R" policy info --policy.type=act "$in" "$out" --keys
contains "51,613,582 parameters" "$T/out" "policy act: 51,613,582 parameters (51.6M) in 153 tensors"
contains "group 0: 40,446,670 in 133 tensors" "$T/out" "optimizer group 0 (default): 40,446,670 in 133 tensors"
contains "group 1: the backbone's 11,166,912" "$T/out" "optimizer group 1 (backbone): 11,166,912 in 20 tensors, lr 1e-05"
contains "71,424 buffer values in 81 tensors" "$T/out" "buffers: 71,424 values in 81 tensors"
contains "234 keys" "$T/out" "state dict: 234 keys"
grep -v '^#' "$ROBOTRAIN_TEST_SRCDIR/data/act/act-state-dict.tsv" >"$T/want"
grep '	' "$T/out" >"$T/keys"
cmp -s "$T/want" "$T/keys"; tap_result $? "every key, shape, kind, optimizer group and state index is LeRobot's"
[ $? -eq 0 ] || diff "$T/want" "$T/keys" | head -10 | sed 's/^/# /'

# another camera and the image size change nothing; no VAE removes its 17,381,440 values
ok_run "two cameras of another size" "$R" policy info --policy.type=act \
  "--policy.input_features={$cam, $state, \"observation.images.wrist\": {\"type\": \"VISUAL\", \"shape\": [3, 96, 128]}}" "$out"
contains "the same count with two cameras" "$T/out" "51,613,582 parameters"
ok_run "without the VAE" "$R" policy info --policy.type=act "$in" "$out" --policy.use_vae=false
contains "51,613,582 - 17,381,440 - 52,224 buffer values" "$T/out" "34,232,142 parameters"
contains "no VAE position table" "$T/out" "buffers: 19,200 values in 80 tensors"
# resnet50 (torchvision: 25,557,032 with its fc of 2,049,000 and 53,120 batch-norm affine values)
# with a dilated last stage: 23,454,912 convolution weights and a 2048-channel projection
ok_run "resnet50 with dilation" "$R" policy info --policy.type=act "$in" "$out" \
  --policy.vision_backbone=resnet50 --policy.replace_final_stride_with_dilation=true
contains "51,613,582 - 11,166,912 - 262,656 + 23,454,912 + 1,049,088" "$T/out" "64,688,014 parameters"
contains "group 1: 23,454,912" "$T/out" "optimizer group 1 (backbone): 23,454,912 in 53 tensors"
# pre-norm adds the encoders' final LayerNorms
ok_run "pre-norm" "$R" policy info --policy.type=act "$in" "$out" --policy.pre_norm=true --keys
contains "2 x 1,024 more" "$T/out" "51,615,630 parameters"
contains "the encoder's final norm" "$T/out" "model.encoder.norm.weight	512	float32	param	0"
contains "the VAE encoder's final norm" "$T/out" "model.vae_encoder.norm.bias	512	float32	param	0"

# a policy config.json, with flags on top
cat >"$T/config.json" <<JSON
{"type": "act", "chunk_size": 10, "n_action_steps": 10, "dim_model": 64, "n_heads": 4,
 "input_features": {$cam, $state}, "output_features": {"action": {"type": "ACTION", "shape": [14]}}}
JSON
ok_run "--config_path" "$R" policy info --config_path="$T/config.json" --policy.n_heads=8
contains "the file's dim_model" "$T/out" "policy act:"
fail_run 1 "a flag that breaks the file's config" "$R" policy info --config_path="$T/config.json" --policy.n_heads=7
contains "names the flag" "$T/err" "embed_dim must be divisible by num_heads: $T/config.json: policy.dim_model is 64 and --policy.n_heads is 7"

# configuration errors name the flags
fail_run 1 "n_action_steps > chunk_size" "$R" policy info --policy.type=act "$in" "$out" --policy.chunk_size=10
contains "the chunk-size rule" "$T/err" "The chunk size is the upper bound for the number of action steps per model invocation: the default of policy.n_action_steps is 100 but --policy.chunk_size is 10"
fail_run 1 "temporal ensembling needs one action step" "$R" policy info --policy.type=act "$in" "$out" --policy.temporal_ensemble_coeff=0.01
contains "the ensembling rule" "$T/err" "\`n_action_steps\` must be 1 when using temporal ensembling (--policy.temporal_ensemble_coeff)"
fail_run 1 "no camera and no environment state" "$R" policy info --policy.type=act "--policy.input_features={$state}" "$out"
contains "LeRobot's message" "$T/err" "You must provide at least one image or the environment state among the inputs"
fail_run 1 "glu" "$R" policy info --policy.type=act "$in" "$out" --policy.feedforward_activation=glu
contains "why glu cannot run" "$T/err" "halving them, while linear2 takes dim_feedforward inputs"
fail_run 2 "not a backbone" "$R" policy info --policy.type=act "$in" "$out" --policy.vision_backbone=vgg16
contains "the backbones" "$T/err" "resnet18"
fail_run 1 "a bad feature object" "$R" policy info --policy.type=act "--policy.input_features={\"a\": 1}" "$out"
contains "names the flag and the feature" "$T/err" "robotrain policy: --policy.input_features: feature 'a': it is a number"
fail_run 2 "no policy type" "$R" policy info --keys
contains "asks for one" "$T/err" "info needs a policy: --policy.type=NAME"
fail_run 2 "an unknown policy" "$R" policy info --policy.type=diffusion
contains "says which were found" "$T/err" "no policy module named 'diffusion'"
fail_run 2 "an unknown subcommand" "$R" policy chek
contains "suggests check" "$T/err" "Did you mean 'check'?"

plan $tap_n
exit $tap_failed
