## plugins/backend-cuda: the CUDA compute backend, a module built only when configure finds the
## toolkit (see m4/rt_cuda.m4), and its test. The sources are listed whether or not CUDA is on,
## so `make dist` ships them from a CPU-only build too.
EXTRA_DIST += bench/gpu-check.sh

if HAVE_CUDA
## Host code that tests/test-cuda-host.cu links too.
noinst_LTLIBRARIES += plugins/backend-cuda/librtcudahost.la
plugins_backend_cuda_librtcudahost_la_SOURCES = plugins/backend-cuda/cuda-iter.c
plugins_backend_cuda_librtcudahost_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)

plugin_LTLIBRARIES += plugins/backend-cuda.la
plugins_backend_cuda_la_SOURCES = \
	plugins/backend-cuda/cuda-backend.c \
	plugins/backend-cuda/cuda-device.h \
	plugins/backend-cuda/cuda-error.c \
	plugins/backend-cuda/cuda-error.h \
	plugins/backend-cuda/cuda-exec.c \
	plugins/backend-cuda/cuda-exec.h \
	plugins/backend-cuda/cuda-gemm.c \
	plugins/backend-cuda/cuda-gemm.h \
	plugins/backend-cuda/cuda-ops.c \
	plugins/backend-cuda/cuda-ops-conv.c \
	plugins/backend-cuda/cuda-ops-gemm.c \
	plugins/backend-cuda/cuda-kernels.h \
	plugins/backend-cuda/cuda-common.cuh \
	plugins/backend-cuda/cuda-attention.cu \
	plugins/backend-cuda/cuda-copy.cu \
	plugins/backend-cuda/cuda-ew.cu \
	plugins/backend-cuda/cuda-loss.cu \
	plugins/backend-cuda/cuda-nn.cu \
	plugins/backend-cuda/cuda-optim.cu \
	plugins/backend-cuda/cuda-random.cu \
	plugins/backend-cuda/cuda-reduce.cu \
	plugins/backend-cuda/cuda-fill.cu \
	plugins/backend-cuda/cuda-fill.h
plugins_backend_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
plugins_backend_cuda_la_LDFLAGS = $(RT_MODULE_FLAGS) $(CUDA_LDFLAGS) $(CUDA_RPATH)
## The runtime loads the driver (libcuda.so.1) itself when first called, so the module never
## links it: it loads on machines without a GPU. nvcc's host code needs the C++ runtime.
plugins_backend_cuda_la_LIBADD = plugins/backend-cuda/librtcudahost.la librobotrain.la $(CUDA_LIBS) $(CUDNN_LIBS) $(GLIB_LIBS) -lstdc++

## nvcc through libtool: libtool adds -fPIC -DPIC, which nvcc hands on to the host compiler.
## nvcc rejects the C-only warning flags of RT_WARN_CFLAGS, so it gets its own; --enable-developer
## (-Werror in RT_WARN_CFLAGS) makes its warnings errors too.
SUFFIXES += .cu
RT_NVCC_WARN = -Xcompiler=-Wall,-Wextra,-Wshadow,-Wpointer-arith,-Wformat=2,-Wno-unused-parameter
rt_nvcc_werror = `case ' $(RT_WARN_CFLAGS) ' in *' -Werror '*) echo '-Xcompiler=-Werror -Werror=all-warnings';; esac`
rt_v_NVCC = $(rt_v_NVCC_@AM_V@)
rt_v_NVCC_ = $(rt_v_NVCC_@AM_DEFAULT_V@)
rt_v_NVCC_0 = @echo "  NVCC    " $@;
.cu.lo:
	$(rt_v_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(NVCC) -forward-unknown-to-host-compiler \
	  -std=c++17 $(CUDA_GENCODE) $(RT_NVCC_WARN) $(rt_nvcc_werror) $(CXXFLAGS) \
	  $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) $(CUDA_CPPFLAGS) $(NVCCFLAGS) -c -o $@ $<
## Suffix rules get no automatic dependency tracking: list the headers by hand.
plugins/backend-cuda/cuda-fill.lo: $(srcdir)/plugins/backend-cuda/cuda-fill.h
rt_cuda_kernel_objects = \
	plugins/backend-cuda/cuda-attention.lo \
	plugins/backend-cuda/cuda-copy.lo \
	plugins/backend-cuda/cuda-ew.lo \
	plugins/backend-cuda/cuda-loss.lo \
	plugins/backend-cuda/cuda-nn.lo \
	plugins/backend-cuda/cuda-optim.lo \
	plugins/backend-cuda/cuda-random.lo \
	plugins/backend-cuda/cuda-reduce.lo
