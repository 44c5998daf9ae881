## data/: the bundled example dataset and its generator (see the top-level Makefile.am).

## The example dataset (data/README): a LeRobotDataset v3.0 of a 2-D point robot reaching a
## target, 8 episodes, 340 frames, one 64x64 AV1 camera. Installed as $(pkgdatadir)/example,
## which `pkg-config --variable=exampledir robotrain` prints.
exampledir = $(pkgdatadir)/example
examplemetadir = $(exampledir)/meta
dist_examplemeta_DATA = \
	data/example/meta/info.json \
	data/example/meta/stats.json \
	data/example/meta/tasks.parquet
exampleepisodesdir = $(exampledir)/meta/episodes/chunk-000
dist_exampleepisodes_DATA = data/example/meta/episodes/chunk-000/file-000.parquet
exampleframesdir = $(exampledir)/data/chunk-000
dist_exampleframes_DATA = data/example/data/chunk-000/file-000.parquet
examplevideodir = $(exampledir)/videos/observation.images.top/chunk-000
dist_examplevideo_DATA = data/example/videos/observation.images.top/chunk-000/file-000.mp4

## Its generator (node with the arrow-rs Parquet writer, ffmpeg with SVT-AV1). The committed
## files are the product: make never regenerates them. `make regenerate-example` rewrites
## data/example in the source tree; `make check-example-reproducible` regenerates into a
## temporary folder and compares byte by byte.
EXTRA_DIST += data/README data/make-example.mjs data/package.json data/regenerate-example.sh
regenerate-example:
	$(SHELL) $(srcdir)/data/regenerate-example.sh
check-example-reproducible:
	$(SHELL) $(srcdir)/data/regenerate-example.sh --check
.PHONY: regenerate-example check-example-reproducible

## Its test: every value against the closed form, the video against our rendering, the JSON
## against the data, the layout against ../shared/data/tiny-lerobot-v3. No FMA contraction,
## so the closed form is evaluated with the same roundings as the generator's JavaScript.
check_PROGRAMS += tests/test-example-dataset
TESTS += tests/test-example-dataset
tests_test_example_dataset_SOURCES = tests/test-example-dataset.c
tests_test_example_dataset_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
tests_test_example_dataset_LDADD = $(RT_TEST_LIBS)
