## src/data: sources, tests and pages of this area (see the top-level Makefile.am).

## The LeRobotDataset (src/data/dataset.h): metadata, episodes, stats, frames, items and
## batches; normalization, the sampler and the loader threads.
librobotrain_la_SOURCES += \
	src/data/dataset.h src/data/dataset-private.h src/data/dataset-meta.h \
	src/data/meta-json.c src/data/meta-info.c src/data/meta-stats.c \
	src/data/meta-jsonl.c src/data/meta-parquet.c \
	src/data/dataset-path.c src/data/dataset-options.c src/data/dataset.c src/data/dataset-load.c src/data/dataset-item.c \
	src/data/normalize.h src/data/normalize.c \
	src/data/sampler.h src/data/sampler.c \
	src/data/loader.h src/data/loader.c

## Tests: the generated v3.0 dataset (copied from ../shared/data/tiny-lerobot-v3, see
## tests/data/dataset/README) and, when ../shared is there, the real v2.1 episode.
check_PROGRAMS += tests/test-dataset
TESTS += tests/test-dataset
tests_test_dataset_SOURCES = tests/test-dataset.c
tests_test_dataset_LDADD = $(RT_TEST_LIBS)

RT_DATASET_FIXTURES = \
	tests/data/dataset/README \
	tests/data/dataset/tiny-v3/meta/info.json \
	tests/data/dataset/tiny-v3/meta/stats.json \
	tests/data/dataset/tiny-v3/meta/tasks.parquet \
	tests/data/dataset/tiny-v3/meta/episodes/chunk-000/file-000.parquet \
	tests/data/dataset/tiny-v3/data/chunk-000/file-000.parquet \
	tests/data/dataset/tiny-v3/videos/observation.images.cam/chunk-000/file-000.mp4 \
	tests/data/dataset/make-image-v3.mjs \
	tests/data/dataset/image-v3/meta/info.json \
	tests/data/dataset/image-v3/meta/stats.json \
	tests/data/dataset/image-v3/meta/tasks.parquet \
	tests/data/dataset/image-v3/meta/episodes/chunk-000/file-000.parquet \
	tests/data/dataset/image-v3/data/chunk-000/file-000.parquet
EXTRA_DIST += $(RT_DATASET_FIXTURES)

check_PROGRAMS += tests/test-sampler
TESTS += tests/test-sampler
tests_test_sampler_SOURCES = tests/test-sampler.c
tests_test_sampler_LDADD = $(RT_TEST_LIBS)

check_PROGRAMS += tests/test-dataset-loader
TESTS += tests/test-dataset-loader
tests_test_dataset_loader_SOURCES = tests/test-dataset-loader.c
tests_test_dataset_loader_LDADD = $(RT_TEST_LIBS)

check_PROGRAMS += tests/test-dataset-meta
TESTS += tests/test-dataset-meta
tests_test_dataset_meta_SOURCES = tests/test-dataset-meta.c
tests_test_dataset_meta_LDADD = $(RT_TEST_LIBS)

## robotrain dataset info|show, and its page.
robotrain_SOURCES += src/cli/cmd-dataset.c
RT_MAN_PODS += man/robotrain-dataset.pod
dist_man_MANS += man/robotrain-dataset.1
TESTS += tests/dataset-cli.sh
EXTRA_DIST += tests/dataset-cli.sh

## The metadata fuzz target: built and run by its script only (needs clang's libFuzzer).
EXTRA_DIST += tests/fuzz/run-metadata-fuzz.sh tests/fuzz/fuzz-metadata.c tests/fuzz/metadata.dict

## bench/bench-loader.sh makes an ALOHA-like dataset (ffmpeg, node) and runs this.
noinst_PROGRAMS += bench/bench-loader
bench_bench_loader_SOURCES = bench/bench-loader.c
bench_bench_loader_LDADD = librobotrain.la $(GLIB_LIBS) $(LIBM)
EXTRA_DIST += bench/bench-loader.sh bench/bench-loader-dataset.mjs
