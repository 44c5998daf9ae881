## src/net/wandb: Weights & Biases client (see the top-level Makefile.am).

## The client (include/robotrain/wandb.h): settings and ~/.netrc, history lines and summary, the
## run folder, libcurl requests, GraphQL upsertBucket/viewer, file_stream, the run with its
## sending thread, and sync of folders written offline.
librobotrain_la_SOURCES += \
	src/net/net-init.c src/net/net-init.h \
	src/net/wandb-private.h \
	src/net/wandb-config.c \
	src/net/wandb-history.c \
	src/net/wandb-store.c \
	src/net/wandb-http.c \
	src/net/wandb-graphql.c \
	src/net/wandb-stream.c \
	src/net/wandb-run.c \
	src/net/wandb-artifact.c \
	src/net/wandb-sync.c
robotraininclude_HEADERS += include/robotrain/wandb.h

## Its tests: the parts that need no server, then the client against the stand-in server
## (tests/servers/wandb-server.py, Python 3 standard library; skipped without python3).
check_PROGRAMS += tests/test-wandb-units tests/test-wandb tests/test-wandb-artifact
TESTS += tests/test-wandb-units tests/test-wandb tests/test-wandb-artifact
tests_test_wandb_units_SOURCES = tests/test-wandb-units.c tests/test-wandb-server.h
tests_test_wandb_units_LDADD = $(RT_TEST_LIBS)
tests_test_wandb_SOURCES = tests/test-wandb.c tests/test-wandb-server.h
tests_test_wandb_LDADD = $(RT_TEST_LIBS)
## artifacts: digests and manifest, then uploads against the stand-in server
tests_test_wandb_artifact_SOURCES = tests/test-wandb-artifact.c tests/test-wandb-server.h
tests_test_wandb_artifact_LDADD = $(RT_TEST_LIBS)
EXTRA_DIST += tests/servers/wandb-server.py

## robotrain train's --wandb.* (the run, metrics at each log step) and `robotrain wandb sync`.
librobotrain_la_SOURCES += src/train/train-wandb.c src/train/train-wandb.h
robotrain_SOURCES += src/cli/cmd-wandb.c
