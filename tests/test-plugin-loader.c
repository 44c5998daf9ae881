/* The plugin loader: descriptor layout, search path, the dl layer, the registry and every
 * refusal, against the test modules of tests/plugins (see its README). */
#include "config.h"

#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

#include "core/dl.h"
#include "core/plugin-check.h"
#include "core/plugin-path.h"
#include "testing.h"

static char *plugin_dir;  /* the build tree's tests/plugins */
static char *shadow_dir;  /* its shadow/ folder */
static char *scratch_dir; /* a private temporary folder */

/* The interface of tests/plugins/policy-good.c. */
typedef struct good_iface {
    uint32_t struct_size;
    int (*answer)(void);
} good_iface;

static char *plugin_file(const char *folder, const char *name)
{
    return g_build_filename(folder, name, NULL);
}

static rt_plugin_registry *registry_of(const char *first, const char *second)
{
    const char *folders[] = { first, second, NULL };
    GError *error = NULL;
    rt_plugin_registry *registry = rt_plugin_registry_new(folders, &error);
    if (!registry)
        printf("# registry: %s\n", error->message);
    g_clear_error(&error);
    return registry;
}

static const rt_plugin_module *listed(rt_plugin_registry *registry, const char *path)
{
    size_t n = 0;
    const rt_plugin_module *const *modules = rt_plugin_registry_list(registry, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(modules[i]->path, path) == 0)
            return modules[i];
    return NULL;
}

static void write_file(const char *folder, const char *name, const char *text)
{
    char *path = g_build_filename(folder, name, NULL);
    g_file_set_contents(path, text, -1, NULL);
    g_free(path);
}

DEF_TEST(descriptor_layout)
{
    /* The first three fields never move: the loader reads them from any module. */
    EXPECT_EQ_INT(0, offsetof(rt_plugin_desc, abi_major));
    EXPECT_EQ_INT(4, offsetof(rt_plugin_desc, abi_minor));
    EXPECT_EQ_INT(8, offsetof(rt_plugin_desc, struct_size));
    EXPECT_EQ_INT(12, offsetof(rt_plugin_desc, kind));
    if (sizeof(void *) == 8) {
        /* ABI 1.0 on LP64, counted by hand: 4 x u32, 4 strings, options, n_options, vtable, 8
         * reserved pointers. A change here is an ABI break (bump the major) or an append (the
         * minor): update this test with intent. */
        EXPECT_EQ_INT(16, offsetof(rt_plugin_desc, name));
        EXPECT_EQ_INT(48, offsetof(rt_plugin_desc, options));
        EXPECT_EQ_INT(64, offsetof(rt_plugin_desc, vtable));
        EXPECT_EQ_INT(72, RT_PLUGIN_DESC_MIN_SIZE);
        EXPECT_EQ_INT(136, sizeof(rt_plugin_desc));
    }
    return 0;
}

DEF_TEST(kind_names)
{
    EXPECT_EQ_STR("policy", rt_plugin_kind_to_string(RT_PLUGIN_POLICY));
    EXPECT_EQ_STR("backend", rt_plugin_kind_to_string(RT_PLUGIN_BACKEND));
    EXPECT_EQ_STR("comm", rt_plugin_kind_to_string(RT_PLUGIN_COMM));
    OK(rt_plugin_kind_to_string(RT_PLUGIN_ANY) == NULL);
    OK(rt_plugin_kind_to_string((rt_plugin_kind)42) == NULL);
    EXPECT_EQ_INT(RT_PLUGIN_BACKEND, rt_plugin_kind_from_string("backend"));
    EXPECT_EQ_INT(RT_PLUGIN_ANY, rt_plugin_kind_from_string("policies"));
    EXPECT_EQ_INT(RT_PLUGIN_ANY, rt_plugin_kind_from_string(NULL));
    OK(rt_plugin_names_equal("hello-world", "hello_world"));
    OK(rt_plugin_names_equal("act", "act"));
    OK(!rt_plugin_names_equal("act", "acts"));
    OK(!rt_plugin_names_equal("act", "ac"));
    return 0;
}

