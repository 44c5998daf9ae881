#!/bin/sh
# robotrain dataset info|show on the generated v3.0 dataset (closed-form values, see
# tests/data/dataset/README) and, when ../shared is there, the real v2.1 episode; the errors;
# every option documented in --help and in robotrain-dataset(1).
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
tiny="$ROBOTRAIN_TEST_SRCDIR/data/dataset/tiny-v3"
pod="$ROBOTRAIN_TEST_SRCDIR/../man/robotrain-dataset.pod"

ok_run "info exits 0" "$ROBOTRAIN" dataset info "$tiny"
contains "info: the version" "$T/out" "version   v3.0"
contains "info: the frame rate" "$T/out" "fps       10"
contains "info: episodes" "$T/out" "episodes  2 (20 to 20 frames each)"
contains "info: frames" "$T/out" "frames    40 (4.0 s)"
contains "info: the camera and its codec" "$T/out" "observation.images.cam           video 96x96, av1, yuv420p, 10 fps"
contains "info: a feature, its shape and type" "$T/out" "observation.state                float32  [2]            STATE"
contains "info: the task" "$T/out" "     0  Move the block to the target."
ok_run "info --stats exits 0" "$ROBOTRAIN" dataset info "$tiny" --stats
contains "info --stats: the state's mean" "$T/out" "mean  52.375 -54.75"
contains "info --stats: the camera's own mean (no ImageNet stats)" "$T/out" "mean  0.485294 0.485294 0.500545"
ok_run "info --json --stats exits 0" "$ROBOTRAIN" dataset info "$tiny" --json --stats
contains "info --json: the version" "$T/out" '"codebase_version" : "v3.0"'
contains "info --json: the camera codec" "$T/out" '"codec" : "av1"'
contains "info --json: a task" "$T/out" '"task" : "Move the block to the target."'
contains "info --json: stats in full precision" "$T/out" '50.020776933190469'

# show: every row of the dataset against the closed form
ok_run "show exits 0" "$ROBOTRAIN" dataset show "$tiny"
# float32(f / 10) printed with %.9g (computed with Python's struct module)
ts="0 0.100000001 0.200000003 0.300000012 0.400000006 0.5 0.600000024 0.699999988 0.800000012 0.899999976 1 1.10000002 1.20000005 1.29999995 1.39999998 1.5 1.60000002 1.70000005 1.79999995 1.89999998"
awk -v ts="$ts" 'BEGIN { split(ts, t, " ");
  for (e = 0; e < 2; e++) for (f = 0; f < 20; f++) {
    x = 100 * e + f / 4; y = -(100 * e + f / 2)
    printf "{\"observation.state\": [%.9g, %.9g], \"action\": [%.9g, %.9g], \"timestamp\": %s, ", x, y, x + 0.125, y - 0.125, t[f + 1]
    printf "\"frame_index\": %d, \"episode_index\": %d, \"index\": %d, \"task_index\": 0}\n", f, e, 20 * e + f } }' >"$T/expect"
cmp -s "$T/expect" "$T/out"; tap_result $? "show prints all 40 rows as the closed form says"
ok_run "show --episode --frames --columns exits 0" "$ROBOTRAIN" dataset show "$tiny" --episode=1 --frames=18: --columns=index,observation.state
printf '{"index": 38, "observation.state": [104.5, -109]}\n{"index": 39, "observation.state": [104.75, -109.5]}\n' >"$T/expect"
cmp -s "$T/expect" "$T/out"; tap_result $? "show: the last two frames of episode 1, two columns in the order asked"
ok_run "show --frames=:1 exits 0" "$ROBOTRAIN" dataset show "$tiny" --frames=:1 --columns=action
printf '{"action": [0.125, -0.125]}\n' >"$T/expect"
cmp -s "$T/expect" "$T/out"; tap_result $? "show --frames=:1: the first row"

# float64 with %.17g, booleans, a negative zero kept
img="$ROBOTRAIN_TEST_SRCDIR/data/dataset/image-v3"
ok_run "show on the image dataset exits 0" "$ROBOTRAIN" dataset show "$img" --frames=3:5 --columns=observation.environment_state,next.done,observation.state
printf '{"observation.environment_state": [1, 1e-300], "next.done": true, "observation.state": [3, -1.5, 0.25]}\n{"observation.environment_state": [1, 1e-300], "next.done": false, "observation.state": [10, -0, 0.25]}\n' >"$T/expect"
cmp -s "$T/expect" "$T/out"; tap_result $? "show: float64, bool and -0 printed exactly"
ok_run "show: a float64 that needs 17 digits" "$ROBOTRAIN" dataset show "$img" --frames=1:2 --columns=observation.environment_state
contains "show: e + f/3 = 1/3 in full" "$T/out" '[0.33333333333333331, 1e-300]'
ok_run "info on the image dataset exits 0" "$ROBOTRAIN" dataset info "$img"
contains "info: the inline images" "$T/out" "observation.image                images 12x8, inline in the data files"
contains "info: the environment state" "$T/out" "observation.environment_state    float64  [2]            ENV"

