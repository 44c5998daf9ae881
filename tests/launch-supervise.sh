#!/bin/sh
# robotrain launch: supervision. A worker killed by SIGKILL or exiting with a status stops the
# run, naming the rank; the other workers get SIGTERM; SIGTERM and SIGINT to the launcher are
# passed on; SIGKILL follows the grace period; nothing is left behind (the workers and the
# children they start write their pids, which must all be gone).
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
worker="$ROBOTRAIN_TEST_BUILDDIR/launch-worker"
export XDG_CONFIG_HOME="$T/config"
unset CUDA_VISIBLE_DEVICES

# wait_files DIR NAME N: waits up to 20 s for DIR/NAME.0 .. DIR/NAME.(N-1)
wait_files() {
  i=0
  while [ $i -lt 200 ]; do
    k=0; all=1
    while [ $k -lt "$3" ]; do [ -s "$1/$2.$k" ] || all=0; k=$((k + 1)); done
    [ $all -eq 1 ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  echo "# timed out waiting for $1/$2.*"; ls "$1" | sed 's/^/#   /'
  return 1
}
# start NAME ARGS...: runs robotrain launch ARGS in the background; $lpid is its pid
start() { name=$1; shift; "$ROBOTRAIN" launch "$@" >"$T/out" 2>"$T/err" & lpid=$!; t0=$(date +%s); }
# finish SECONDS: waits up to SECONDS for the launcher; $status is its exit status (or 999),
# $elapsed the seconds it took
finish() {
  i=0
  while kill -0 "$lpid" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$lpid" 2>/dev/null; then
    echo "# the launcher still runs after $1 s"; kill -KILL "$lpid"; wait "$lpid"; status=999
  else
    wait "$lpid"; status=$?
  fi
  elapsed=$(($(date +%s) - t0))
}
# none_left DIR: no pid of DIR/pid.* and DIR/child.* is alive
none_left() {
  left=
  for f in "$1"/pid.* "$1"/child.*; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    kill -0 "$p" 2>/dev/null && left="$left $p"
  done
  [ -z "$left" ] || { echo "# still alive:$left"; ps -o pid,pgid,stat,args -p "$(echo $left | tr ' ' ,)" | sed 's/^/#   /'; }
  [ -z "$left" ]
}
signal_is() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# ---- SIGKILL of one worker
d="$T/kill"; mkdir "$d"
start kill --cpu --num_processes=3 --main_process_port=0 --grace_period=10 -- "$worker" --dir="$d" --sleep=-1 --child
wait_files "$d" pid 3 && wait_files "$d" child 3; tap_result $? "three workers with a child each are running"
kill -KILL "$(cat "$d/pid.1")"
finish 30
[ "$status" -eq 137 ]; tap_result $? "the launcher exits with 137 (128 + SIGKILL), not 0 (got $status)"
[ "$elapsed" -lt 30 ]; tap_result $? "  ... within 30 s (${elapsed} s)"
contains "  ... naming the rank, its pid and the signal" "$T/err" "robotrain launch: rank 1 (pid $(cat "$d/pid.1")) was killed by signal 9 (SIGKILL); stopping the other workers"
contains "  ... and summing up" "$T/err" "robotrain launch: the run failed: rank 1 (pid $(cat "$d/pid.1")) was killed by signal 9 (SIGKILL)"
signal_is "$d/signal.0" 15 && signal_is "$d/signal.2" 15; tap_result $? "  the other workers got SIGTERM"
none_left "$d"; tap_result $? "  no worker and no child of a worker is left"

# ---- a worker exits with status 3
d="$T/status"; mkdir "$d"
start status --cpu --num_processes=3 --main_process_port=0 -- "$worker" --dir="$d" --sleep=-1 \
  --fail-rank=2 --fail-after=0.5 --fail-status=3
finish 30
[ "$status" -eq 3 ]; tap_result $? "a worker exiting with 3: the launcher exits with 3 (got $status)"
contains "  ... naming the rank and the status" "$T/err" "robotrain launch: rank 2 (pid $(cat "$d/pid.2")) exited with status 3; stopping the other workers"
signal_is "$d/signal.0" 15 && signal_is "$d/signal.1" 15; tap_result $? "  the others got SIGTERM"
[ ! -f "$d/signal.2" ]; tap_result $? "  the failed one was not signalled before it exited"
none_left "$d"; tap_result $? "  nothing is left"

# ---- a worker killed by another signal
d="$T/usr1"; mkdir "$d"
start usr1 --cpu --num_processes=2 --main_process_port=0 -- "$worker" --dir="$d" --sleep=-1 \
  --fail-rank=0 --fail-after=0.2 --fail-signal=10
finish 30
[ "$status" -eq 138 ]; tap_result $? "a worker killed by SIGUSR1: the launcher exits with 138 (got $status)"
contains "  ... naming the signal" "$T/err" "rank 0 (pid $(cat "$d/pid.0")) was killed by signal 10 (SIGUSR1)"

# ---- a worker done early is not a failure
d="$T/early"; mkdir "$d"
start early --cpu --num_processes=2 --main_process_port=0 -- "$worker" --dir="$d" --sleep=1 \
  --fail-rank=1 --fail-after=0 --fail-status=0
finish 30
[ "$status" -eq 0 ]; tap_result $? "a worker that exits 0 early: the others go on, the launcher exits 0 (got $status)"
! grep -q stopping "$T/err"; tap_result $? "  ... and stops nobody"
[ ! -f "$d/signal.0" ]; tap_result $? "  ... rank 0 ran to its end"

# ---- SIGTERM to the launcher is passed on
d="$T/term"; mkdir "$d"
start term --cpu --num_processes=2 --main_process_port=0 -- "$worker" --dir="$d" --sleep=-1 --child
wait_files "$d" pid 2 && wait_files "$d" child 2
kill -TERM "$lpid"
finish 30
[ "$status" -eq 143 ]; tap_result $? "SIGTERM to the launcher: it exits with 143 (got $status)"
signal_is "$d/signal.0" 15 && signal_is "$d/signal.1" 15; tap_result $? "  every worker saw SIGTERM"
contains "  the launcher says so" "$T/err" "robotrain launch: SIGTERM received: sent to the workers"
contains "  ... and how the run ended" "$T/err" "robotrain launch: the run failed: stopped by SIGTERM"
none_left "$d"; tap_result $? "  nothing is left"

# ---- SIGINT is passed on as SIGINT
d="$T/int"; mkdir "$d"
start int --cpu --num_processes=2 --main_process_port=0 -- "$worker" --dir="$d" --sleep=-1
wait_files "$d" pid 2
kill -INT "$lpid"
finish 30
[ "$status" -eq 130 ]; tap_result $? "SIGINT to the launcher: it exits with 130 (got $status)"
signal_is "$d/signal.0" 2 && signal_is "$d/signal.1" 2; tap_result $? "  every worker saw SIGINT"

# ---- workers that ignore SIGTERM get SIGKILL after the grace period
d="$T/grace"; mkdir "$d"
start grace --cpu --num_processes=2 --main_process_port=0 --grace_period=1 -- "$worker" --dir="$d" --sleep=-1 \
  --ignore-signals --child
wait_files "$d" pid 2 && wait_files "$d" child 2
kill -TERM "$lpid"
finish 30
[ "$status" -eq 143 ]; tap_result $? "workers that ignore SIGTERM: the launcher still ends, with 143 (got $status)"
[ "$elapsed" -lt 15 ]; tap_result $? "  ... soon after the grace period of 1 s (${elapsed} s)"
signal_is "$d/signal.0" 15; tap_result $? "  the workers saw SIGTERM first"
contains "  ... then SIGKILL" "$T/err" "robotrain launch: processes are left after the grace period of 1 s: sending SIGKILL"
none_left "$d"; tap_result $? "  nothing is left, the ignoring children neither"

# ---- a second signal kills at once
d="$T/twice"; mkdir "$d"
start twice --cpu --num_processes=2 --main_process_port=0 --grace_period=120 -- "$worker" --dir="$d" --sleep=-1 \
  --ignore-signals
wait_files "$d" pid 2
kill -TERM "$lpid"
wait_files "$d" signal 2
kill -INT "$lpid"
finish 30
[ "$status" -eq 143 ]; tap_result $? "a second signal: the launcher ends at once, with 143 (got $status)"
[ "$elapsed" -lt 30 ]; tap_result $? "  ... long before the grace period of 120 s (${elapsed} s)"
contains "  ... saying so" "$T/err" "robotrain launch: SIGINT received again: killing the workers"
none_left "$d"; tap_result $? "  nothing is left"

# ---- what the workers leave behind is stopped
d="$T/left"; mkdir "$d"
start left --cpu --num_processes=2 --main_process_port=0 --grace_period=5 -- "$worker" --dir="$d" --child
finish 30
[ "$status" -eq 0 ]; tap_result $? "workers that exit 0 leaving a child: the launcher exits 0 (got $status)"
contains "  ... and stops what they left" "$T/err" "robotrain launch: the workers are done, but processes they started remain; stopping them"
none_left "$d"; tap_result $? "  nothing is left"

# ---- the same with --prefix_output (the pipes must not keep the launcher waiting)
d="$T/pipes"; mkdir "$d"
start pipes --cpu --num_processes=2 --main_process_port=0 --prefix_output -- "$worker" --dir="$d" --sleep=-1 --child \
  --print=hi
wait_files "$d" pid 2 && wait_files "$d" child 2
kill -KILL "$(cat "$d/pid.0")"
finish 30
[ "$status" -eq 137 ]; tap_result $? "with --prefix_output, SIGKILL of a worker: exit 137 (got $status)"
contains "  ... its output was copied" "$T/out" "[rank 0] hi from rank 0"
none_left "$d"; tap_result $? "  nothing is left"

plan $tap_n
exit $tap_failed
