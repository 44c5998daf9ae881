## src/dist/launcher: robotrain launch and the config questionnaire (see the top-level Makefile.am).
## The launcher's library side (src/dist/launcher.h, not installed): the plan, the GPU probe,
## the hosted rendezvous store, output prefixing, spawning and supervision.
librobotrain_la_SOURCES += \
	src/dist/launcher.h \
	src/dist/launcher-plan.c \
	src/dist/launcher-gpus.c \
	src/dist/launcher-store.c \
	src/dist/launcher-output.c \
	src/dist/launcher-run.c
robotrain_SOURCES += src/cli/cmd-launch.c

## Tests: the plan, the environment, output prefixing (C); the program as users run it, with
## workers that report what they see (shell).
check_PROGRAMS += tests/test-launcher tests/launch-worker tests/launch-store-worker
TESTS += tests/test-launcher
tests_test_launcher_SOURCES = tests/test-launcher.c
tests_test_launcher_LDADD = $(RT_TEST_LIBS)
tests_launch_worker_SOURCES = tests/launch-worker.c
tests_launch_worker_LDADD =
tests_launch_store_worker_SOURCES = tests/launch-store-worker.c
tests_launch_store_worker_LDADD = $(RT_TEST_LIBS)
TESTS += tests/launch-env.sh tests/launch-supervise.sh tests/launch-errors.sh tests/launch-store.sh \
	tests/config-interactive.sh
EXTRA_DIST += tests/launch-env.sh tests/launch-supervise.sh tests/launch-errors.sh tests/launch-store.sh \
	tests/config-interactive.sh

RT_MAN_PODS += man/robotrain-launch.pod
dist_man_MANS += man/robotrain-launch.1
