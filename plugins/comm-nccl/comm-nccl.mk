## plugins/comm-nccl: the NCCL comm module (C, CUDA runtime API: no kernels of its own), built
## when configure finds CUDA and NCCL (m4/rt_cuda.m4), and its test, which skips without a GPU.
## The sources are listed either way, so that `make dist` ships them from a CPU-only build.
EXTRA_DIST += plugins/comm-nccl/comm-nccl.c

if HAVE_NCCL
plugin_LTLIBRARIES += plugins/comm-nccl.la
plugins_comm_nccl_la_SOURCES = plugins/comm-nccl/comm-nccl.c
plugins_comm_nccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
plugins_comm_nccl_la_LDFLAGS = $(RT_MODULE_FLAGS) $(CUDA_LDFLAGS) $(CUDA_RPATH)
## Like backend-cuda, the module links the CUDA runtime, never the driver (libcuda.so.1), so it
## loads on machines without a GPU and says so when a communicator is asked for.
plugins_comm_nccl_la_LIBADD = librobotrain.la $(NCCL_LIBS) -lcudart $(GLIB_LIBS)

check_PROGRAMS += tests/test-dist-nccl
TESTS += tests/test-dist-nccl
tests_test_dist_nccl_SOURCES = tests/test-dist-nccl.c
tests_test_dist_nccl_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_test_dist_nccl_LDFLAGS = $(CUDA_LDFLAGS) $(CUDA_RPATH)
tests_test_dist_nccl_LDADD = $(RT_TEST_LIBS) -lcudart
endif