$(rt_cuda_kernel_objects): $(srcdir)/plugins/backend-cuda/cuda-common.cuh \
	$(srcdir)/plugins/backend-cuda/cuda-kernels.h

## Host-only programs written in CUDA C++ (tests of the kernels' shared arithmetic): plain
## objects with the module's folder on the include path. They include no GLib header (nvcc's
## front end warns about GLib's format attributes).
.cu.o:
	$(rt_v_NVCC)$(NVCC) -forward-unknown-to-host-compiler -std=c++17 $(CUDA_GENCODE) $(RT_NVCC_WARN) \
	  $(rt_nvcc_werror) $(CXXFLAGS) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) $(CUDA_CPPFLAGS) \
	  -I$(srcdir)/plugins $(NVCCFLAGS) -c -o $@ $<
tests/test-cuda-host.$(OBJEXT): $(srcdir)/plugins/backend-cuda/cuda-common.cuh \
	$(srcdir)/plugins/backend-cuda/cuda-kernels.h $(srcdir)/src/core/philox.h

check_PROGRAMS += tests/test-backend-cuda
TESTS += tests/test-backend-cuda
tests_test_backend_cuda_SOURCES = tests/test-backend-cuda.c
tests_test_backend_cuda_CPPFLAGS = $(AM_CPPFLAGS) \
	-DRT_TEST_CUDA_MODULE='"$(abs_top_builddir)/plugins/backend-cuda"'
tests_test_backend_cuda_LDADD = $(RT_TEST_LIBS) $(LIBLTDL)

## Every CUDA kernel against its CPU twin, and training steps (eager and replayed) against the
## CPU: they skip without a GPU (bench/gpu-check.sh runs them on one), after checking that every
## op of the op table has a CUDA case.
check_PROGRAMS += tests/test-cuda-ops tests/test-cuda-train
TESTS += tests/test-cuda-ops tests/test-cuda-train
tests_test_cuda_ops_SOURCES = tests/test-cuda-ops.c tests/cuda-test.h tests/graph-test.h
tests_test_cuda_ops_CPPFLAGS = $(AM_CPPFLAGS) \
	-DRT_TEST_CUDA_MODULE='"$(abs_top_builddir)/plugins/backend-cuda"'
tests_test_cuda_ops_LDADD = $(RT_TEST_LIBS) $(LIBLTDL)
tests_test_cuda_train_SOURCES = tests/test-cuda-train.c tests/cuda-test.h tests/graph-test.h
tests_test_cuda_train_CPPFLAGS = $(AM_CPPFLAGS) \
	-DRT_TEST_CUDA_MODULE='"$(abs_top_builddir)/plugins/backend-cuda"'
tests_test_cuda_train_LDADD = $(RT_TEST_LIBS) $(LIBLTDL)

## The kernels' shared arithmetic (Philox, 16-bit conversions, strided walks) against the CPU's,
## on the host: runs without a GPU.
check_PROGRAMS += tests/test-cuda-host
TESTS += tests/test-cuda-host
tests_test_cuda_host_SOURCES = tests/test-cuda-host.cu
tests_test_cuda_host_LDFLAGS = $(CUDA_LDFLAGS) $(CUDA_RPATH)
tests_test_cuda_host_LDADD = plugins/backend-cuda/librtcudahost.la $(RT_TEST_LIBS) $(CUDA_LIBS) -lstdc++

## The error messages, checked without a GPU: the test links the module's error source itself.
check_PROGRAMS += tests/test-cuda-error
TESTS += tests/test-cuda-error
tests_test_cuda_error_SOURCES = tests/test-cuda-error.c plugins/backend-cuda/cuda-error.c
tests_test_cuda_error_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/plugins $(CUDA_CPPFLAGS)
tests_test_cuda_error_LDFLAGS = $(CUDA_LDFLAGS) $(CUDA_RPATH)
tests_test_cuda_error_LDADD = $(RT_TEST_LIBS) $(CUDA_LIBS) $(CUDNN_LIBS)
endif
