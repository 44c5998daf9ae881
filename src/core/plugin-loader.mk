## src/core: the plugin loader, the `robotrain plugins` command, the plugin SDK (header, example,
## man pages) and their tests (see the top-level Makefile.am).
librobotrain_la_SOURCES += \
	src/core/dl.c src/core/dl.h \
	src/core/plugin-check.c src/core/plugin-check.h \
	src/core/plugin-loader.c \
	src/core/plugin-path.c src/core/plugin-path.h
robotraininclude_HEADERS += include/robotrain/plugin-loader.h
robotrain_SOURCES += src/cli/cmd-plugins.c
## These two objects have RT_PLUGINDIR (from --prefix/--libdir) compiled in, and make does not
## track flags: rebuild them whenever configure rewrites the Makefile.
src/core/librobotrain_la-plugin-path.lo src/cli/cmd-plugins.$(OBJEXT): Makefile

RT_MAN_PODS += man/robotrain-plugins.pod man/robotrain-plugin.pod
dist_man_MANS += man/robotrain-plugins.1 man/robotrain-plugin.7

## Test modules: built by `make check` only, never installed (-rpath /nowhere makes libtool build
## a shared module that has no installation folder). The tests point the loader at
## $(builddir)/tests/plugins through ROBOTRAIN_TEST_PLUGIN_PATH.
RT_TEST_MODULE_FLAGS = $(RT_MODULE_FLAGS) -rpath /nowhere
RT_TEST_MODULE_SRC = tests/plugins/test-module.c

check_LTLIBRARIES += tests/plugins/policy-good.la
tests_plugins_policy_good_la_SOURCES = tests/plugins/policy-good.c
tests_plugins_policy_good_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/shadow/policy-good.la
tests_plugins_shadow_policy_good_la_SOURCES = tests/plugins/policy-good.c
tests_plugins_shadow_policy_good_la_CPPFLAGS = $(AM_CPPFLAGS) -DGOOD_VERSION='"2.0.0-shadow"' \
	-DGOOD_DESCRIPTION='"The copy in the shadow folder"'
tests_plugins_shadow_policy_good_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/backend-good.la
tests_plugins_backend_good_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_backend_good_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_good_get_desc \
	-DMODULE_NAME='"good"' -DMODULE_KIND=RT_PLUGIN_BACKEND
tests_plugins_backend_good_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-fallback.la
tests_plugins_policy_fallback_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_fallback_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_get_desc \
	-DMODULE_NAME='"fallback"'
tests_plugins_policy_fallback_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-abi-major.la
tests_plugins_policy_abi_major_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_abi_major_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_abi_major_get_desc \
	-DMODULE_NAME='"abi-major"' -DDESC_ABI_MAJOR='(RT_PLUGIN_ABI_MAJOR + 1)'
tests_plugins_policy_abi_major_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-abi-minor.la
tests_plugins_policy_abi_minor_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_abi_minor_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_abi_minor_get_desc \
	-DMODULE_NAME='"abi-minor"' -DDESC_ABI_MINOR='(RT_PLUGIN_ABI_MINOR + 1)'
tests_plugins_policy_abi_minor_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-null-vtable.la
tests_plugins_policy_null_vtable_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_null_vtable_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_null_vtable_get_desc \
	-DMODULE_NAME='"null-vtable"' -DNULL_VTABLE
tests_plugins_policy_null_vtable_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-null-desc.la
tests_plugins_policy_null_desc_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_null_desc_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_null_desc_get_desc \
	-DMODULE_NAME='"null-desc"' -DNULL_DESC
tests_plugins_policy_null_desc_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-nosym.la
tests_plugins_policy_nosym_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_nosym_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_nosym_get_descriptor \
	-DMODULE_NAME='"nosym"'
tests_plugins_policy_nosym_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/policy-undefined.la
tests_plugins_policy_undefined_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_undefined_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_undefined_get_desc \
	-DMODULE_NAME='"undefined"' -DCALL_UNDEFINED
tests_plugins_policy_undefined_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS)

## policy-missing-dep needs librtmissing.so, which lives only in tests/plugins/.libs. It is linked
## with -Wl flags that libtool passes on unread: given its .la (or an -L folder that holds one),
## libtool would write that folder into the module's RUNPATH. So no rpath, LD_LIBRARY_PATH or
## ld.so.cache entry leads there, and loading the module fails on the missing library.
check_LTLIBRARIES += tests/plugins/librtmissing.la
tests_plugins_librtmissing_la_SOURCES = tests/plugins/missing-helper.c
tests_plugins_librtmissing_la_LDFLAGS = -avoid-version -shared -no-undefined -rpath /nowhere

check_LTLIBRARIES += tests/plugins/policy-missing-dep.la
tests_plugins_policy_missing_dep_la_SOURCES = $(RT_TEST_MODULE_SRC)
tests_plugins_policy_missing_dep_la_CPPFLAGS = $(AM_CPPFLAGS) -DENTRY=rt_plugin_missing_dep_get_desc \
	-DMODULE_NAME='"missing-dep"' -DCALL_HELPER
tests_plugins_policy_missing_dep_la_LDFLAGS = $(RT_TEST_MODULE_FLAGS) \
	-Wl,-L$(top_builddir)/tests/plugins/.libs -Wl,-lrtmissing
EXTRA_tests_plugins_policy_missing_dep_la_DEPENDENCIES = tests/plugins/librtmissing.la

EXTRA_DIST += tests/plugins/README

check_PROGRAMS += tests/test-plugin-loader
TESTS += tests/test-plugin-loader
tests_test_plugin_loader_SOURCES = tests/test-plugin-loader.c
tests_test_plugin_loader_LDADD = $(RT_TEST_LIBS)

TESTS += tests/plugins-cli.sh
EXTRA_DIST += tests/plugins-cli.sh

## The plugin SDK's example: an out-of-tree module, built by examples/ci-build-example.sh
## against an installed robotrain (.ci/run runs it after `make install`).
EXTRA_DIST += examples/ci-build-example.sh examples/hello-policy/README \
	examples/hello-policy/configure.ac examples/hello-policy/Makefile.am \
	examples/hello-policy/policy-hello.c
