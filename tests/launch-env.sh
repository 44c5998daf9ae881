#!/bin/sh
# robotrain launch: the environment each worker sees (1, 2 and 3 processes; machine rank 1 of
# 2), values from the launch configuration and flags over it, output prefixing. The workers are
# tests/launch-worker, which writes what it sees into a folder.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
worker="$ROBOTRAIN_TEST_BUILDDIR/launch-worker"
unset CUDA_VISIBLE_DEVICES ROBOTRAIN_RUN_ID
export XDG_CONFIG_HOME="$T/config"
# has_line NAME FILE LINE: FILE holds LINE as a whole line
has_line() { grep -x -F -q -- "$3" "$2"; hl=$?; [ $hl -eq 0 ] || { echo "# '$2' lacks the line: $3"; sed 's/^/#   /' "$2"; }; tap_result $hl "$1"; }
value() { sed -n "s/^$2=//p" "$1"; }

# ---- one process, every default
mkdir "$T/one"
ok_run "one process runs" "$ROBOTRAIN" launch -- "$worker" --dir="$T/one"
e="$T/one/env.0"
has_line "  RANK=0" "$e" "RANK=0"
has_line "  LOCAL_RANK=0" "$e" "LOCAL_RANK=0"
has_line "  WORLD_SIZE=1" "$e" "WORLD_SIZE=1"
has_line "  LOCAL_WORLD_SIZE=1" "$e" "LOCAL_WORLD_SIZE=1"
has_line "  GROUP_RANK=0" "$e" "GROUP_RANK=0"
has_line "  GROUP_WORLD_SIZE=1" "$e" "GROUP_WORLD_SIZE=1"
has_line "  MASTER_ADDR=127.0.0.1" "$e" "MASTER_ADDR=127.0.0.1"
has_line "  MASTER_PORT=29500 (the default)" "$e" "MASTER_PORT=29500"
has_line "  ROBOTRAIN_MIXED_PRECISION=no" "$e" "ROBOTRAIN_MIXED_PRECISION=no"
has_line "  OMP_NUM_THREADS from the launcher's (1 in make check)" "$e" "OMP_NUM_THREADS=1"
has_line "  CUDA_VISIBLE_DEVICES left alone (unset)" "$e" "CUDA_VISIBLE_DEVICES unset"
has_line "  no hosted store for one process" "$e" "ROBOTRAIN_STORE_HOSTED unset"
has_line "  its own process group" "$e" "pgid=self"
has_line "  stdin is /dev/null" "$e" "stdin=/dev/null"
contains "  the launcher says what it starts" "$T/err" "robotrain launch: 1 worker (rank 0 of 1) on machine 0 of 1, distributed_type no, mixed precision no, 1 CPU thread(s) each"

# ---- two processes
mkdir "$T/two"
ok_run "two processes run" "$ROBOTRAIN" launch --num_processes=2 --main_process_port=0 --mixed_precision=bf16 \
  --num_cpu_threads_per_process=3 -- "$worker" --dir="$T/two"
for r in 0 1; do
  has_line "  rank $r: RANK=$r" "$T/two/env.$r" "RANK=$r"
  has_line "  rank $r: LOCAL_RANK=$r" "$T/two/env.$r" "LOCAL_RANK=$r"
  has_line "  rank $r: WORLD_SIZE=2" "$T/two/env.$r" "WORLD_SIZE=2"
  has_line "  rank $r: LOCAL_WORLD_SIZE=2" "$T/two/env.$r" "LOCAL_WORLD_SIZE=2"
  has_line "  rank $r: ROBOTRAIN_MIXED_PRECISION=bf16" "$T/two/env.$r" "ROBOTRAIN_MIXED_PRECISION=bf16"
  has_line "  rank $r: OMP_NUM_THREADS=3" "$T/two/env.$r" "OMP_NUM_THREADS=3"
  has_line "  rank $r: no GPU for a multi-cpu run" "$T/two/env.$r" "CUDA_VISIBLE_DEVICES="
  has_line "  rank $r: the launcher hosts the store" "$T/two/env.$r" "ROBOTRAIN_STORE_HOSTED=1"
done
port0=$(value "$T/two/env.0" MASTER_PORT)
port1=$(value "$T/two/env.1" MASTER_PORT)
[ -n "$port0" ] && [ "$port0" != 0 ] && [ "$port0" = "$port1" ]; tap_result $? "  --main_process_port=0: both see the same picked port ($port0)"
[ "$(value "$T/two/env.0" ROBOTRAIN_STORE_PORT)" = "$port0" ]; tap_result $? "  ROBOTRAIN_STORE_PORT is MASTER_PORT"
id0=$(value "$T/two/env.0" ROBOTRAIN_RUN_ID)
[ -n "$id0" ] && [ "$id0" = "$(value "$T/two/env.1" ROBOTRAIN_RUN_ID)" ]; tap_result $? "  both have the same run id ($id0)"
contains "  the launcher notes the inferred distributed type" "$T/err" "2 processes and 0 GPU(s) visible: distributed_type multi-cpu (instead of no, the default of launch.distributed_type)"
contains "  ... and where the rendezvous is" "$T/err" "rendezvous hosted at 127.0.0.1:$port0"

# ---- three processes, --cpu
mkdir "$T/three"
ok_run "three processes with --cpu" "$ROBOTRAIN" launch --cpu --num_processes 3 --main_process_port=0 -- "$worker" --dir="$T/three"
for r in 0 1 2; do
  has_line "  rank $r: RANK=$r, LOCAL_RANK=$r" "$T/three/env.$r" "LOCAL_RANK=$r"
  has_line "  rank $r: WORLD_SIZE=3" "$T/three/env.$r" "WORLD_SIZE=3"
