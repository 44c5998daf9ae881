## src/dist: the world from the launcher's environment, the rendezvous store (server and
## client) and the comm-module loader, with their tests (see the top-level Makefile.am). The
## comm modules themselves are plugins/comm-gloo and plugins/comm-nccl.
librobotrain_la_SOURCES += \
	src/dist/world.c \
	src/dist/store-protocol.h \
	src/dist/store-server.c \
	src/dist/store-client.c \
	src/dist/comm.c
robotraininclude_HEADERS += \
	include/robotrain/world.h \
	include/robotrain/store.h \
	include/robotrain/comm.h

check_PROGRAMS += tests/test-dist-world
TESTS += tests/test-dist-world
tests_test_dist_world_SOURCES = tests/test-dist-world.c
tests_test_dist_world_LDADD = $(RT_TEST_LIBS)

check_PROGRAMS += tests/test-dist-store
TESTS += tests/test-dist-store
tests_test_dist_store_SOURCES = tests/test-dist-store.c
tests_test_dist_store_LDADD = $(RT_TEST_LIBS)

## The core around comm modules, checked with a fake module (and a defective one) kept in their
## own folder so that the plugin loader's tests do not see them.
check_LTLIBRARIES += tests/dist-plugins/comm-fake.la tests/dist-plugins/comm-incomplete.la
tests_dist_plugins_comm_fake_la_SOURCES = tests/dist-comm-fake.c
tests_dist_plugins_comm_fake_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)
tests_dist_plugins_comm_fake_la_LIBADD = $(GLIB_LIBS)
tests_dist_plugins_comm_incomplete_la_SOURCES = tests/dist-comm-fake.c
tests_dist_plugins_comm_incomplete_la_CPPFLAGS = $(AM_CPPFLAGS) -DINCOMPLETE
tests_dist_plugins_comm_incomplete_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)
tests_dist_plugins_comm_incomplete_la_LIBADD = $(GLIB_LIBS)

check_PROGRAMS += tests/test-dist-comm
TESTS += tests/test-dist-comm
tests_test_dist_comm_SOURCES = tests/test-dist-comm.c
tests_test_dist_comm_CPPFLAGS = $(AM_CPPFLAGS) -DRT_TEST_DIST_PLUGINS='"$(abs_top_builddir)/tests/dist-plugins"'
tests_test_dist_comm_LDADD = $(RT_TEST_LIBS)
