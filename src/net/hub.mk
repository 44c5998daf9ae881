## src/net: the Hugging Face Hub client (download into the shared cache, push a model), its tests
## and the loopback Hub stand-in they run against (see the top-level Makefile.am).
librobotrain_la_SOURCES += \
	src/net/hub-private.h \
	src/net/hub-json.h \
	src/net/hub-config.c \
	src/net/hub-http.c \
	src/net/hub-errors.c \
	src/net/hub-api.c \
	src/net/hub-cache.c \
	src/net/hub-download.c \
	src/net/hub-snapshot.c \
	src/net/hub-dataset.c \
	src/net/hub-upload.c \
	src/net/hub-modelcard.c \
	src/net/hub-progress.c \
	src/net/hub-weights.c
robotraininclude_HEADERS += include/robotrain/hub.h

## Tests: the C programs start tests/servers/hub-server.py (Python 3 standard library) on
## 127.0.0.1 and skip only when python3 is missing.
RT_HUB_TEST_SOURCES = tests/servers/hub-server.h

check_PROGRAMS += tests/test-hub-config
TESTS += tests/test-hub-config
tests_test_hub_config_SOURCES = tests/test-hub-config.c
tests_test_hub_config_LDADD = $(RT_TEST_LIBS)

check_PROGRAMS += tests/test-hub-download
TESTS += tests/test-hub-download
tests_test_hub_download_SOURCES = tests/test-hub-download.c $(RT_HUB_TEST_SOURCES)
tests_test_hub_download_CPPFLAGS = $(AM_CPPFLAGS) $(CURL_CFLAGS)
tests_test_hub_download_LDADD = $(RT_TEST_LIBS) $(CURL_LIBS)

check_PROGRAMS += tests/test-hub-push
TESTS += tests/test-hub-push
tests_test_hub_push_SOURCES = tests/test-hub-push.c $(RT_HUB_TEST_SOURCES)
tests_test_hub_push_CPPFLAGS = $(AM_CPPFLAGS) $(CURL_CFLAGS)
tests_test_hub_push_LDADD = $(RT_TEST_LIBS) $(CURL_LIBS)

EXTRA_DIST += tests/servers/hub-server.py tests/servers/README

## robotrain train's use of the Hub (the dataset by repo id, --policy.push_to_hub) and
## `robotrain push`: kept apart from the training loop, which calls in through small hooks.
librobotrain_la_SOURCES += src/train/train-hub.c src/train/train-hub.h
robotrain_SOURCES += src/cli/cmd-push.c

## The CLI end to end against both loopback servers (train by Hub id, offline, push, W&B).
TESTS += tests/net-cli.sh
EXTRA_DIST += tests/net-cli.sh

## Only rank 0 downloads: rt_train_hub_dataset_folder() with two ranks in two threads.
check_PROGRAMS += tests/test-train-hub
TESTS += tests/test-train-hub
tests_test_train_hub_SOURCES = tests/test-train-hub.c $(RT_HUB_TEST_SOURCES)
tests_test_train_hub_CPPFLAGS = $(AM_CPPFLAGS) $(CURL_CFLAGS)
tests_test_train_hub_LDADD = $(RT_TEST_LIBS) $(CURL_LIBS)
