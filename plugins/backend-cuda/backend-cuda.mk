## plugins/backend-cuda: the CUDA compute backend, a module built only when configure finds the
## toolkit (see m4/rt_cuda.m4), and its test. The sources are listed whether or not CUDA is on,
## so `make dist` ships them from a CPU-only build too.
EXTRA_DIST += bench/gpu-check.sh

if HAVE_CUDA
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
plugins_backend_cuda_la_LIBADD = librobotrain.la $(CUDA_LIBS) $(CUDNN_LIBS) $(GLIB_LIBS) -lstdc++

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

check_PROGRAMS += tests/test-backend-cuda
TESTS += tests/test-backend-cuda
tests_test_backend_cuda_SOURCES = tests/test-backend-cuda.c
tests_test_backend_cuda_CPPFLAGS = $(AM_CPPFLAGS) \
	-DRT_TEST_CUDA_MODULE='"$(abs_top_builddir)/plugins/backend-cuda"'
tests_test_backend_cuda_LDADD = $(RT_TEST_LIBS) $(LIBLTDL)

## The error messages, checked without a GPU: the test links the module's error source itself.
check_PROGRAMS += tests/test-cuda-error
TESTS += tests/test-cuda-error
tests_test_cuda_error_SOURCES = tests/test-cuda-error.c plugins/backend-cuda/cuda-error.c
tests_test_cuda_error_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/plugins $(CUDA_CPPFLAGS)
tests_test_cuda_error_LDFLAGS = $(CUDA_LDFLAGS) $(CUDA_RPATH)
tests_test_cuda_error_LDADD = $(RT_TEST_LIBS) $(CUDA_LIBS) $(CUDNN_LIBS)
endif