DEF_TEST(search_path_order)
{
    char *a = g_build_filename(scratch_dir, "a", NULL), *b = g_build_filename(scratch_dir, "b", NULL);
    g_mkdir_with_parents(a, 0700);
    g_mkdir_with_parents(b, 0700);
    char *flag = g_strdup_printf("%s::%s/", a, b); /* an empty entry and a trailing slash */
    char *env = g_strdup_printf("/env/one:%s:relative/mods:~/mods", a); /* a repeats the flag's */
    GError *error = NULL;
    /* key-file folders are whole names: a ':' in one does not split it */
    const char *const keyfile[] = { "/conf/x", "", "/conf/with:colon", "/env/one", NULL };
    char **path = rt_plugin_search_path_from(flag, env, keyfile, "/xdg/data", "/built/in", &error);
    EXPECT_NO_ERROR(error);
    char *cwd = g_get_current_dir();
    char *relative = g_build_filename(cwd, "relative", "mods", NULL);
    char *home = g_build_filename(g_get_home_dir(), "mods", NULL);
    const char *expect[] = { a, b, "/env/one", relative, home, "/conf/x", "/conf/with:colon",
                             "/xdg/data/robotrain/plugins", "/built/in", NULL };
    EXPECT_EQ_INT(g_strv_length((char **)expect), g_strv_length(path));
    for (size_t i = 0; expect[i]; i++)
        EXPECT_EQ_STR(expect[i], path[i]);
    g_strfreev(path);

    /* Nothing given: the user folder and the built-in one; a built-in folder repeated by the
     * environment keeps the environment's (earlier) place. */
    path = rt_plugin_search_path_from(NULL, "/built/in", NULL, "/xdg/data", "/built/in", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(2, g_strv_length(path));
    EXPECT_EQ_STR("/built/in", path[0]);
    EXPECT_EQ_STR("/xdg/data/robotrain/plugins", path[1]);
    g_strfreev(path);

    /* A folder in the environment or the key file may be absent; one in the flag may not. */
    path = rt_plugin_search_path_from("/no/such/folder", NULL, NULL, NULL, NULL, &error);
    OK(path == NULL);
    EXPECT_ERROR(error, "--plugin_path: '/no/such/folder' is not a folder; give folders that hold robotrain modules");
    char *file = g_build_filename(scratch_dir, "a-file", NULL);
    write_file(scratch_dir, "a-file", "x");
    path = rt_plugin_search_path_from(file, NULL, NULL, NULL, NULL, &error);
    OK(path == NULL);
    EXPECT_ERROR(error, "is not a folder");

    g_free(file);
    g_free(home);
    g_free(relative);
    g_free(cwd);
    g_free(env);
    g_free(flag);
    g_free(a);
    g_free(b);
    return 0;
}

DEF_TEST(search_path_from_the_environment)
{
    char *saved = g_strdup(g_getenv("ROBOTRAIN_PLUGIN_PATH"));
    g_setenv("ROBOTRAIN_PLUGIN_PATH", "/from/env:/from/env2", TRUE);
    GError *error = NULL;
    const char *const keyfile[] = { "/from/keyfile", NULL };
    char **path = rt_plugin_search_path(shadow_dir, keyfile, &error);
    EXPECT_NO_ERROR(error);
    char *user = g_build_filename(g_get_user_data_dir(), "robotrain", "plugins", NULL);
    EXPECT_EQ_INT(6, g_strv_length(path));
    EXPECT_EQ_STR(shadow_dir, path[0]);
    EXPECT_EQ_STR("/from/env", path[1]);
    EXPECT_EQ_STR("/from/env2", path[2]);
    EXPECT_EQ_STR("/from/keyfile", path[3]);
    EXPECT_EQ_STR(user, path[4]);
    EXPECT_EQ_STR(RT_PLUGINDIR, path[5]);
    /* make check points XDG_DATA_HOME at a private folder; the user folder must follow it. */
    const char *xdg = g_getenv("XDG_DATA_HOME");
    if (xdg)
        OK(g_str_has_prefix(path[4], xdg));
    g_strfreev(path);
    g_free(user);
    if (saved)
        g_setenv("ROBOTRAIN_PLUGIN_PATH", saved, TRUE);
    else
        g_unsetenv("ROBOTRAIN_PLUGIN_PATH");
    g_free(saved);
    return 0;
}

static void collect_file(const char *file, gpointer user_data)
{
    g_ptr_array_add(user_data, g_path_get_basename(file));
}

DEF_TEST(dl_foreach_collapses_pairs)
{
    char *dir = g_build_filename(scratch_dir, "foreach", NULL);
    g_mkdir_with_parents(dir, 0700);
    write_file(dir, "policy-x.la", "");
    write_file(dir, "policy-x.so", "");
    write_file(dir, "policy-y.so", "");
    write_file(dir, "notes.txt", "");
    write_file(dir, ".hidden.so", "");
    GPtrArray *seen = g_ptr_array_new_with_free_func(g_free);
    char *with_slash = g_strconcat(dir, "/", NULL);
    rt_dl_foreach(with_slash, collect_file, seen);
    EXPECT_EQ_INT(2, seen->len);
    EXPECT_EQ_STR("policy-x.la", g_ptr_array_index(seen, 0));
    EXPECT_EQ_STR("policy-y.so", g_ptr_array_index(seen, 1));
    g_ptr_array_set_size(seen, 0);
    rt_dl_foreach("/no/such/folder", collect_file, seen);
    EXPECT_EQ_INT(0, seen->len);
    g_ptr_array_unref(seen);
    g_free(with_slash);
    g_free(dir);
    return 0;
}

DEF_TEST(dl_open_errors)
{
    GError *error = NULL;
    char *missing = g_build_filename(scratch_dir, "policy-none", NULL);
    OK(rt_dl_open(missing, &error) == NULL);
    OK(g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND));
    EXPECT_ERROR(error, "policy-none: no such module (neither it nor");

    char *dir = g_build_filename(scratch_dir, "dl", NULL);
    g_mkdir_with_parents(dir, 0700);
    write_file(dir, "policy-static.la", "# libtool\ndlname=''\nold_library='policy-static.a'\ninstalled=no\n");
    char *path = g_build_filename(dir, "policy-static.la", NULL);
    OK(rt_dl_open(path, &error) == NULL);
    EXPECT_ERROR(error, "policy-static.la: this libtool library has no shared object (its dlname is empty)");
    g_free(path);

    write_file(dir, "policy-gone.la", "dlname='policy-gone.so'\ninstalled=yes\nlibdir='/no/where'\n");
    path = g_build_filename(dir, "policy-gone.la", NULL);
    OK(rt_dl_open(path, &error) == NULL);
    EXPECT_ERROR(error, "policy-gone.la: its shared object policy-gone.so is in none of: /no/where/policy-gone.so, ");
    g_free(path);

    write_file(dir, "policy-text.so", "this is not a shared object\n");
    path = g_build_filename(dir, "policy-text.so", NULL);
    OK(rt_dl_open(path, &error) == NULL);
    OK(g_error_matches(error, RT_ERROR, RT_ERROR_PLUGIN));
    EXPECT_ERROR(error, "policy-text.so: cannot be loaded: ");
    g_free(path);

    /* Without extension: the .la is preferred; its shared object is found under .libs. */
    char *base = g_build_filename(plugin_dir, "policy-good", NULL);
    rt_dl_handle *handle = rt_dl_open(base, &error);
    EXPECT_NO_ERROR(error);
    char *so = g_build_filename(plugin_dir, ".libs", "policy-good.so", NULL);
    EXPECT_EQ_STR(so, rt_dl_filename(handle));
    OK(rt_dl_lookup(handle, "rt_plugin_good_get_desc") != NULL);
    /* -export-symbols-regex '^rt_plugin_' keeps everything else private. */
    OK(rt_dl_lookup(handle, "good_answer") == NULL);
    OK(rt_dl_lookup(handle, "rt_plugin_absent") == NULL);
    rt_dl_close(handle);
    rt_dl_close(NULL);
    g_free(so);
    g_free(base);
    g_free(dir);
    g_free(missing);
    return 0;
}

