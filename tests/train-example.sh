#!/bin/sh
# The README's training command, taken from the README itself, on the bundled example dataset
# (data/example): it must run as written and the policy must learn. The threshold comes from
# the data: predicting the best constant action (the per-dimension median of the normalized
# actions, computed from the closed form in data/make-example.mjs) gives an L1 loss of 0.83
# (0.813 for x, 0.844 for y); after the README's 100 steps a policy that learned something from
# the image and the state must be well below it. We ask for under 0.5 (it reaches about 0.35)
# and for the total loss (L1 + 10 x KL) to have fallen to under a quarter of the first log's.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
readme="$ROBOTRAIN_TEST_SRCDIR/../README"
example="$ROBOTRAIN_TEST_SRCDIR/../data/example"
[ -f "$example/meta/info.json" ] || skip_all "no example dataset at $example"

# The first fenced block, from "robotrain train" to its last continued line.
awk '/^```/ { n++; next } n == 1 { print }' "$readme" |
  sed -n '/^robotrain train /,/[^\\]$/p' >"$T/command"
[ -s "$T/command" ]; tap_result $? "the README's first block has a robotrain train command"
grep -F -q -- '--dataset.root="$(pkg-config --variable=exampledir robotrain)"' "$T/command"
tap_result $? "it trains on the installed example dataset"
# Run it here: the build's robotrain, the source tree's example, a private output folder.
sed -e 's|^robotrain train |"$R" train |' \
  -e 's|"$(pkg-config --variable=exampledir robotrain)"|"$example"|g' \
  -e '$ s|$| --output_dir="$T/run"|' "$T/command" >"$T/run.sh"
# shellcheck disable=SC1090,SC1091 # the command comes from the README
ok_run "the README's command trains" . "$T/run.sh"
contains "a log line at step 100" "$T/out" " step:100 smpl:800 "
contains "the checkpoint" "$T/out" "Checkpoint policy after step 100"
[ -f "$T/run/checkpoints/000100/pretrained_model/model.safetensors" ]
tap_result $? "model.safetensors of step 100"

# The losses of metrics.jsonl: one line per log step (10 of them).
[ "$(wc -l <"$T/run/metrics.jsonl")" -eq 10 ]; tap_result $? "metrics.jsonl: 10 log lines"
field() { sed -n "$1"'{s/.*"'"$2"'": *\([-0-9.eE+]*\).*/\1/p}' "$T/run/metrics.jsonl"; }
first_loss=$(field 1 loss)
last_loss=$(field '$' loss)
last_l1=$(field '$' l1_loss)
echo "# loss $first_loss -> $last_loss, l1_loss at step 100: $last_l1"
awk -v a="$first_loss" -v b="$last_loss" 'BEGIN { exit !(a > 0 && b < a / 4) }'
tap_result $? "the loss falls to under a quarter ($first_loss -> $last_loss)"
awk -v l="$last_l1" 'BEGIN { exit !(l != "" && l < 0.5) }'
tap_result $? "l1_loss $last_l1 < 0.5 (the best constant action gives 0.83)"

# The checkpoint loads back: fine-tuning from it with lr 0 for one step writes the same bytes,
# and its first loss is the trained policy's (a fresh one starts near 0.8).
ok_run "fine-tune from the checkpoint (--policy.path)" "$R" train --dataset.repo_id=robotrain/example \
  "--dataset.root=$example" "--policy.path=$T/run/checkpoints/last/pretrained_model" --policy.push_to_hub=false \
  --use_policy_training_preset=false --optimizer.lr=0 --steps=1 --log_freq=1 "--output_dir=$T/tune"
cmp -s "$T/run/checkpoints/000100/pretrained_model/model.safetensors" \
  "$T/tune/checkpoints/000001/pretrained_model/model.safetensors"
tap_result $? "lr 0: model.safetensors byte for byte the same"
tuned_l1=$(sed -n 's/.*"l1_loss": *\([-0-9.eE+]*\).*/\1/p' "$T/tune/metrics.jsonl")
awk -v l="$tuned_l1" 'BEGIN { exit !(l != "" && l < 0.5) }'
tap_result $? "the loaded policy's l1_loss $tuned_l1 is the trained one's (< 0.5)"
echo "1..$tap_n"
exit $tap_failed
