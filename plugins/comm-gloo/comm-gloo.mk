## plugins/comm-gloo: the Gloo comm module (C++17: the only C++ in robotrain), built when
## configure finds libgloo-dev, and its tests. The sources are listed either way, so that
## `make dist` ships them from a build without Gloo.
RT_GLOO_SOURCES = \
	plugins/comm-gloo/comm-gloo.cc \
	plugins/comm-gloo/gloo-store.cc \
	plugins/comm-gloo/gloo-store.h \
	plugins/comm-gloo/half.h
EXTRA_DIST += $(RT_GLOO_SOURCES) plugins/comm-gloo/comm-gloo.map

if HAVE_GLOO
plugin_LTLIBRARIES += plugins/comm-gloo.la
plugins_comm_gloo_la_SOURCES = $(RT_GLOO_SOURCES)
## RT_WARN_CFLAGS holds C-only flags; C++ gets its own set, with -Werror when the C flags have it
## (RT_PLUGIN_DEFINE leaves the reserved tail to zero-initialisation, which -Wextra flags in C++).
RT_GLOO_WARN = -Wall -Wextra -Wshadow -Wpointer-arith -Wformat=2 -Wno-unused-parameter \
	-Wno-missing-field-initializers \
	`case ' $(RT_WARN_CFLAGS) ' in *' -Werror '*) echo -Werror;; esac`
## libtool's C++ link keeps every symbol dynamic despite -export-symbols-regex: hide them at
## compile time (RT_PLUGIN_EXPORT keeps the entry point visible) and, for the standard library's
## template instantiations, with a version script.
plugins_comm_gloo_la_CXXFLAGS = $(AM_CXXFLAGS) $(RT_GLOO_WARN) -fvisibility=hidden -fvisibility-inlines-hidden
plugins_comm_gloo_la_LDFLAGS = $(RT_MODULE_FLAGS) -Wl,--version-script=$(srcdir)/plugins/comm-gloo/comm-gloo.map
EXTRA_plugins_comm_gloo_la_DEPENDENCIES = $(srcdir)/plugins/comm-gloo/comm-gloo.map
plugins_comm_gloo_la_LIBADD = librobotrain.la $(GLOO_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

check_PROGRAMS += tests/test-dist-gloo tests/dist-gloo-worker
TESTS += tests/test-dist-gloo
tests_test_dist_gloo_SOURCES = tests/test-dist-gloo.c
tests_test_dist_gloo_CPPFLAGS = $(AM_CPPFLAGS) -DRT_TEST_GLOO_WORKER='"$(abs_top_builddir)/tests/dist-gloo-worker"'
tests_test_dist_gloo_LDADD = $(RT_TEST_LIBS)
tests_dist_gloo_worker_SOURCES = tests/dist-gloo-worker.c
tests_dist_gloo_worker_LDADD = $(RT_TEST_LIBS)
endif