DEF_TEST(good_module)
{
    rt_plugin_registry *registry = registry_of(plugin_dir, NULL);
    OK(registry != NULL);
    GError *error = NULL;
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error);
    EXPECT_NO_ERROR(error);
    char *path = plugin_file(plugin_dir, "policy-good.la");
    EXPECT_EQ_STR(path, m->path);
    EXPECT_EQ_STR("good", m->name);
    EXPECT_EQ_INT(RT_PLUGIN_POLICY, m->kind);
    EXPECT_EQ_INT(RT_PLUGIN_LOADED, m->status);
    EXPECT_EQ_INT(RT_PLUGIN_ABI_MAJOR, m->abi_major);
    EXPECT_EQ_INT(RT_PLUGIN_ABI_MINOR, m->abi_minor);
    OK(m->reason == NULL && m->shadowed_by == NULL);
    EXPECT_EQ_STR("1.2.3", m->desc->version);
    EXPECT_EQ_STR("Apache-2.0", m->desc->license);
    EXPECT_EQ_INT(8, m->desc->n_options);
    EXPECT_EQ_STR("chunk_size", m->desc->options[1].key);
    EXPECT_EQ_STR("100", m->desc->options[1].default_value);
    /* The right code was loaded: the vtable calls into the module. */
    const good_iface *iface = m->desc->vtable;
    EXPECT_EQ_INT(sizeof(good_iface), iface->struct_size);
    EXPECT_EQ_INT(42, iface->answer());
    /* Asking again returns the same record; '_' and '-' are the same in names. */
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error) == m);
    const rt_plugin_module *fallback = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "fallback", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("fallback", fallback->desc->name); /* through rt_plugin_get_desc */
    const rt_plugin_desc *desc = m->desc;
    rt_plugin_registry_free(registry);

    /* Modules are resident: the descriptor outlives the registry, and a new registry gets the
     * same module (not a second copy). */
    EXPECT_EQ_STR("good", desc->name);
    EXPECT_EQ_INT(42, ((const good_iface *)desc->vtable)->answer());
    registry = registry_of(plugin_dir, NULL);
    m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error);
    EXPECT_NO_ERROR(error);
    OK(m->desc == desc);
    rt_plugin_registry_free(registry);
    g_free(path);
    return 0;
}

