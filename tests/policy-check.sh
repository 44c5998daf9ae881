#!/bin/sh
# robotrain policy check against every reference case of ../shared/golden (LeRobot's own ACT run
# in PyTorch; see its README): every loss, output, intermediate, gradient and inference result
# must lie within the README's limits. The cases and their 11 MB backbone file are not in the
# tarball (tests/data/act/README): without ../shared this test skips.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
golden=$ROBOTRAIN_SHARED_DIR/golden
[ -d "$golden" ] || skip_all "no reference cases: $golden is absent"
cases=
for f in "$golden"/*.safetensors; do
  # a case has a policy config in its metadata; backbone files have none
  head -c 65536 "$f" | grep -a -q '"config"' && cases="$cases $f"
done
[ -n "$cases" ] || skip_all "no case files in $golden"

for f in $cases; do
  name=$(basename "$f" .safetensors)
  ok_run "$name matches LeRobot" "$R" policy check --case="$f"
  contains "$name: every tensor compared" "$T/out" "0 outside their limits, 0 not produced"
  grep -q '^ok   grad\.model\.backbone\.conv1\.weight ' "$T/out"; tap_result $? "$name: a backbone gradient is compared"
  grep -q '^ok   infer\.select_action ' "$T/out"; tap_result $? "$name: the selected action is compared"
  grep -q '^ok   loss\.total .*max_abs .*rel ' "$T/out"; tap_result $? "$name: errors are printed per tensor"
done

# the check can fail: ten thousand times tighter limits
set -- $cases
fail_run 1 "limits 10^4 times tighter fail" "$R" policy check --case="$1" --tolerance=0.0001
grep -q '^FAIL ' "$T/out"; tap_result $? "the failing tensors are marked"
contains "and counted" "$T/err" "tensors outside their limits"

# the backbone file is looked for beside the case
cp "$1" "$T/alone.safetensors"
fail_run 1 "a case without its backbone file" "$R" policy check --case="$T/alone.safetensors"
contains "says where it looked" "$T/err" "the backbone file of $T/alone.safetensors"
contains "(beside the case)" "$T/err" "it is looked for beside the case"
fail_run 1 "a file that is no case" "$R" policy check --case="$golden/resnet18_backbone_s7.safetensors"
contains "says why" "$T/err" "no __metadata__ entry 'config': not a policy case file"
fail_run 1 "a missing file" "$R" policy check --case="$T/none.safetensors"
contains "names it" "$T/err" "$T/none.safetensors"
fail_run 2 "--case is required" "$R" policy check
contains "asks for it" "$T/err" "--case"

plan $tap_n
exit $tap_failed
