## bench/: ACT's training step and robotrain train end to end, next to PyTorch (see bench/README).
## Nothing here is built or run by `make check`. BENCH_ARGS passes options to the scripts.
EXTRA_DIST += bench/bench-act.sh bench/bench-act-torch.py bench/bench-train.sh

## `make bench-act`: robotrain policy bench and bench/bench-act-torch.py on three settings, 1 and 2
## threads (BENCH_ARGS: --threads "1 2", --steps N, --warmup N, --reps R, --configs "golden pusht aloha").
bench-act: robotrain$(EXEEXT) plugins/policy-act.la
	$(SHELL) $(top_srcdir)/bench/bench-act.sh $(BENCH_ARGS)

## `make bench-train`: robotrain train on data/example and a PushT-like copy of it (BENCH_ARGS:
## --threads "1 2", --steps N, --warmup N, --workers "0 1", --datasets "example pusht").
bench-train: robotrain$(EXEEXT) plugins/policy-act.la
	$(SHELL) $(top_srcdir)/bench/bench-train.sh $(BENCH_ARGS)
.PHONY: bench-act bench-train