/* find() of name fails with a message that starts with the module's file and contains each of
 * the texts; the listing shows the same reason. */
static int expect_refused(const char *name, uint32_t abi_major, uint32_t abi_minor, gboolean has_desc,
                          const char *text1, const char *text2)
{
    rt_plugin_registry *registry = registry_of(plugin_dir, NULL);
    OK(registry != NULL);
    GError *error = NULL;
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, name, &error) == NULL);
    OK(g_error_matches(error, RT_ERROR, RT_ERROR_PLUGIN));
    char *file = g_strdup_printf("policy-%s.la", name);
    char *path = plugin_file(plugin_dir, file);
    char *prefix = g_strconcat(path, ": ", NULL);
    OK1(g_str_has_prefix(error->message, prefix), "the reason starts with the module's file");
    char *message = g_strdup(error->message);
    if (text2)
        OK1(strstr(message, text2) != NULL, text2);
    EXPECT_ERROR(error, text1);
    const rt_plugin_module *m = listed(registry, path);
    OK(m != NULL);
    EXPECT_EQ_INT(RT_PLUGIN_REFUSED, m->status);
    EXPECT_EQ_STR(message, m->reason);
    EXPECT_EQ_INT(abi_major, m->abi_major);
    EXPECT_EQ_INT(abi_minor, m->abi_minor);
    EXPECT_EQ_INT(has_desc, m->desc != NULL);
    g_free(message);
    g_free(prefix);
    g_free(path);
    g_free(file);
    rt_plugin_registry_free(registry);
    return 0;
}

