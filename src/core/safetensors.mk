## src/core: sources, tests and pages of this area (see the top-level Makefile.am).

## safetensors: reading (mapped, strictly checked) and writing (atomic) tensor files.
librobotrain_la_SOURCES += \
	src/core/safetensors.c \
	src/core/safetensors-write.c \
	src/core/safetensors-dtype.c \
	src/core/safetensors-json.c \
	src/core/safetensors-json.h \
	src/core/safetensors-private.h
robotraininclude_HEADERS += include/robotrain/safetensors.h

check_PROGRAMS += tests/test-safetensors
TESTS += tests/test-safetensors
tests_test_safetensors_SOURCES = tests/test-safetensors.c
tests_test_safetensors_LDADD = $(RT_TEST_LIBS)
EXTRA_DIST += \
	tests/data/safetensors/README \
	tests/data/safetensors/make-fixtures.py \
	tests/data/safetensors/reference-layout.safetensors \
	tests/data/safetensors/foreign-layout.safetensors
