## src/data: sources, tests and pages of this area (see the top-level Makefile.am).

## Video frames by timestamp (FFmpeg) and inline PNG images (libpng).
librobotrain_la_SOURCES += \
	src/data/video.c src/data/video.h \
	src/data/png-decode.c src/data/png-decode.h

check_PROGRAMS += tests/test-video tests/test-png
TESTS += tests/test-video tests/test-png
tests_test_video_SOURCES = tests/test-video.c
## The test compares frames with FFmpeg's command-line decoder when configure found one.
tests_test_video_CPPFLAGS = $(AM_CPPFLAGS) -DRT_FFMPEG_PROG='"$(FFMPEG_PROG)"'
tests_test_video_LDADD = $(RT_TEST_LIBS)
tests_test_png_SOURCES = tests/test-png.c
tests_test_png_CPPFLAGS = $(AM_CPPFLAGS) $(PNG_CFLAGS) $(ZLIB_CFLAGS)
tests_test_png_LDADD = $(RT_TEST_LIBS) $(PNG_LIBS) $(ZLIB_LIBS)

EXTRA_DIST += \
	tests/data/video/README \
	tests/data/video/make-fixtures.sh \
	tests/data/video/tiny-v3-cam.mp4 \
	tests/data/video/gradient-av1.mp4 \
	tests/data/video/gradient-h264.mp4 \
	tests/data/video/audio-only.m4a \
	tests/data/video/image-rgb.png \
	tests/data/video/image-rgba.png \
	tests/data/video/image-gray.png \
	tests/data/video/image-gray-alpha.png \
	tests/data/video/image-rgb16.png \
	tests/data/video/image-1bit.png \
	tests/data/video/image-palette.png

## bench/bench-video.sh encodes a 480x640 AV1 clip with LeRobot's settings and runs this.
noinst_PROGRAMS += bench/bench-video
bench_bench_video_SOURCES = bench/bench-video.c
bench_bench_video_LDADD = librobotrain.la $(GLIB_LIBS) $(LIBM)
EXTRA_DIST += bench/bench-video.sh