DEF_TEST(refusals)
{
    char *major = g_strdup_printf("built for plugin ABI %d.%d, but this robotrain (%s) has plugin ABI %d.%d and loads ",
                                  RT_PLUGIN_ABI_MAJOR + 1, RT_PLUGIN_ABI_MINOR, RT_VERSION,
                                  RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
    char *minor = g_strdup_printf("built for plugin ABI %d.%d, but this robotrain (%s) has plugin ABI %d.%d and loads ",
                                  RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR + 1, RT_VERSION,
                                  RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
    int failed = expect_refused("abi-major", RT_PLUGIN_ABI_MAJOR + 1, RT_PLUGIN_ABI_MINOR, FALSE, major,
                                "; rebuild the module against this robotrain") ||
                 expect_refused("abi-minor", RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR + 1, FALSE, minor,
                                "; rebuild the module against this robotrain") ||
                 expect_refused("null-vtable", RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR, TRUE,
                                "its descriptor has no vtable (the policy interface, its last field)",
                                "fix the module's RT_PLUGIN_DEFINE") ||
                 expect_refused("null-desc", 0, 0, FALSE,
                                "its entry point rt_plugin_null_desc_get_desc returned NULL instead of a descriptor",
                                NULL) ||
                 expect_refused("nosym", 0, 0, FALSE,
                                "not a robotrain module: it exports neither rt_plugin_nosym_get_desc nor rt_plugin_get_desc",
                                "RT_PLUGIN_DEFINE(nosym, ...)") ||
                 /* libltdl alone would load this one (it binds lazily) and the process would die
                  * on the first call; bound now, it is refused with the symbol's name. */
                 expect_refused("undefined", 0, 0, FALSE, "undefined symbol: rt_test_absent_function",
                                "check its dependencies with ldd(1): ldd -r ") ||
                 expect_refused("missing-dep", 0, 0, FALSE,
                                "librtmissing.so: cannot open shared object file",
                                "check its dependencies with ldd(1): ldd -r ");
    g_free(major);
    g_free(minor);
    return failed;
}

DEF_TEST(search_order_and_shadowing)
{
    char *main_good = plugin_file(plugin_dir, "policy-good.la");
    char *shadow_good = plugin_file(shadow_dir, "policy-good.la");
    GError *error = NULL;

    rt_plugin_registry *registry = registry_of(shadow_dir, plugin_dir);
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("2.0.0-shadow", m->desc->version);
    EXPECT_EQ_STR(shadow_good, m->path);
    const rt_plugin_module *later = listed(registry, main_good);
    OK(later != NULL);
    EXPECT_EQ_INT(RT_PLUGIN_SHADOWED, later->status);
    EXPECT_EQ_STR(shadow_good, later->shadowed_by);
    OK(later->desc == NULL && later->abi_major == 0); /* never opened */
    /* The listing is in search order: the shadow folder's module first. */
    size_t n = 0;
    const rt_plugin_module *const *all = rt_plugin_registry_list(registry, &n);
    EXPECT_EQ_STR(shadow_good, all[0]->path);
    OK(all[n] == NULL);
    const rt_plugin_desc *shadow_desc = m->desc;
    rt_plugin_registry_free(registry);

    registry = registry_of(plugin_dir, shadow_dir);
    m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("1.2.3", m->desc->version);
    EXPECT_EQ_STR(main_good, m->path);
    OK(m->desc != shadow_desc);
    later = listed(registry, shadow_good);
    EXPECT_EQ_INT(RT_PLUGIN_SHADOWED, later->status);
    EXPECT_EQ_STR(main_good, later->shadowed_by);
    rt_plugin_registry_free(registry);

    /* A plain shared object (no .la, as distributions install modules) in an earlier folder
     * shadows the .la of a later one. */
    char *copy_dir = g_build_filename(scratch_dir, "copy", NULL);
    g_mkdir_with_parents(copy_dir, 0700);
    char *so = g_build_filename(shadow_dir, ".libs", "policy-good.so", NULL);
    char *bytes = NULL;
    gsize len = 0;
    OK(g_file_get_contents(so, &bytes, &len, NULL));
    char *copy = g_build_filename(copy_dir, "policy-good.so", NULL);
    OK(g_file_set_contents(copy, bytes, (gssize)len, NULL));
    registry = registry_of(copy_dir, plugin_dir);
    m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "good", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR(copy, m->path);
    EXPECT_EQ_STR("2.0.0-shadow", m->desc->version);
    rt_plugin_registry_free(registry);

    g_free(copy);
    g_free(bytes);
    g_free(so);
    g_free(copy_dir);
    g_free(main_good);
    g_free(shadow_good);
    return 0;
}

DEF_TEST(find_by_any_kind)
{
    rt_plugin_registry *registry = registry_of(plugin_dir, NULL);
    GError *error = NULL;
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_ANY, "good", &error) == NULL);
    OK(g_error_matches(error, RT_ERROR, RT_ERROR_INVALID_ARG));
    EXPECT_ERROR(error, "'good' names 2 modules: backend-good, policy-good; ask for one of them by that full name");
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_ANY, "backend-good", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_PLUGIN_BACKEND, m->kind);
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_BACKEND, "good", &error) == m);
    m = rt_plugin_registry_find(registry, RT_PLUGIN_ANY, "fallback", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_PLUGIN_POLICY, m->kind);
    /* '-' and '_' are the same character: this finds (and refuses) policy-abi-major. */
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "abi_major", &error) == NULL);
    EXPECT_ERROR(error, "policy-abi-major.la: built for plugin ABI");
    rt_plugin_registry_free(registry);
    return 0;
}

