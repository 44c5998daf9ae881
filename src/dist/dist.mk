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
