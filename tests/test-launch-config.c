/* The launch configuration: defaults, key-file load/save, every validation message. */
#include "config.h"

#include <glib/gstdio.h>

#include <robotrain/robotrain.h>
#include <robotrain/launch-config.h>

#include "testing.h"

static char *dir; /* a private folder for this run's files */

static char *file_with(const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    if (text && !g_file_set_contents(path, text, -1, NULL))
        exit(99);
    return path;
}

DEF_TEST(defaults)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    EXPECT_EQ_STR("LOCAL_MACHINE", rt_config_get_string(lc, "launch.compute_environment"));
    EXPECT_EQ_STR("no", rt_config_get_string(lc, "launch.distributed_type"));
    EXPECT_EQ_INT(1, rt_config_get_int(lc, "launch.num_machines"));
    EXPECT_EQ_INT(0, rt_config_get_int(lc, "launch.machine_rank"));
    OK(rt_config_is_null(lc, "launch.main_process_ip"));
    EXPECT_EQ_INT(29500, rt_config_get_int(lc, "launch.main_process_port"));
    EXPECT_EQ_INT(1, rt_config_get_int(lc, "launch.num_processes"));
    OK(rt_config_is_null(lc, "launch.gpu_ids"));
    g_autofree char *all = rt_config_get_text(lc, "launch.gpu_ids");
    EXPECT_EQ_STR("all", all);
    EXPECT_EQ_STR("no", rt_config_get_string(lc, "launch.mixed_precision"));
    OK(rt_config_is_null(lc, "launch.num_cpu_threads_per_process"));
    g_auto(GStrv) plugin_path = rt_config_get_string_list(lc, "core.plugin_path");
    OK(plugin_path != NULL);
    EXPECT_EQ_INT(0, g_strv_length(plugin_path));
    GError *error = NULL;
    OK(rt_launch_config_validate(lc, &error)); /* the defaults are consistent */
    EXPECT_NO_ERROR(error);

    /* the table: one per group, and rows that commands reuse as flags */
    size_t n = 0;
    OK(rt_launch_config_options("launch", &n) != NULL);
    EXPECT_EQ_INT(10, n);
    OK(rt_launch_config_options("core", &n) != NULL);
    EXPECT_EQ_INT(1, n);
    OK(rt_launch_config_options("bogus", &n) == NULL);
    EXPECT_EQ_INT(0, n);
    EXPECT_EQ_STR("launch", rt_launch_config_groups()[0]);
    const rt_option *mp = rt_launch_config_option("launch.mixed_precision");
    OK(mp && mp->type == RT_OPT_ENUM);
    EXPECT_EQ_STR("bf16", mp->choices[2]);
    OK(rt_launch_config_option("launch.bogus") == NULL);
    OK(rt_launch_config_option("mixed_precision") == NULL);

    const char *xdg = g_getenv("XDG_CONFIG_HOME"); /* set by the test environment */
    if (xdg) {
        g_autofree char *want = g_build_filename(xdg, "robotrain", "launch.conf", NULL);
        g_autofree char *path = rt_launch_config_default_path();
        EXPECT_EQ_STR(want, path);
    }
    return 0;
}