DEF_TEST(not_found)
{
    rt_plugin_registry *registry = registry_of(plugin_dir, "/no/such/folder");
    GError *error = NULL;
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, "nope", &error) == NULL);
    OK(g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND));
    char *message = g_strdup(error->message);
    char *searched = g_strdup_printf("; searched: %s:/no/such/folder; add the folder that holds it "
                                     "with --plugin_path or ROBOTRAIN_PLUGIN_PATH",
                                     plugin_dir);
    OK1(strstr(message, searched) != NULL, "the message lists the folders searched");
    OK1(strstr(message, ", good, ") != NULL, "the message lists the policies found");
    OK1(strstr(message, "backend-good") == NULL && strstr(message, "librtmissing") == NULL,
        "only policies, and only modules");
    EXPECT_ERROR(error, "no policy module named 'nope' (a file policy-nope.la or policy-nope.so); "
                        "policy modules found: abi-major, abi-minor, fallback, good, ");
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_ANY, "nope", &error) == NULL);
    EXPECT_ERROR(error, "no module named 'nope'; modules found: backend-good, policy-abi-major, ");
    g_free(searched);
    g_free(message);
    rt_plugin_registry_free(registry);

    const char *none[] = { NULL };
    registry = rt_plugin_registry_new(none, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_plugin_registry_find(registry, RT_PLUGIN_COMM, "gloo", &error) == NULL);
    EXPECT_ERROR(error, "comm modules found: none; searched: no folders;");
    size_t n = 1;
    const rt_plugin_module *const *all = rt_plugin_registry_list(registry, &n);
    EXPECT_EQ_INT(0, n);
    OK(all[0] == NULL);
    EXPECT_EQ_INT(0, g_strv_length((char **)rt_plugin_registry_get_folders(registry)));
    rt_plugin_registry_free(registry);
    rt_plugin_registry_free(NULL);
    return 0;
}

DEF_TEST(listing)
{
    rt_plugin_registry *registry = registry_of(plugin_dir, NULL);
    size_t n = 0;
    const rt_plugin_module *const *all = rt_plugin_registry_list(registry, &n);
    /* Every module file, once, in name order; helper libraries are not modules. */
    const char *expect[] = { "backend-good", "policy-abi-major", "policy-abi-minor", "policy-fallback",
                             "policy-good", "policy-missing-dep", "policy-nosym", "policy-null-desc",
                             "policy-null-vtable", "policy-undefined" };
    EXPECT_EQ_INT(G_N_ELEMENTS(expect), n);
    int loaded = 0;
    for (size_t i = 0; i < n; i++) {
        char *file = g_strconcat(expect[i], ".la", NULL);
        char *path = plugin_file(plugin_dir, file);
        EXPECT_EQ_STR(path, all[i]->path);
        g_free(path);
        g_free(file);
        loaded += all[i]->status == RT_PLUGIN_LOADED;
        OK((all[i]->status == RT_PLUGIN_LOADED) == (all[i]->reason == NULL));
    }
    EXPECT_EQ_INT(3, loaded); /* backend-good, policy-fallback, policy-good */
    EXPECT_EQ_STR(plugin_dir, rt_plugin_registry_get_folders(registry)[0]);
    rt_plugin_registry_free(registry);
    return 0;
}

