## src/data: sources, tests and pages of this area (see the top-level Makefile.am).

## The Parquet reader (src/data/parquet.h): footer and page headers in the Thrift compact
## protocol, levels, encodings, codecs (libsnappy, zlib, libzstd), Arrow schema recovery.
librobotrain_la_SOURCES += \
	src/data/thrift-compact.c src/data/thrift-compact.h \
	src/data/parquet.c src/data/parquet.h src/data/parquet-private.h \
	src/data/parquet-footer.c \
	src/data/parquet-read.c \
	src/data/parquet-page.c \
	src/data/parquet-levels.c \
	src/data/parquet-codec.c \
	src/data/parquet-arrow.c

## Its tests: values of files written by other tools, decoder units, malformed input.
check_PROGRAMS += tests/test-parquet
TESTS += tests/test-parquet
tests_test_parquet_SOURCES = tests/test-parquet.c
tests_test_parquet_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-parquet-units
TESTS += tests/test-parquet-units
tests_test_parquet_units_SOURCES = tests/test-parquet-units.c tests/test-parquet-writer.h
tests_test_parquet_units_CPPFLAGS = $(AM_CPPFLAGS) $(ZLIB_CFLAGS)
tests_test_parquet_units_LDADD = $(RT_TEST_LIBS) $(ZLIB_LIBS)
check_PROGRAMS += tests/test-parquet-errors
TESTS += tests/test-parquet-errors
tests_test_parquet_errors_SOURCES = tests/test-parquet-errors.c tests/test-parquet-writer.h
tests_test_parquet_errors_CPPFLAGS = $(AM_CPPFLAGS) $(ZLIB_CFLAGS)
tests_test_parquet_errors_LDADD = $(RT_TEST_LIBS) $(ZLIB_LIBS)
check_PROGRAMS += tests/test-parquet-corrupt
TESTS += tests/test-parquet-corrupt
tests_test_parquet_corrupt_SOURCES = tests/test-parquet-corrupt.c
tests_test_parquet_corrupt_LDADD = $(RT_TEST_LIBS)

RT_PARQUET_FIXTURES = \
	tests/data/parquet/README \
	tests/data/parquet/tiny-v3/data-file-000.parquet \
	tests/data/parquet/tiny-v3/data-zstd-pagev2.parquet \
	tests/data/parquet/tiny-v3/data-plain-uncompressed.parquet \
	tests/data/parquet/tiny-v3/data-duckdb.parquet \
	tests/data/parquet/tiny-v3/tasks.parquet \
	tests/data/parquet/tiny-v3/episodes-file-000.parquet \
	tests/data/parquet/real-v2.1/episode_000029.parquet \
	tests/data/parquet/real-v2.1/episode_000029_stats.json \
	tests/data/parquet/real-v2.1/LICENSE \
	tests/data/parquet/parquet-testing/LICENSE.txt \
	tests/data/parquet/parquet-testing/alltypes_dictionary.parquet \
	tests/data/parquet/parquet-testing/alltypes_plain.parquet \
	tests/data/parquet/parquet-testing/alltypes_plain.snappy.parquet \
	tests/data/parquet/parquet-testing/byte_stream_split.zstd.parquet \
	tests/data/parquet/parquet-testing/concatenated_gzip_members.parquet \
	tests/data/parquet/parquet-testing/datapage_v1-snappy-compressed-checksum.parquet \
	tests/data/parquet/parquet-testing/datapage_v2.snappy.parquet \
	tests/data/parquet/parquet-testing/datapage_v2_empty_datapage.snappy.parquet \
	tests/data/parquet/parquet-testing/delta_length_byte_array.parquet \
	tests/data/parquet/parquet-testing/dict-page-offset-zero.parquet \
	tests/data/parquet/parquet-testing/int32_with_null_pages.parquet \
	tests/data/parquet/parquet-testing/list_columns.parquet \
	tests/data/parquet/parquet-testing/nan_in_stats.parquet \
	tests/data/parquet/parquet-testing/nested_lists.snappy.parquet \
	tests/data/parquet/parquet-testing/null_list.parquet \
	tests/data/parquet/parquet-testing/nulls.snappy.parquet \
	tests/data/parquet/parquet-testing/old_list_structure.parquet \
	tests/data/parquet/parquet-testing/page_v2_empty_compressed.parquet \
	tests/data/parquet/parquet-testing/plain-dict-uncompressed-checksum.parquet \
	tests/data/parquet/parquet-testing/rle-dict-snappy-checksum.parquet \
	tests/data/parquet/parquet-testing/single_nan.parquet \
	tests/data/parquet/parquet-testing/sort_columns.parquet
EXTRA_DIST += $(RT_PARQUET_FIXTURES)

## The fuzz target is not built by `make` or `make check`. `make fuzz` (FUZZ_SECONDS, default
## 60) builds it with clang -fsanitize=fuzzer and runs it on the fixtures; CI calls
## tests/fuzz/run-parquet-fuzz.sh SECONDS directly.
FUZZ_SECONDS = 60
fuzz: fuzz-parquet
fuzz-parquet:
	$(SHELL) $(srcdir)/tests/fuzz/run-parquet-fuzz.sh $(FUZZ_SECONDS) $(abs_builddir)/tests/fuzz/parquet
.PHONY: fuzz fuzz-parquet
EXTRA_DIST += tests/fuzz/fuzz-parquet.c tests/fuzz/run-parquet-fuzz.sh tests/fuzz/parquet.dict
