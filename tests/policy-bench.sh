#!/bin/sh
# robotrain policy bench: a tiny ACT for two timed steps prints its report (the parameter count
# that policy info gives for the same features, the step count, times that agree with each other),
# and bad flags are usage errors that name the flag.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
tiny="--policy.type=act --policy.dim_model=32 --policy.n_heads=2 --policy.dim_feedforward=64
 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 --policy.chunk_size=5 --policy.n_action_steps=5
 --policy.latent_dim=4 --policy.push_to_hub=false"

# shellcheck disable=SC2086 # $tiny is several flags on purpose
ok_run "a tiny ACT, two timed steps" "$R" policy bench $tiny --cameras=2 --image_shape=3x32x40 --state_dim=3 \
  --action_dim=4 --batch_size=2 --steps=2 --warmup=1 --threads=1
cp "$T/out" "$T/bench"
contains "the inputs" "$T/bench" "batch: 2 samples of 2 camera(s) 3x32x40, state 3, action 4"
contains "the thread count" "$T/bench" "threads: 1"
contains "the step count" "$T/bench" "steps: 2 timed after 1 warm-up"
grep -E -q '^loss: [0-9.e+-]+ at the first step, [0-9.e+-]+ at the last$' "$T/bench"
tap_result $? "a finite loss at the first and the last step"

# the same features through policy info: the same parameter count
cams='"observation.images.cam0": {"type": "VISUAL", "shape": [3, 32, 40]}, "observation.images.cam1": {"type": "VISUAL", "shape": [3, 32, 40]}'
# shellcheck disable=SC2086
ok_run "policy info of the same configuration" "$R" policy info $tiny \
  "--policy.input_features={$cams, \"observation.state\": {\"type\": \"STATE\", \"shape\": [3]}}" \
  '--policy.output_features={"action": {"type": "ACTION", "shape": [4]}}'
want=$(sed -n 's/^policy act: \([0-9,]*\) parameters.*/\1/p' "$T/out" | tr -d ,)
got=$(sed -n 's/^policy: act, \([0-9]*\) parameters.*/\1/p' "$T/bench")
[ -n "$want" ] && [ "$want" = "$got" ]; tap_result $? "the parameter count of policy info ($want; bench: $got)"

# min <= median <= max, all positive, and samples/s = batch / median (to the printed digits)
awk '
  /^s\/step: median/ { gsub(",", ""); med = $3; lo = $5; hi = $7 }
  /^samples\/s:/ { rate = $2 }
  END { ok = lo > 0 && lo <= med && med <= hi && rate > 0
        ok = ok && (rate - 2 / med) ^ 2 <= (0.006 + 0.00006 * 2 / med ^ 2) ^ 2
        exit !ok }' "$T/bench"
tap_result $? "s/step min <= median <= max and samples/s = batch / median"

# without state, a VAE-less policy: still runs
# shellcheck disable=SC2086
ok_run "no state, no VAE" "$R" policy bench $tiny --policy.use_vae=false --image_shape=3x16x16 --state_dim=0 \
  --batch_size=1 --steps=1 --warmup=0 --threads=1
contains "no state in the inputs" "$T/out" "batch: 1 samples of 1 camera(s) 3x16x16, state 0, action 2"

# usage errors name the flag
# shellcheck disable=SC2086
fail_run 2 "--image_shape with two sizes" "$R" policy bench $tiny --image_shape=3x96
contains "names the flag and the form" "$T/err" \
  "robotrain policy: --image_shape=3x96: expected CHANNELSxHEIGHTxWIDTH, three positive sizes such as 3x96x96"
# shellcheck disable=SC2086
fail_run 2 "--image_shape with a zero" "$R" policy bench $tiny --image_shape=3x0x96
contains "names the value" "$T/err" "--image_shape=3x0x96: expected CHANNELSxHEIGHTxWIDTH"
# shellcheck disable=SC2086
fail_run 2 "--image_shape with a sign" "$R" policy bench $tiny --image_shape=3x-9x96
contains "names the value" "$T/err" "--image_shape=3x-9x96: expected"
# shellcheck disable=SC2086
fail_run 2 "--batch_size=0" "$R" policy bench $tiny --batch_size=0
contains "names the flag" "$T/err" "batch_size"
# shellcheck disable=SC2086
fail_run 2 "--steps=many" "$R" policy bench $tiny --steps=many
contains "names the flag" "$T/err" "steps"
# shellcheck disable=SC2086
fail_run 2 "--policy.input_features is refused" "$R" policy bench $tiny '--policy.input_features={}'
contains "says what to give instead" "$T/err" \
  "--policy.input_features: the benchmark makes the features from --cameras, --image_shape, --state_dim and --action_dim"
fail_run 2 "no policy" "$R" policy bench --steps=1
contains "asks for --policy.type" "$T/err" "bench needs a policy: --policy.type=NAME"
fail_run 2 "an unknown flag" "$R" policy bench --policy.type=act --camera=2
contains "names the flag" "$T/err" "camera"
# a configuration the policy refuses: exit 1 with the policy's message
# shellcheck disable=SC2086
fail_run 1 "heads that do not divide dim_model" "$R" policy bench $tiny --policy.n_heads=3
contains "the policy's message" "$T/err" "n_heads"

plan $tap_n
exit $tap_failed