static int good_iface_size = sizeof(good_iface);
static int zero_size = 0;

/* A descriptor that passes every check; tests break one field at a time. */
static rt_plugin_desc valid_desc(void)
{
    rt_plugin_desc d = {
        .abi_major = RT_PLUGIN_ABI_MAJOR,
        .abi_minor = RT_PLUGIN_ABI_MINOR,
        .struct_size = sizeof(rt_plugin_desc),
        .kind = RT_PLUGIN_BACKEND,
        .name = "my_net",
        .vtable = &good_iface_size,
    };
    return d;
}

DEF_TEST(descriptor_checks)
{
    const char *f = "/p/backend-my-net.la";
    GError *error = NULL;
    rt_plugin_desc d = valid_desc();
    OK(rt_plugin_desc_check_abi(&d, f, &error));
    OK(rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_NO_ERROR(error);

    d.struct_size = 40;
    OK(!rt_plugin_desc_check_abi(&d, f, &error));
    EXPECT_ERROR(error, "/p/backend-my-net.la: its descriptor is 40 bytes long, shorter than the 72 bytes");
    d = valid_desc();
    d.abi_minor = 0;
    d.abi_major = 0;
    OK(!rt_plugin_desc_check_abi(&d, f, &error));
    EXPECT_ERROR(error, "/p/backend-my-net.la: built for plugin ABI 0.0, but this robotrain");

    d = valid_desc();
    d.kind = 9;
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "/p/backend-my-net.la: its descriptor has kind 9, which is none of RT_PLUGIN_POLICY");
    d.kind = RT_PLUGIN_COMM;
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "its descriptor says it is a comm module, but its file name says backend; "
                        "rename the file to comm-my-net.la, or fix the module's RT_PLUGIN_DEFINE");
    d = valid_desc();
    d.name = "";
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "/p/backend-my-net.la: its descriptor has no name;");
    d.name = NULL;
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "its descriptor has no name;");
    d.name = "other";
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "its descriptor is named 'other', but its file is named for 'my-net'; "
                        "rename the file to backend-other.la");
    d = valid_desc();
    d.vtable = &zero_size;
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "/p/backend-my-net.la: its vtable's struct_size is 0; set it to the size of the backend interface");
    d = valid_desc();
    d.n_options = 2;
    OK(!rt_plugin_desc_check_fields(&d, f, RT_PLUGIN_BACKEND, "my-net", &error));
    EXPECT_ERROR(error, "its descriptor declares 2 options but no option table");
    return 0;
}

