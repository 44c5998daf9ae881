## src/core (graph): tensors, graphs, the op table, autodiff, the memory planner, the
## optimizer ops and the CPU executor.
robotraininclude_HEADERS += \
	include/robotrain/tensor.h \
	include/robotrain/graph.h \
	include/robotrain/ops.h \
	include/robotrain/loss-scale.h

librobotrain_la_SOURCES += \
	src/core/graph-internal.h \
	src/core/ops-common.h \
	src/core/ops-decl.h \
	src/core/philox.h \
	src/core/tensor.c \
	src/core/graph.c \
	src/core/graph-run.c \
	src/core/op-table.c \
	src/core/ops-elementwise.c \
	src/core/ops-shape.c \
	src/core/ops-nn.c \
	src/core/ops-loss.c \
	src/core/optim.c \
	src/core/loss-scale-private.h \
	src/core/loss-scale.c \
	src/core/grad-sync.c \
	src/core/autodiff.c \
	src/core/planner.c \
	src/core/philox.c

## The CPU executor's kernels get OpenMP (they share the dense kernels' threads) and BLAS.
noinst_LTLIBRARIES += src/core/librtexec.la
src_core_librtexec_la_SOURCES = \
	src/core/backend-cpu.h \
	src/core/backend-cpu-reduce-tmpl.h \
	src/core/cpu-pool.h \
	src/core/cpu-pool.c \
	src/core/backend-cpu.c \
	src/core/backend-cpu-ew.c \
	src/core/backend-cpu-reduce.c \
	src/core/backend-cpu-nn.c \
	src/core/backend-cpu-amp.c
src_core_librtexec_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS)
src_core_librtexec_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
librobotrain_la_LIBADD += src/core/librtexec.la

## Tests (tests/graph-test.h holds their shared helpers).
EXTRA_DIST += tests/graph-test.h
check_PROGRAMS += tests/test-graph-mlp
TESTS += tests/test-graph-mlp
tests_test_graph_mlp_SOURCES = tests/test-graph-mlp.c tests/graph-test.h
tests_test_graph_mlp_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-autodiff
TESTS += tests/test-autodiff
tests_test_autodiff_SOURCES = tests/test-autodiff.c tests/graph-test.h
tests_test_autodiff_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-ops
TESTS += tests/test-ops
tests_test_ops_SOURCES = tests/test-ops.c tests/graph-test.h
tests_test_ops_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-optim
TESTS += tests/test-optim
tests_test_optim_SOURCES = tests/test-optim.c tests/graph-test.h
tests_test_optim_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-graph-rng
TESTS += tests/test-graph-rng
tests_test_graph_rng_SOURCES = tests/test-graph-rng.c tests/graph-test.h
tests_test_graph_rng_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-graph-planner
TESTS += tests/test-graph-planner
tests_test_graph_planner_SOURCES = tests/test-graph-planner.c tests/graph-test.h
tests_test_graph_planner_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-graph-api
TESTS += tests/test-graph-api
tests_test_graph_api_SOURCES = tests/test-graph-api.c tests/graph-test.h
tests_test_graph_api_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-graph-backend
TESTS += tests/test-graph-backend
tests_test_graph_backend_SOURCES = tests/test-graph-backend.c tests/graph-test.h
tests_test_graph_backend_LDADD = $(RT_TEST_LIBS)
check_PROGRAMS += tests/test-loss-scale
TESTS += tests/test-loss-scale
tests_test_loss_scale_SOURCES = tests/test-loss-scale.c tests/graph-test.h
tests_test_loss_scale_LDADD = $(RT_TEST_LIBS)

check_PROGRAMS += tests/test-graph-gradsync
TESTS += tests/test-graph-gradsync
tests_test_graph_gradsync_SOURCES = tests/test-graph-gradsync.c tests/graph-test.h
tests_test_graph_gradsync_LDADD = $(RT_TEST_LIBS)
