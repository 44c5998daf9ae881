## src/train: the training loop, checkpoints, schedules, metrics (see the top-level Makefile.am).
librobotrain_la_SOURCES += \
	src/train/amp.c \
	src/train/amp.h \
	src/train/checkpoint.c \
	src/train/checkpoint-load.c \
	src/train/checkpoint.h \
	src/train/checkpoint-private.h \
	src/train/lr-schedule.c \
	src/train/metrics.c \
	src/train/metrics.h \
	src/train/stop.c \
	src/train/train-dist.c \
	src/train/train-dist-step.c \
	src/train/train-dist.h \
	src/train/stop.h \
	src/train/lr-schedule.h \
	src/train/train-options.c \
	src/train/train-file.c \
	src/train/train-options.h \
	src/train/train-run.c \
	src/train/train-run.h \
	src/train/rng-state.c \
	src/train/rng-state.h
robotrain_SOURCES += src/cli/cmd-train.c

check_PROGRAMS += tests/test-train-schedule tests/test-train-options tests/test-train-checkpoint \
	tests/test-train-metrics tests/test-train-rng-state
TESTS += tests/test-train-schedule tests/test-train-options tests/test-train-checkpoint tests/test-train-metrics \
	tests/test-train-rng-state
tests_test_train_schedule_SOURCES = tests/test-train-schedule.c
tests_test_train_schedule_LDADD = $(RT_TEST_LIBS)
tests_test_train_options_SOURCES = tests/test-train-options.c
tests_test_train_options_LDADD = $(RT_TEST_LIBS)
tests_test_train_checkpoint_SOURCES = tests/test-train-checkpoint.c tests/graph-test.h
tests_test_train_checkpoint_LDADD = $(RT_TEST_LIBS)
EXTRA_DIST += tests/data/train/README tests/data/train/lerobot-act-train_config.json \
	tests/data/train/make-rng-state.py tests/data/train/rng-state-1005.safetensors \
	tests/data/train/rng-state-4294967295.safetensors
tests_test_train_metrics_SOURCES = tests/test-train-metrics.c
tests_test_train_metrics_LDADD = $(RT_TEST_LIBS)
tests_test_train_rng_state_SOURCES = tests/test-train-rng-state.c
tests_test_train_rng_state_LDADD = $(RT_TEST_LIBS)

TESTS += tests/train-cli.sh tests/train-docs.sh tests/train-example.sh tests/train-amp.sh
EXTRA_DIST += tests/train-cli.sh tests/train-docs.sh tests/train-example.sh tests/train-amp.sh
check_PROGRAMS += tests/test-train-amp
TESTS += tests/test-train-amp
tests_test_train_amp_SOURCES = tests/test-train-amp.c
tests_test_train_amp_LDADD = $(RT_TEST_LIBS)

## Data-parallel training through the real launcher and Gloo (train-dp.sh), with a comparer of
## checkpoints (dp-compare) built on the project's safetensors reader.
check_PROGRAMS += tests/dp-compare
tests_dp_compare_SOURCES = tests/dp-compare.c
tests_dp_compare_LDADD = $(RT_TEST_LIBS)
TESTS += tests/train-dp.sh
EXTRA_DIST += tests/train-dp.sh
## bench/bench-dp.sh: 1 vs 2 CPU processes (never run by make check)
EXTRA_DIST += bench/bench-dp.sh

RT_MAN_PODS += man/robotrain-train.pod
dist_man_MANS += man/robotrain-train.1