DEF_TEST(save_and_load)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    static const char *const settings[][2] = {
        {"launch.distributed_type", "multi-gpu"},
        {"launch.num_machines", "2"},
        {"launch.machine_rank", "1"},
        {"launch.main_process_ip", "10.0.0.1"},
        {"launch.main_process_port", "0"},
        {"launch.num_processes", "4"},
        {"launch.gpu_ids", "[0,1]"},
        {"launch.mixed_precision", "bf16"},
        {"launch.num_cpu_threads_per_process", "8"},
        {"core.plugin_path", "[\"/opt/a;b\",\"~/p\"]"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(settings); i++)
        OK(rt_config_set(lc, settings[i][0], settings[i][1], &error));
    OK(rt_launch_config_validate(lc, &error));
    EXPECT_NO_ERROR(error);

    g_autofree char *path = g_build_filename(dir, "sub", "launch.conf", NULL);
    OK(rt_launch_config_save(lc, path, FALSE, &error)); /* creates sub/ */
    EXPECT_NO_ERROR(error);
    g_autofree char *text = NULL;
    OK(g_file_get_contents(path, &text, NULL, NULL));
    OK(g_str_has_prefix(text, "# robotrain launch configuration: see robotrain.conf(5).\n"));
    OK(strstr(text, "\n[launch]\n# Where the processes run:"));
    OK(strstr(text, "\ngpu_ids=0;1;\n"));
    OK(strstr(text, "\nnum_processes=4\n"));
    OK(strstr(text, "\nmain_process_ip=10.0.0.1\n"));
    g_autofree char *home_p = g_build_filename(g_get_home_dir(), "p", NULL);
    g_autofree char *plugin_line = g_strdup_printf("\nplugin_path=/opt/a\\;b;%s;\n", home_p);
    OK(strstr(text, plugin_line));

    g_autoptr(rt_config) back = rt_launch_config_new();
    OK(rt_launch_config_load(back, path, &error));
    EXPECT_NO_ERROR(error);
    g_auto(GStrv) keys = rt_config_list_keys(lc);
    EXPECT_EQ_INT(11, g_strv_length(keys));
    for (size_t i = 0; keys[i]; i++) {
        g_autofree char *a = rt_config_get_text(lc, keys[i]);
        g_autofree char *b = rt_config_get_text(back, keys[i]);
        EXPECT_EQ_STR(a, b);
        EXPECT_EQ_INT(RT_SOURCE_FILE, rt_config_get_source(back, keys[i]));
        EXPECT_EQ_STR(path, rt_config_get_source_file(back, keys[i]));
    }
    g_auto(GStrv) folders = rt_config_get_string_list(back, "core.plugin_path");
    EXPECT_EQ_STR("/opt/a;b", folders[0]);

    /* no overwrite unless asked; the file stays as it was and no temporary file is left */
    g_autoptr(rt_config) other = rt_launch_config_new();
    OK(!rt_launch_config_save(other, path, FALSE, &error));
    g_autofree char *exists = g_strdup_printf("%s already exists; it was left as it is", path);
    EXPECT_ERROR(error, exists);
    g_autofree char *unchanged = NULL;
    OK(g_file_get_contents(path, &unchanged, NULL, NULL));
    EXPECT_EQ_STR(text, unchanged);
    OK(rt_launch_config_save(other, path, TRUE, &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *replaced = NULL;
    OK(g_file_get_contents(path, &replaced, NULL, NULL));
    OK(strstr(replaced, "\nnum_processes=1\n"));
    g_autofree char *sub = g_path_get_dirname(path);
    GDir *d = g_dir_open(sub, 0, NULL);
    int entries = 0;
    for (const char *name; (name = g_dir_read_name(d));)
        entries++;
    g_dir_close(d);
    EXPECT_EQ_INT(1, entries);
    g_unlink(path);
    g_rmdir(sub);
    return 0;
}

DEF_TEST(list_forms)
{
    static const char *const forms[] = {"gpu_ids=0,1\n", "gpu_ids=[0,1]\n", "gpu_ids=0;1;\n",
                                        "gpu_ids=0;1\n"};
    for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
        g_autofree char *text =
            g_strconcat("[launch]\ndistributed_type=multi-gpu\nnum_processes=2\n", forms[i], NULL);
        g_autofree char *path = file_with("forms.conf", text);
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK1(rt_launch_config_load(lc, path, &error), forms[i]);
        EXPECT_NO_ERROR(error);
        g_autofree char *ids = rt_config_get_text(lc, "launch.gpu_ids");
        EXPECT_EQ_STR("[0,1]", ids);
        g_unlink(path);
    }
    g_autofree char *path = file_with(
        "all.conf", "# a comment\n[launch]\ngpu_ids = all \nmain_process_port = 7 \n[core]\nplugin_path=\n");
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    OK(rt_launch_config_load(lc, path, &error));
    OK(rt_config_is_null(lc, "launch.gpu_ids"));
    EXPECT_EQ_INT(RT_SOURCE_FILE, rt_config_get_source(lc, "launch.gpu_ids"));
    EXPECT_EQ_INT(RT_SOURCE_DEFAULT, rt_config_get_source(lc, "launch.num_processes"));
    EXPECT_EQ_INT(7, rt_config_get_int(lc, "launch.main_process_port")); /* trailing blanks: ignored */
    EXPECT_EQ_INT(0, rt_config_get_list_length(lc, "core.plugin_path"));
    g_unlink(path);
    return 0;
}

/* Loads text as a launch.conf; the load must fail with message (after "FILE: ") and code. */
static int expect_load_error(const char *text, int code, const char *message)
{
    g_autofree char *path = file_with("bad.conf", text);
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    OK1(!rt_launch_config_load(lc, path, &error), text);
    OK1(error && error->domain == RT_ERROR && error->code == code, "error code");
    /* every line names the file */
    g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        OK1(g_str_has_prefix(lines[i], path), lines[i]);
    g_autofree char *want = g_strdup_printf("%s: %s", path, message);
    EXPECT_ERROR(error, want);
    g_unlink(path);
    return 0;
}

#define LOAD_ERROR(text, code, message)                                                                      \
    do {                                                                                                     \
        if (expect_load_error(text, code, message) != 0)                                                     \
            return -1;                                                                                       \
    } while (0)

DEF_TEST(bad_keys_and_values)
{
    LOAD_ERROR("[lanch]\nnum_processes=2\n", RT_ERROR_UNKNOWN_OPTION,
               "unknown group [lanch] (did you mean [launch]?); the groups are [launch], [core]");
    LOAD_ERROR("[launch]\nnum_proceses=2\n", RT_ERROR_UNKNOWN_OPTION,
               "[launch] num_proceses: unknown key (did you mean 'num_processes'?); the keys of [launch] are "
               "compute_environment, distributed_type, num_machines, machine_rank, main_process_ip, "
               "main_process_port, num_processes, gpu_ids, mixed_precision, num_cpu_threads_per_process");
    LOAD_ERROR(
        "[core]\nplugin_paths=/x\n", RT_ERROR_UNKNOWN_OPTION,
        "[core] plugin_paths: unknown key (did you mean 'plugin_path'?); the keys of [core] are plugin_path");
    LOAD_ERROR("[launch]\nnum_processes=two\n", RT_ERROR_INVALID_ARG,
               "[launch] num_processes: 'two' is not an integer; expected an integer from 1 to 65536");
    LOAD_ERROR("[launch]\nmain_process_port=70000\n", RT_ERROR_INVALID_ARG,
               "[launch] main_process_port: 70000 is out of range; expected an integer from 0 to 65535");
    LOAD_ERROR("[launch]\nnum_machines=0\n", RT_ERROR_INVALID_ARG,
               "[launch] num_machines: 0 is out of range; expected an integer from 1 to 65536");
    LOAD_ERROR("[launch]\nmixed_precision=fp32\n", RT_ERROR_INVALID_ARG,
               "[launch] mixed_precision: 'fp32' is not allowed; expected one of no, fp16, bf16");
    LOAD_ERROR(
        "[launch]\ndistributed_type=MULTI_GPU\n", RT_ERROR_INVALID_ARG,
        "[launch] distributed_type: 'MULTI_GPU' is not allowed (did you mean 'multi-gpu'?); expected one of "
        "no, multi-cpu, multi-gpu");
    LOAD_ERROR(
        "[launch]\ncompute_environment=AMAZON_SAGEMAKER\n", RT_ERROR_INVALID_ARG,
        "[launch] compute_environment: 'AMAZON_SAGEMAKER' is not allowed; expected one of LOCAL_MACHINE");
    LOAD_ERROR("[launch]\ngpu_ids=0;x\n", RT_ERROR_INVALID_ARG,
               "[launch] gpu_ids: item 2: 'x' is not an integer; expected a list of integers from 0 to 1023");
    LOAD_ERROR("[launch]\ngpu_ids=2000\n", RT_ERROR_INVALID_ARG,
               "[launch] gpu_ids: '2000': item 1: 2000 is out of range");
    LOAD_ERROR(
        "[launch]\nnum_cpu_threads_per_process=many\n", RT_ERROR_INVALID_ARG,
        "[launch] num_cpu_threads_per_process: 'many' is not an integer; expected an integer from 1 to 4096, "
        "or auto");
    LOAD_ERROR("[launch]\nnum_processes=null\n", RT_ERROR_INVALID_ARG,
               "[launch] num_processes: null is not allowed");
    LOAD_ERROR("[launch]\nmain_process_ip=\\q\n", RT_ERROR_INVALID_ARG,
               "[launch] main_process_ip: '\\q' cannot be read (a bad escape sequence or invalid UTF-8?)");
    LOAD_ERROR("[launch]\nnum_processes\n", RT_ERROR_FORMAT, "not a valid key file: ");
    LOAD_ERROR("num_processes=2\n", RT_ERROR_FORMAT,
               "not a valid key file: Key file does not start with a group");
    /* every problem, one line each */
    LOAD_ERROR("[launch]\nnum_processes=0\nbogus=1\n[core]\nplugin_path=\n", RT_ERROR_INVALID_ARG,
               "[launch] num_processes: 0 is out of range; expected an integer from 1 to 65536\n");
    {
        g_autofree char *path = file_with("two.conf", "[launch]\nnum_processes=0\nbogus=1\n");
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK(!rt_launch_config_load(lc, path, &error));
        g_autofree char *want = g_strdup_printf("\n%s: [launch] bogus: unknown key", path);
        EXPECT_ERROR(error, want);
        EXPECT_EQ_INT(1, rt_config_get_int(lc, "launch.num_processes")); /* nothing applied */
        g_unlink(path);
    }
    {
        g_autofree char *path = file_with("missing.conf", NULL);
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK(!rt_launch_config_load(lc, path, &error));
        OK(error && error->code == RT_ERROR_NOT_FOUND);
        g_autofree char *want = g_strdup_printf("%s: No such file or directory", path);
        EXPECT_ERROR(error, want);
    }
    return 0;
}

DEF_TEST(rules_between_keys)
{
    {
        g_autofree char *path =
            file_with("rank.conf", "[launch]\ndistributed_type=multi-cpu\nnum_machines=2\n"
                                   "machine_rank=2\nnum_processes=2\nmain_process_ip=host0\n");
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK(!rt_launch_config_load(lc, path, &error));
        g_autofree char *want =
            g_strdup_printf("%s: [launch] machine_rank: machine_rank = 2 must be less than "
                            "num_machines (2, from %s); machine ranks count from 0",
                            path, path);
        EXPECT_ERROR(error, want);
        g_unlink(path);
    }
    {
        /* the key to blame is the one the file sets: machine_rank is the default here */
        g_autofree char *path = file_with("rank0.conf", "[launch]\nmachine_rank=1\n");
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK(!rt_launch_config_load(lc, path, &error));
        g_autofree char *want =
            g_strdup_printf("%s: [launch] machine_rank: machine_rank = 1 must be less than "
                            "num_machines (1, the default)",
                            path);
        EXPECT_ERROR(error, want);
        g_unlink(path);
    }
    LOAD_ERROR(
        "[launch]\nnum_processes=2\n", RT_ERROR_INVALID_ARG,
        "[launch] num_processes: distributed_type (no, the default) runs a single process, but num_processes "
        "is 2, from");
    LOAD_ERROR(
        "[launch]\ndistributed_type=multi-gpu\n", RT_ERROR_INVALID_ARG,
        "[launch] distributed_type: distributed_type multi-gpu needs at least 2 processes, but num_processes "
        "is 1, the default; set num_processes (one per GPU), or distributed_type to no");
    LOAD_ERROR("[launch]\ndistributed_type=no\nnum_machines=2\nmain_process_ip=h\n", RT_ERROR_INVALID_ARG,
               "[launch] distributed_type: distributed_type (no, from");
    LOAD_ERROR(
        "[launch]\ndistributed_type=multi-gpu\nnum_machines=2\nnum_processes=3\nmain_process_ip=h\n",
        RT_ERROR_INVALID_ARG,
        "[launch] num_processes: num_processes = 3 is the total over all machines and must be a multiple "
        "of num_machines (2, from");
    LOAD_ERROR(
        "[launch]\ndistributed_type=multi-gpu\nnum_machines=2\nnum_processes=2\n", RT_ERROR_INVALID_ARG,
        "[launch] num_machines: num_machines = 2 needs main_process_ip, the address of machine rank 0");
    LOAD_ERROR("[launch]\nmain_process_ip=a b\n", RT_ERROR_INVALID_ARG,
               "[launch] main_process_ip: 'a b' is not a host name or IP address");
    LOAD_ERROR("[launch]\ngpu_ids=[]\n", RT_ERROR_INVALID_ARG,
               "[launch] gpu_ids: the list is empty; list the GPUs to use (e.g. 0,1), or write all");
    LOAD_ERROR("[launch]\ngpu_ids=0,0\n", RT_ERROR_INVALID_ARG, "[launch] gpu_ids: GPU 0 is listed twice");
    LOAD_ERROR(
        "[launch]\ndistributed_type=multi-gpu\nnum_processes=4\ngpu_ids=0,1\n", RT_ERROR_INVALID_ARG,
        "[launch] gpu_ids: 2 GPU(s) listed in gpu_ids for 4 processes per machine (num_processes = 4 over "
        "1 machine(s)); multi-gpu runs one process per GPU");

    /* values set by a program (the launcher's flags) are named as such */
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    OK(rt_config_set(lc, "launch.num_processes", "3", &error));
    OK(!rt_launch_config_validate(lc, &error));
    EXPECT_ERROR(error,
                 "launch.num_processes (set by the program): distributed_type (no, the default) runs a "
                 "single process, but num_processes is 3, set by the program");
    return 0;
}

DEF_TEST(this_machine)
{
    static const struct {
        const char *env;
        guint n;
    } cases[] = {
        {"0,1,2", 3}, {"", 0}, {"0,-1,2", 1}, {"GPU-8f2c,1", 2}, {" 3 , 4 ", 2}, {"x", 0},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_setenv("CUDA_VISIBLE_DEVICES", cases[i].env, TRUE);
        EXPECT_EQ_INT(cases[i].n, rt_launch_count_visible_gpus());
    }
    g_unsetenv("CUDA_VISIBLE_DEVICES");
    EXPECT_EQ_INT(0, rt_launch_count_visible_gpus());

    static const struct {
        guint gpus;
        gint64 processes;
        const char *type;
    } machines[] = {
        {0, 1, "no"},
        {1, 1, "no"},
        {2, 2, "multi-gpu"},
        {8, 8, "multi-gpu"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(machines); i++) {
        g_autoptr(rt_config) lc = rt_launch_config_new();
        GError *error = NULL;
        OK(rt_launch_config_set_machine_defaults(lc, machines[i].gpus, &error));
        EXPECT_EQ_INT(machines[i].processes, rt_config_get_int(lc, "launch.num_processes"));
        EXPECT_EQ_STR(machines[i].type, rt_config_get_string(lc, "launch.distributed_type"));
        OK(rt_launch_config_validate(lc, &error));
        EXPECT_NO_ERROR(error);
    }
    return 0;
}

int main(void)
{
    GError *error = NULL;
    dir = g_dir_make_tmp("test-launch-config-XXXXXX", &error);
    if (!dir) {
        printf("# %s\n", error->message);
        return 99;
    }
    RUN_TEST(defaults);
    RUN_TEST(save_and_load);
    RUN_TEST(list_forms);
    RUN_TEST(bad_keys_and_values);
    RUN_TEST(rules_between_keys);
    RUN_TEST(this_machine);
    g_rmdir(dir);
    g_free(dir);
    END_TEST;
}