done
pids=$(cat "$T/three/pid.0" "$T/three/pid.1" "$T/three/pid.2" | sort -u | wc -l)
[ "$pids" -eq 3 ]; tap_result $? "  three distinct processes"

# ---- machine rank 1 of 2: ranks are offset, the store is machine 0's
mkdir "$T/m1"
ok_run "machine rank 1 of 2" "$ROBOTRAIN" launch --cpu --num_machines=2 --machine_rank=1 --num_processes=4 \
  --main_process_ip=10.1.2.3 --main_process_port=29888 -- "$worker" --dir="$T/m1"
[ -f "$T/m1/env.2" ] && [ -f "$T/m1/env.3" ] && [ ! -f "$T/m1/env.0" ]; tap_result $? "  runs ranks 2 and 3 only"
has_line "  rank 2: LOCAL_RANK=0" "$T/m1/env.2" "LOCAL_RANK=0"
has_line "  rank 3: LOCAL_RANK=1" "$T/m1/env.3" "LOCAL_RANK=1"
has_line "  rank 3: WORLD_SIZE=4" "$T/m1/env.3" "WORLD_SIZE=4"
has_line "  rank 3: LOCAL_WORLD_SIZE=2" "$T/m1/env.3" "LOCAL_WORLD_SIZE=2"
has_line "  rank 3: GROUP_RANK=1" "$T/m1/env.3" "GROUP_RANK=1"
has_line "  rank 3: GROUP_WORLD_SIZE=2" "$T/m1/env.3" "GROUP_WORLD_SIZE=2"
has_line "  rank 3: MASTER_ADDR is machine 0" "$T/m1/env.3" "MASTER_ADDR=10.1.2.3"
has_line "  rank 3: MASTER_PORT=29888" "$T/m1/env.3" "MASTER_PORT=29888"
has_line "  rank 3: the run id all machines share" "$T/m1/env.3" "ROBOTRAIN_RUN_ID=default"
contains "  the launcher names the ranks" "$T/err" "2 workers (ranks 2-3 of 4) on machine 1 of 2, distributed_type multi-cpu, rendezvous at 10.1.2.3:29888"

# ---- values from the launch configuration, and flags over them
conf="$XDG_CONFIG_HOME/robotrain/launch.conf"
mkdir -p "${conf%/*}"
printf '[launch]\ndistributed_type=multi-cpu\nnum_processes=2\nmixed_precision=fp16\nmain_process_port=0\nnum_cpu_threads_per_process=2\n' >"$conf"
mkdir "$T/file"
ok_run "the default file is read" "$ROBOTRAIN" launch -- "$worker" --dir="$T/file"
has_line "  num_processes=2 from the file" "$T/file/env.1" "WORLD_SIZE=2"
has_line "  mixed_precision=fp16 from the file" "$T/file/env.0" "ROBOTRAIN_MIXED_PRECISION=fp16"
has_line "  num_cpu_threads_per_process=2 from the file" "$T/file/env.0" "OMP_NUM_THREADS=2"
mkdir "$T/over"
ok_run "flags override the file" "$ROBOTRAIN" launch --num_processes=3 --mixed_precision=bf16 -- "$worker" --dir="$T/over"
has_line "  --num_processes=3 wins" "$T/over/env.2" "WORLD_SIZE=3"
has_line "  --mixed_precision=bf16 wins" "$T/over/env.0" "ROBOTRAIN_MIXED_PRECISION=bf16"
has_line "  the file's other values stay" "$T/over/env.0" "OMP_NUM_THREADS=2"
mkdir "$T/single"
ok_run "--num_processes=1 over a multi-cpu file" "$ROBOTRAIN" launch --num_processes=1 -- "$worker" --dir="$T/single"
has_line "  one process" "$T/single/env.0" "WORLD_SIZE=1"
contains "  ... noted" "$T/err" "one process: distributed_type no (instead of multi-cpu, $conf: [launch] distributed_type)"
other="$T/other.conf"
printf '[launch]\nmixed_precision=bf16\n' >"$other"
mkdir "$T/cf"
ok_run "--config_file reads another file" "$ROBOTRAIN" launch --config_file="$other" -- "$worker" --dir="$T/cf"
has_line "  ... its values" "$T/cf/env.0" "ROBOTRAIN_MIXED_PRECISION=bf16"
has_line "  ... and not the default file's" "$T/cf/env.0" "WORLD_SIZE=1"
rm "$conf"

# ---- the program's own arguments are left alone
mkdir "$T/args"
ok_run "arguments after the program are the program's" "$ROBOTRAIN" launch "$worker" --dir="$T/args" --exit=0
[ -f "$T/args/env.0" ]; tap_result $? "  ... even without --"

# ---- --prefix_output
mkdir "$T/prefix"
ok_run "--prefix_output" "$ROBOTRAIN" launch --prefix_output --cpu --num_processes=2 --main_process_port=0 -- \
  "$worker" --dir="$T/prefix" --print=hello
has_line "  rank 0's stdout line" "$T/out" "[rank 0] hello from rank 0"
has_line "  rank 1's stdout line" "$T/out" "[rank 1] hello from rank 1"
has_line "  a last line without newline gets one" "$T/out" "[rank 1] hello without newline"
has_line "  stderr goes to stderr" "$T/err" "[rank 0] hello on stderr"
! grep -q 'on stderr' "$T/out"; tap_result $? "  ... and not to stdout"
n=$(grep -c '^\[rank' "$T/out")
[ "$n" -eq 4 ]; tap_result $? "  every stdout line is prefixed, none is mixed ($n lines)"
plan $tap_n
exit $tap_failed
