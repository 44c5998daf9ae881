#!/bin/sh
# robotrain launch hosts the rendezvous store: workers built on librobotrain (robotrain/world.h,
# robotrain/store.h) find it from the environment the launcher gives them, and meet there.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
worker="$ROBOTRAIN_TEST_BUILDDIR/launch-store-worker"
export XDG_CONFIG_HOME="$T/config"
unset ROBOTRAIN_RUN_ID ROBOTRAIN_STORE_PORT MASTER_ADDR MASTER_PORT
for n in 2 3; do
  mkdir "$T/$n"
  ok_run "$n workers meet at the store the launcher hosts on a free port" \
    "$ROBOTRAIN" launch --cpu --num_processes=$n --main_process_port=0 -- "$worker" "$T/$n"
  k=0
  while [ $k -lt $n ]; do
    contains "  rank $k saw every rank" "$T/$n/store.$k" "rank $k of $n, store hosted by the launcher: yes, saw $n ranks"
    k=$((k + 1))
  done
done
# a single worker starts its own store (the launcher hosts none)
mkdir "$T/1"
ok_run "a single worker" "$ROBOTRAIN" launch -- "$worker" "$T/1"
contains "  ... has a store of its own" "$T/1/store.0" "rank 0 of 1, store hosted by the launcher: no, saw 1 ranks"
# a stale run id in the launcher's environment is given to every worker: they still meet
mkdir "$T/id"
ok_run "ROBOTRAIN_RUN_ID reaches the workers and the store" env ROBOTRAIN_RUN_ID=job-7 \
  "$ROBOTRAIN" launch --cpu --num_processes=2 --main_process_port=0 -- "$worker" "$T/id"
contains "  ... rank 1 met rank 0" "$T/id/store.1" "saw 2 ranks"
plan $tap_n
exit $tap_failed
