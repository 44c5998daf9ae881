#!/bin/sh
# robotrain launch: what is refused before anything starts, and how it is said. Every refusal
# must leave the worker unstarted (it would write its pid into the folder).
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
worker="$ROBOTRAIN_TEST_BUILDDIR/launch-worker"
export XDG_CONFIG_HOME="$T/config"
unset CUDA_VISIBLE_DEVICES
mkdir "$T/w"
# refused STATUS NAME TEXT ARGS...: robotrain launch ARGS -- worker exits with STATUS, prints
# TEXT on stderr and starts no worker
refused() {
  want=$1; name=$2; text=$3; shift 3
  fail_run "$want" "$name" "$ROBOTRAIN" launch "$@" -- "$worker" --dir="$T/w"
  contains "  ... saying: $text" "$T/err" "$text"
  [ -z "$(ls "$T/w")" ]; tap_result $? "  ... before starting anything"
}

# ---- usage errors
refused 2 "a mistyped flag" "robotrain launch: unknown option '--num_proceses'. Did you mean '--num_processes'?" \
  --num_proceses=2
refused 2 "a bad value" "robotrain launch: --mixed_precision: 'fp8' is not allowed; expected one of no, fp16, bf16" \
  --mixed_precision=fp8
refused 2 "a flag without its value" "robotrain launch: --num_processes needs a value" --num_processes
refused 2 "--multi_gpu with --cpu" "robotrain launch: --multi_gpu and --cpu exclude each other" --multi_gpu --cpu
fail_run 2 "no program" "$ROBOTRAIN" launch --num_processes=2
contains "  ... saying what to give" "$T/err" "robotrain launch: give the program to launch, e.g. robotrain launch --num_processes=2 -- robotrain train"
fail_run 2 "only --" "$ROBOTRAIN" launch --
contains "  ... the same" "$T/err" "give the program to launch"

# ---- the program
fail_run 1 "a program not in PATH" "$ROBOTRAIN" launch train --steps=10
contains "  ... saying the program is looked up in PATH, and the documented form" "$T/err" \
  "robotrain launch: 'train' was not found in PATH; the program to launch is any executable, looked up in PATH (to train: robotrain launch [options] -- robotrain train [options])"
fail_run 1 "a path that does not exist" "$ROBOTRAIN" launch "$T/nothing"
contains "  ... naming it" "$T/err" "robotrain launch: '$T/nothing' does not exist"

# ---- GPUs (this test runs where no GPU is visible)
export ROBOTRAIN_PLUGIN_PATH="$ROBOTRAIN_TEST_BUILDDIR/../plugins"
refused 1 "--multi_gpu without a GPU" \
  "robotrain launch: --multi_gpu: multi-gpu runs one process per GPU, but no GPU is visible on this machine:" \
  --multi_gpu --num_processes=2
refused 1 "--gpu_ids=0,1 without a GPU" \
  "robotrain launch: --gpu_ids=0,1 names GPUs, but no GPU is visible on this machine:" --gpu_ids=0,1
grep -q -e "CUDA reports no device" -e "this robotrain has no CUDA backend" "$T/err"; tap_result $? "  ... and why"
refused 1 "--gpu_ids with --cpu" "robotrain launch: --gpu_ids=0: the workers run on CPUs (distributed_type no, from --cpu)" \
  --cpu --gpu_ids=0
printf '[launch]\ndistributed_type=multi-gpu\nnum_processes=2\n' >"$T/g.conf"
refused 1 "a multi-gpu file without a GPU" "robotrain launch: $T/g.conf: [launch] distributed_type: multi-gpu runs one process per GPU, but no GPU is visible" \
  --config_file="$T/g.conf"

# ---- impossible settings
refused 1 "machine_rank >= num_machines" \
  "robotrain launch: --machine_rank: machine_rank = 2 must be less than num_machines (2, from --num_machines); machine ranks count from 0" \
  --cpu --num_machines=2 --machine_rank=2 --num_processes=2 --main_process_ip=10.0.0.1
refused 1 "num_processes not divisible by num_machines" \
  "robotrain launch: --num_processes: num_processes = 3 is the total over all machines and must be a multiple of num_machines (2, from --num_machines)" \
  --cpu --num_machines=2 --num_processes=3 --main_process_ip=10.0.0.1
refused 1 "two machines without main_process_ip" \
  "robotrain launch: --num_machines: num_machines = 2 needs main_process_ip, the address of machine rank 0" \
  --cpu --num_machines=2 --num_processes=2
refused 1 "port 0 over two machines" \
  "robotrain launch: --main_process_port: main_process_port = 0 picks a free port on machine rank 0, which the other machines cannot know" \
  --cpu --num_machines=2 --num_processes=2 --main_process_ip=10.0.0.1 --main_process_port=0

# ---- the configuration file
refused 1 "a --config_file that does not exist" "robotrain launch: $T/none.conf: No such file or directory" \
  --config_file="$T/none.conf"
printf '[launch]\nnum_processes=two\n' >"$T/bad.conf"
refused 1 "a bad file" "robotrain launch: $T/bad.conf: [launch] num_processes: 'two' is not an integer" \
  --config_file="$T/bad.conf"

# ---- a rendezvous port that is taken
mkdir "$T/first"
"$ROBOTRAIN" launch --cpu --num_processes=2 --main_process_port=0 -- "$worker" --dir="$T/first" --sleep=-1 \
  >"$T/first.out" 2>"$T/first.err" &
first=$!
i=0; while [ ! -s "$T/first/pid.1" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n 's/.*rendezvous hosted at 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/first.err")
[ -n "$port" ]; tap_result $? "a first run holds port $port"
refused 1 "a second run on the same port" "robotrain launch: cannot host the rendezvous on port $port (main_process_port):" \
  --cpu --num_processes=2 --main_process_port="$port"
contains "  ... saying how to get a free one" "$T/err" "with --main_process_port=0 the launcher picks a free port"
kill -TERM "$first"; wait "$first"

plan $tap_n
exit $tap_failed
