## src/train: the training loop, checkpoints, schedules, metrics (see the top-level Makefile.am).
librobotrain_la_SOURCES += \
	src/train/json-write.c \
	src/train/json-write.h \
	src/train/lr-schedule.c \
	src/train/lr-schedule.h \
	src/train/train-options.c \
	src/train/train-file.c \
	src/train/train-options.h

check_PROGRAMS += tests/test-train-schedule tests/test-train-options
TESTS += tests/test-train-schedule tests/test-train-options
tests_test_train_schedule_SOURCES = tests/test-train-schedule.c
tests_test_train_schedule_LDADD = $(RT_TEST_LIBS)
tests_test_train_options_SOURCES = tests/test-train-options.c
tests_test_train_options_LDADD = $(RT_TEST_LIBS)
