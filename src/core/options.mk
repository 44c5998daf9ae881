## src/core: typed option tables, JSON and key-file configs, the launch configuration, and the
## `robotrain config` command (see the top-level Makefile.am).
librobotrain_la_SOURCES += \
	src/core/options-private.h \
	src/core/options.c \
	src/core/option-value.c \
	src/core/option-args.c \
	src/core/option-help.c \
	src/core/config-json.c \
	src/core/json-write.c \
	src/core/json-write.h \
	src/core/config-keyfile.c \
	src/core/config-write.c \
	src/core/suggest.c \
	src/core/launch-config.c
robotraininclude_HEADERS += include/robotrain/launch-config.h
robotrain_SOURCES += src/cli/cmd-config.c

check_PROGRAMS += tests/test-options tests/test-launch-config
TESTS += tests/test-options tests/test-launch-config
tests_test_options_SOURCES = tests/test-options.c
tests_test_options_LDADD = $(RT_TEST_LIBS)
tests_test_launch_config_SOURCES = tests/test-launch-config.c
tests_test_launch_config_LDADD = $(RT_TEST_LIBS)

TESTS += tests/config-cli.sh tests/config-docs.sh
EXTRA_DIST += tests/config-cli.sh tests/config-docs.sh

RT_MAN_PODS += man/robotrain-config.pod man/robotrain.conf.pod
dist_man_MANS += man/robotrain-config.1 man/robotrain.conf.5
