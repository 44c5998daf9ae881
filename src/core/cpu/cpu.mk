## src/core/cpu: the CPU backend's dense kernels (GEMM, convolution, pooling, 16-bit rounding).
## They build as a convenience library inside librobotrain so that they alone get OpenMP and
## the BLAS/oneDNN flags.
noinst_LTLIBRARIES += src/core/cpu/librtcpu.la
src_core_cpu_librtcpu_la_SOURCES = \
	src/core/cpu/kernels.h \
	src/core/cpu/cpu-internal.h \
	src/core/cpu/conv-internal.h \
	src/core/cpu/threads.c \
	src/core/cpu/gemm.c \
	src/core/cpu/conv.c \
	src/core/cpu/conv-dnnl.c \
	src/core/cpu/pool.c \
	src/core/cpu/convert.c
src_core_cpu_librtcpu_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS)
src_core_cpu_librtcpu_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
librobotrain_la_LIBADD += src/core/cpu/librtcpu.la
librobotrain_la_LDFLAGS += $(OPENMP_CFLAGS)

check_PROGRAMS += tests/test-cpu-kernels
TESTS += tests/test-cpu-kernels
tests_test_cpu_kernels_SOURCES = tests/test-cpu-kernels.c
## The test links the kernels' convenience library itself, to reach the internal paths
## (im2col and oneDNN one by one) that the library does not export.
tests_test_cpu_kernels_LDADD = src/core/cpu/librtcpu.la $(RT_TEST_LIBS) $(OPENBLAS_LIBS) $(DNNL_LIBS)
tests_test_cpu_kernels_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)

## Benchmarks: `make` builds them, nobody runs them in `make check` (see bench/README).
noinst_PROGRAMS += bench/bench-kernels
bench_bench_kernels_SOURCES = bench/bench-kernels.c
bench_bench_kernels_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
bench_bench_kernels_LDADD = src/core/cpu/librtcpu.la $(RT_TEST_LIBS) $(OPENBLAS_LIBS) $(DNNL_LIBS)
bench_bench_kernels_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)
EXTRA_DIST += bench/README bench/RESULTS-dev-vm.md bench/bench-kernels-torch.py bench/compare-torch.sh

## `make bench-cpu` and `make bench-cpu-torch` run them (BENCH_ARGS: --threads N, --reps R,
## --filter TEXT).
bench-cpu: bench/bench-kernels$(EXEEXT)
	./bench/bench-kernels$(EXEEXT) $(BENCH_ARGS)
bench-cpu-torch: bench/bench-kernels$(EXEEXT) librobotrain.la
	$(SHELL) $(top_srcdir)/bench/compare-torch.sh $(BENCH_ARGS)
.PHONY: bench-cpu bench-cpu-torch
