## plugins/policy-act: the ACT policy module (see the top-level Makefile.am), the policy interface
## of the library (robotrain/policy.h, src/core/policy*.c), `robotrain policy` and their tests.
robotraininclude_HEADERS += include/robotrain/policy.h
librobotrain_la_SOURCES += \
	src/core/policy.c \
	src/core/policy-config.c \
	src/core/policy-features.c \
	src/core/policy-state.c \
	src/core/policy-check.h \
	src/core/policy-check.c \
	src/core/policy-info.c
robotrain_SOURCES += src/cli/cmd-policy.c src/cli/cmd-policy.h src/cli/cmd-policy-bench.c
robotrain_LDADD += $(LIBM)

plugin_LTLIBRARIES += plugins/policy-act.la
plugins_policy_act_la_SOURCES = \
	plugins/policy-act/act.h \
	plugins/policy-act/act-options.c \
	plugins/policy-act/act-config.c \
	plugins/policy-act/act-pos.c \
	plugins/policy-act/act-model.c \
	plugins/policy-act/act-backbone.c \
	plugins/policy-act/act-transformer.c \
	plugins/policy-act/act-vae.c \
	plugins/policy-act/act-train.c \
	plugins/policy-act/act-infer.c \
	plugins/policy-act/act-select.c \
	plugins/policy-act/act-weights.c \
	plugins/policy-act/act-policy.c
plugins_policy_act_la_LDFLAGS = $(RT_MODULE_FLAGS)
plugins_policy_act_la_LIBADD = librobotrain.la $(GLIB_LIBS) $(LIBM)

## Tests. tests/test-act loads the module from the build tree (ROBOTRAIN_PLUGIN_PATH).
check_PROGRAMS += tests/test-act
TESTS += tests/test-act
tests_test_act_SOURCES = tests/test-act.c tests/graph-test.h
tests_test_act_LDADD = $(RT_TEST_LIBS)
TESTS += tests/policy-info.sh
EXTRA_DIST += tests/policy-info.sh tests/data/act/README tests/data/act/act-state-dict.tsv
TESTS += tests/policy-check.sh tests/policy-bench.sh
EXTRA_DIST += tests/policy-bench.sh
EXTRA_DIST += tests/policy-check.sh
check_PROGRAMS += tests/test-act-check
TESTS += tests/test-act-check
tests_test_act_check_SOURCES = tests/test-act-check.c tests/graph-test.h
tests_test_act_check_LDADD = $(RT_TEST_LIBS)

RT_MAN_PODS += man/robotrain-policy.pod
dist_man_MANS += man/robotrain-policy.1