DEF_TEST(option_table_checks)
{
    const char *f = "/p/policy-x.la";
    static const char *const choices[] = { "a", "b", NULL };
    static const char *const no_choices[] = { NULL };
    GError *error = NULL;
    rt_option good[] = {
        { .key = "n", .type = RT_OPT_INT, .default_value = "1", .help = "N.", .flags = RT_OPT_RANGE, .min = 1, .max = 1 },
        { .key = "e", .type = RT_OPT_ENUM, .default_value = "a", .help = "E.", .choices = choices },
        { .key = "l", .type = RT_OPT_LIST, .item_type = RT_OPT_FLOAT, .default_value = "[]", .help = "L." },
        /* lists of enums and of paths are valid option rows (robotrain/option.h) */
        { .key = "le", .type = RT_OPT_LIST, .item_type = RT_OPT_ENUM, .choices = choices, .default_value = "a,b", .help = "LE." },
        { .key = "lp", .type = RT_OPT_LIST, .item_type = RT_OPT_PATH, .default_value = "[]", .help = "LP." },
        { .key = "group.key", .type = RT_OPT_PATH, .flags = RT_OPT_NULLABLE, .help = "A dotted key." },
    };
    OK(rt_plugin_options_check(good, G_N_ELEMENTS(good), f, &error));
    EXPECT_NO_ERROR(error);
    OK(rt_plugin_options_check(NULL, 0, f, &error));
    EXPECT_NO_ERROR(error);

    OK(!rt_plugin_options_check(good, RT_PLUGIN_MAX_OPTIONS + 1, f, &error));
    EXPECT_ERROR(error, "/p/policy-x.la: its descriptor declares 4097 options, more than the 4096");

    /* The option parser's own rules: what the loader accepts, rt_config_add_options() does. */
    struct {
        rt_option row;
        const char *message;
    } bad[] = {
        { { .key = NULL }, "/p/policy-x.la: option 2 of its table has no key; fix the module's option table" },
        { { .key = "" }, "/p/policy-x.la: option 2 of its table has no key" },
        { { .key = "n", .type = RT_OPT_INT, .default_value = "2", .help = "N." },
          "/p/policy-x.la: option 'n' cannot be declared: it is declared twice; fix the module's option "
          "table and rebuild it (see robotrain-plugin(7))" },
        { { .key = "n.sub", .type = RT_OPT_INT, .default_value = "2", .help = "N." },
          "option 'n.sub' cannot be declared: it is both an option and a group of options" },
        { { .key = "bad key", .type = RT_OPT_INT, .default_value = "2", .help = "N." },
          "option 'bad key' is malformed: the key must be dotted components" },
        { { .key = "t", .type = (rt_option_type)99, .default_value = "1", .help = "T." },
          "option 't' is malformed: the type is not an rt_option_type" },
        { { .key = "nohelp", .type = RT_OPT_INT, .default_value = "1" },
          "option 'nohelp' is malformed: the option has no help text" },
        { { .key = "e", .type = RT_OPT_ENUM, .default_value = "a", .help = "E." },
          "option 'e' is malformed: an enum needs choices" },
        { { .key = "e", .type = RT_OPT_ENUM, .default_value = "a", .help = "E.", .choices = no_choices },
          "option 'e' is malformed: an enum needs choices" },
        { { .key = "l", .type = RT_OPT_LIST, .item_type = RT_OPT_LIST, .default_value = "[]", .help = "L." },
          "option 'l' is malformed: list items must be INT, FLOAT, STRING, ENUM or PATH" },
        { { .key = "r", .type = RT_OPT_FLOAT, .default_value = "1", .help = "R.", .flags = RT_OPT_RANGE, .min = 2, .max = 1 },
          "option 'r' is malformed: the range is empty (min > max)" },
        { { .key = "d", .type = RT_OPT_INT, .default_value = "ten", .help = "D." },
          "option 'd' is malformed: its default: 'ten' is not an integer" },
        { { .key = "u", .type = RT_OPT_STRING, .help = "U." },
          "option 'u' is malformed: a null default needs RT_OPT_NULLABLE (or RT_OPT_REQUIRED)" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        rt_option table[2] = { good[0], bad[i].row };
        OK(!rt_plugin_options_check(table, 2, f, &error));
        EXPECT_ERROR(error, bad[i].message);
    }
    return 0;
}

int main(void)
{
    const char *dir = g_getenv("ROBOTRAIN_TEST_PLUGIN_PATH");
    if (!dir)
        SKIP_ALL("ROBOTRAIN_TEST_PLUGIN_PATH is not set (run the test with make check)");
    plugin_dir = g_canonicalize_filename(dir, NULL);
    shadow_dir = g_build_filename(plugin_dir, "shadow", NULL);
    GError *error = NULL;
    scratch_dir = g_dir_make_tmp("robotrain-loader-XXXXXX", &error);
    if (!scratch_dir) {
        printf("# cannot make a temporary folder: %s\n", error->message);
        return 99;
    }

    RUN_TEST(descriptor_layout);
    RUN_TEST(kind_names);
    RUN_TEST(search_path_order);
    RUN_TEST(search_path_from_the_environment);
    RUN_TEST(dl_foreach_collapses_pairs);
    RUN_TEST(dl_open_errors);
    RUN_TEST(good_module);
    RUN_TEST(refusals);
    RUN_TEST(search_order_and_shadowing);
    RUN_TEST(find_by_any_kind);
    RUN_TEST(not_found);
    RUN_TEST(listing);
    RUN_TEST(descriptor_checks);
    RUN_TEST(option_table_checks);

    char *argv[] = { (char *)"rm", (char *)"-rf", scratch_dir, NULL };
    g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
    g_free(scratch_dir);
    g_free(shadow_dir);
    g_free(plugin_dir);
    END_TEST;
}