# errors
fail_run 2 "show: an unknown column is a usage error" "$ROBOTRAIN" dataset show "$tiny" --columns=observation.stat
contains "show: the error suggests the nearest column" "$T/err" "the dataset has no column 'observation.stat'. Did you mean 'observation.state'?"
fail_run 2 "show: a video column is refused" "$ROBOTRAIN" dataset show "$tiny" --columns=observation.images.cam
contains "show: the error says why" "$T/err" "observation.images.cam is a video feature; show prints numeric columns only."
fail_run 2 "show: a bad range is a usage error" "$ROBOTRAIN" dataset show "$tiny" --frames=5:2
contains "show: the error gives the syntax" "$T/err" "--frames=5:2: expected A:B with 0 <= A <= B"
fail_run 2 "show: frames past the end" "$ROBOTRAIN" dataset show "$tiny" --episode=0 --frames=21:
contains "show: the error names the episode's length" "$T/err" "--frames=21: starts after the end of episode 0 (20 frames)."
fail_run 1 "show: an episode the dataset does not have" "$ROBOTRAIN" dataset show "$tiny" --episode=9
contains "show: the error names the range" "$T/err" "episode 9 is not in the dataset"
fail_run 1 "info: a folder without a dataset" "$ROBOTRAIN" dataset info "$T"
contains "info: the error names the file" "$T/err" "meta/info.json: No such file or directory"
fail_run 2 "info without ROOT is a usage error" "$ROBOTRAIN" dataset info
contains "info without ROOT: the error says what is missing" "$T/err" "give one dataset folder (ROOT"
fail_run 2 "an unknown subcommand is a usage error" "$ROBOTRAIN" dataset inf "$tiny"
contains "the error suggests the nearest subcommand" "$T/err" "'inf' is not a subcommand of dataset. Did you mean 'info'?"
fail_run 2 "an unknown flag is a usage error" "$ROBOTRAIN" dataset info "$tiny" --jsn
contains "the error names the flag" "$T/err" "--jsn"
fail_run 2 "no subcommand is a usage error" "$ROBOTRAIN" dataset

# the real v2.1 dataset: 100 episodes listed, episode 29 present
real="$ROBOTRAIN_SHARED_DIR/data/real-v2.1-g1"
if [ -d "$real" ]; then
  ok_run "real v2.1: info reads the metadata of all 100 episodes" "$ROBOTRAIN" dataset info "$real"
  contains "real v2.1: frames" "$T/out" "frames    35965"
  ok_run "real v2.1: show --episode=29" "$ROBOTRAIN" dataset show "$real" --episode=29 --frames=220: --columns=index,frame_index,episode_index,timestamp
  printf '{"index": 10860, "frame_index": 220, "episode_index": 29, "timestamp": 7.33333349}\n' >"$T/expect"
  cmp -s "$T/expect" "$T/out"; tap_result $? "real v2.1: the episode's last row (index 10640 + 220, float32(220/30))"
  fail_run 1 "real v2.1: show without --episode needs every episode's files" "$ROBOTRAIN" dataset show "$real"
  contains "real v2.1: the error names the missing file" "$T/err" "episode_000000.mp4: no such file"
else
  for i in 1 2 3 4 5 6 7; do echo "ok $((tap_n + i)) # SKIP ../shared/data/real-v2.1-g1 is absent"; done
  tap_n=$((tap_n + 7))
fi

# every option is documented in --help and in the page
for sub in info show; do
  "$ROBOTRAIN" dataset $sub --dump-options >"$T/dump" 2>"$T/err"; tap_result $? "dataset $sub --dump-options"
  "$ROBOTRAIN" dataset $sub --help >"$T/help" 2>"$T/err"; tap_result $? "dataset $sub --help"
  for name in $(cut -f1 "$T/dump"); do
    grep -F -q -e "  $name=" -e "  $name[=" "$T/help"; tap_result $? "$name is in 'robotrain dataset $sub --help'"
    grep -F -q -e "B<$name>" "$pod"; tap_result $? "$name is in robotrain-dataset.pod"
  done
done
ok_run "dataset --help exits 0" "$ROBOTRAIN" dataset --help
contains "dataset --help lists show" "$T/out" "show     print the non-video columns"
ok_run "robotrain --help lists dataset" "$ROBOTRAIN" --help
contains "robotrain --help: the dataset line" "$T/out" "dataset    summarize a LeRobot dataset"

plan $tap_n
exit $tap_failed
