/* Unit tests of the launcher's library side (src/dist/launcher.h): the plan a launch
 * configuration resolves to (with a fake GPU probe), each worker's environment, the hosted
 * rendezvous store, output prefixing, wait statuses in words, and a few runs of /bin/sh
 * workers. The program as users run it is tested by tests/launch-*.sh. */
#include "config.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <robotrain/launch-config.h>
#include <robotrain/store.h>

#include "dist/launcher.h"
#include "testing.h"

/* ---------------------------------------------------------------- a fake probe */

typedef struct {
    int machine, visible;
    const char *why;
    int calls;
} fake_gpus;

static void fake_probe(rt_launch_gpus *gpus, gpointer data)
{
    fake_gpus *f = data;
    f->calls++;
    gpus->machine = f->machine;
    gpus->visible = f->visible;
    gpus->why_none = f->why ? g_strdup(f->why) : NULL;
}

static const char *const test_env[] = {"PATH=/usr/bin:/bin", "OMP_NUM_THREADS=7", NULL};

/* A launch configuration with the given flags applied ("num_processes=3", "--multi_gpu"). */
static rt_config *config_with(const char *const *flags)
{
    rt_config *lc = rt_launch_config_new();
    for (size_t i = 0; flags && flags[i]; i++) {
        GError *error = NULL;
        gboolean ok;
        if (strcmp(flags[i], "--multi_gpu") == 0) {
            ok = rt_launch_config_set_flag(lc, "launch.distributed_type", "multi-gpu", "--multi_gpu", &error);
        } else {
            const char *eq = strchr(flags[i], '=');
            g_autofree char *name = g_strndup(flags[i], (gsize)(eq - flags[i]));
            g_autofree char *key = g_strconcat("launch.", name, NULL);
            g_autofree char *flag = g_strconcat("--", name, NULL);
            ok = rt_launch_config_set_flag(lc, key, eq + 1, flag, &error);
        }
        if (!ok)
            g_error("%s: %s", flags[i], error->message);
    }
    return lc;
}

static rt_launch_plan *plan_for(const char *const *flags, gboolean use_cpu, fake_gpus *gpus, GError **error)
{
    g_autoptr(rt_config) lc = config_with(flags);
    return rt_launch_plan_new(lc, use_cpu, fake_probe, gpus, test_env, error);
}

/* ---------------------------------------------------------------- plans */

DEF_TEST(single_process_by_default)
{
    fake_gpus gpus = {0};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(NULL, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("no", plan->distributed_type);
    EXPECT_EQ_INT(1, plan->world_size);
    EXPECT_EQ_INT(1, plan->local_world_size);
    EXPECT_EQ_INT(0, plan->first_rank);
    EXPECT_EQ_STR("127.0.0.1", plan->master_addr);
    EXPECT_EQ_INT(29500, plan->master_port);
    OK(!plan->host_store);
    OK(!plan->use_cpu);
    EXPECT_EQ_STR(NULL, plan->cuda_visible_devices);
    EXPECT_EQ_STR("7", plan->cpu_threads); /* the launcher's OMP_NUM_THREADS */
    EXPECT_EQ_STR("no", plan->mixed_precision);
    OK(g_str_has_prefix(plan->run_id, "launch-"));
    EXPECT_EQ_INT(0, g_strv_length(plan->notes));
    EXPECT_EQ_INT(0, gpus.calls); /* nothing asked for GPUs */
    return 0;
}

DEF_TEST(processes_without_gpus_run_on_cpus)
{
    fake_gpus gpus = {0, 0, "no CUDA here", 0};
    const char *flags[] = {"num_processes=3", "mixed_precision=bf16", "num_cpu_threads_per_process=2", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("multi-cpu", plan->distributed_type);
    OK(plan->use_cpu);
    EXPECT_EQ_STR("", plan->cuda_visible_devices);
    EXPECT_EQ_INT(3, plan->world_size);
    OK(plan->host_store);
    EXPECT_EQ_STR("bf16", plan->mixed_precision);
    EXPECT_EQ_STR("2", plan->cpu_threads);
    EXPECT_EQ_INT(1, gpus.calls);
    EXPECT_EQ_STR(
        "3 processes and 0 GPU(s) visible: distributed_type multi-cpu (instead of no, the default of "
        "launch.distributed_type)",
        plan->notes[0]);
    g_autofree char *text = rt_launch_plan_describe(plan);
    EXPECT_EQ_STR(
        "3 workers (ranks 0-2 of 3) on machine 0 of 1, distributed_type multi-cpu, rendezvous hosted at "
        "127.0.0.1:29500, CPUs only, mixed precision bf16, 2 CPU thread(s) each",
        text);
    return 0;
}

DEF_TEST(processes_with_gpus_run_on_gpus)
{
    fake_gpus gpus = {4, 4, NULL, 0};
    const char *flags[] = {"num_processes=2", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("multi-gpu", plan->distributed_type);
    OK(!plan->use_cpu);
    EXPECT_EQ_STR(NULL, plan->cuda_visible_devices); /* every worker sees the launcher's GPUs */
    return 0;
}

DEF_TEST(multi_gpu_defaults_to_one_process_per_gpu)
{
    fake_gpus gpus = {4, 3, NULL, 0};
    const char *flags[] = {"--multi_gpu", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(3, plan->world_size);
    EXPECT_EQ_STR("num_processes not given: 3, one per visible GPU of each of the 1 machine(s)",
                  plan->notes[0]);
    const char *with_ids[] = {"--multi_gpu", "gpu_ids=2,3", NULL};
    g_autoptr(rt_launch_plan) listed = plan_for(with_ids, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(2, listed->world_size);
    EXPECT_EQ_STR("2,3", listed->cuda_visible_devices);
    return 0;
}

DEF_TEST(one_process_from_a_flag_is_not_distributed)
{
    fake_gpus gpus = {2, 2, NULL, 0};
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    /* as a key file would say it */
    OK(rt_config_set(lc, "launch.distributed_type", "multi-gpu", &error) &&
       rt_config_set(lc, "launch.num_processes", "2", &error));
    OK(rt_launch_config_set_flag(lc, "launch.num_processes", "1", "--num_processes", &error));
    g_autoptr(rt_launch_plan) plan = rt_launch_plan_new(lc, FALSE, fake_probe, &gpus, test_env, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("no", plan->distributed_type);
    EXPECT_EQ_STR(
        "one process: distributed_type no (instead of multi-gpu, launch.distributed_type (set by the "
        "program))",
        plan->notes[0]);
    return 0;
}

DEF_TEST(cpu_flag)
{
    fake_gpus gpus = {2, 2, NULL, 0};
    const char *flags[] = {"num_processes=2", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("multi-cpu", plan->distributed_type);
    EXPECT_EQ_STR("", plan->cuda_visible_devices);
    g_autoptr(rt_launch_plan) one = plan_for(NULL, TRUE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("no", one->distributed_type);
    OK(one->use_cpu);
    EXPECT_EQ_STR("", one->cuda_visible_devices);
    EXPECT_EQ_INT(0, gpus.calls);

    const char *ids_flag[] = {"gpu_ids=0", NULL};
    OK(plan_for(ids_flag, TRUE, &gpus, &error) == NULL);
    EXPECT_ERROR(error,
                 "--gpu_ids=0: the workers run on CPUs (distributed_type no, from --cpu) and use no GPU; "
                 "leave out --gpu_ids, or use --multi_gpu");

    /* gpu_ids of a key file is not used by a CPU run */
    g_autoptr(rt_config) lc = rt_launch_config_new();
    OK(rt_config_set(lc, "launch.gpu_ids", "0,1", &error));
    g_autoptr(rt_launch_plan) from_file = rt_launch_plan_new(lc, TRUE, fake_probe, &gpus, test_env, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("", from_file->cuda_visible_devices);
    return 0;
}

DEF_TEST(missing_gpus)
{
    fake_gpus none = {0, 0, "CUDA reports no device", 0};
    GError *error = NULL;
    const char *multi[] = {"--multi_gpu", NULL};
    OK(plan_for(multi, FALSE, &none, &error) == NULL);
    EXPECT_ERROR(error,
                 "--multi_gpu: multi-gpu runs one process per GPU, but no GPU is visible on this machine: "
                 "CUDA reports no device; check nvidia-smi, or run on CPUs with --cpu");
    const char *ids[] = {"gpu_ids=0,1", NULL};
    OK(plan_for(ids, FALSE, &none, &error) == NULL);
    EXPECT_ERROR(error,
                 "--gpu_ids=0,1 names GPUs, but no GPU is visible on this machine: CUDA reports no device");

    fake_gpus four = {4, 4, NULL, 0};
    const char *ids5[] = {"--multi_gpu", "num_processes=2", "gpu_ids=0,5", NULL};
    OK(plan_for(ids5, FALSE, &four, &error) == NULL);
    EXPECT_ERROR(error, "--gpu_ids=0,5: there is no GPU 5: this machine has 4 GPU(s), numbered 0 to 3");

    fake_gpus hidden = {4, 0, NULL, 0};
    OK(plan_for(multi, FALSE, &hidden, &error) == NULL);
    EXPECT_ERROR(error,
                 "no GPU is visible on this machine: CUDA_VISIBLE_DEVICES is not set hides its 4 GPU(s)");

    fake_gpus two = {4, 2, NULL, 0};
    const char *three[] = {"--multi_gpu", "num_processes=3", NULL};
    const char *const env[] = {"CUDA_VISIBLE_DEVICES=0,1", NULL};
    g_autoptr(rt_config) lc = config_with(three);
    OK(rt_launch_plan_new(lc, FALSE, fake_probe, &two, env, &error) == NULL);
    EXPECT_ERROR(error,
                 "--num_processes: multi-gpu runs 3 process(es) on this machine, one per GPU, but 2 GPU(s) "
                 "are visible (CUDA_VISIBLE_DEVICES=0,1); lower --num_processes, or run on CPUs with --cpu");
    return 0;
}

DEF_TEST(two_machines)
{
    fake_gpus gpus = {0};
    const char *flags[] = {"num_machines=2",           "machine_rank=1",          "num_processes=4",
                           "main_process_ip=10.0.0.1", "main_process_port=29600", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(4, plan->world_size);
    EXPECT_EQ_INT(2, plan->local_world_size);
    EXPECT_EQ_INT(2, plan->first_rank);
    EXPECT_EQ_STR("10.0.0.1", plan->master_addr);
    EXPECT_EQ_INT(29600, plan->master_port);
    OK(!plan->host_store); /* machine 0 hosts it */
    EXPECT_EQ_STR("default", plan->run_id);

    const char *const env[] = {"ROBOTRAIN_RUN_ID=job42", NULL};
    g_autoptr(rt_config) lc = config_with(flags);
    g_autoptr(rt_launch_plan) named = rt_launch_plan_new(lc, TRUE, fake_probe, &gpus, env, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("job42", named->run_id);
    EXPECT_EQ_STR("1", named->cpu_threads); /* no OMP_NUM_THREADS: 1 */
    return 0;
}

DEF_TEST(impossible_settings)
{
    fake_gpus gpus = {0};
    GError *error = NULL;
    const char *rank[] = {"num_machines=2", "machine_rank=2", "num_processes=2", "main_process_ip=h", NULL};
    OK(plan_for(rank, TRUE, &gpus, &error) == NULL);
    EXPECT_ERROR(error,
                 "--machine_rank: machine_rank = 2 must be less than num_machines (2, from --num_machines)");
    const char *divisible[] = {"num_machines=2", "num_processes=3", "main_process_ip=h", NULL};
    OK(plan_for(divisible, TRUE, &gpus, &error) == NULL);
    EXPECT_ERROR(error,
                 "--num_processes: num_processes = 3 is the total over all machines and must be a multiple "
                 "of num_machines (2, from --num_machines)");
    const char *port0[] = {"num_machines=2", "num_processes=2", "main_process_ip=h", "main_process_port=0",
                           NULL};
    OK(plan_for(port0, TRUE, &gpus, &error) == NULL);
    EXPECT_ERROR(error,
                 "--main_process_port: main_process_port = 0 picks a free port on machine rank 0, which the "
                 "other machines cannot know: give a fixed port for a run over 2 machines");
    return 0;
}

DEF_TEST(set_flag_errors_name_the_flag)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    GError *error = NULL;
    OK(!rt_launch_config_set_flag(lc, "launch.num_processes", "two", "--num_processes", &error));
    EXPECT_ERROR(error, "--num_processes: 'two' is not an integer; expected an integer from 1 to 65536");
    OK(rt_launch_config_set_flag(lc, "launch.num_processes", "2", "--num_processes", &error));
    EXPECT_EQ_INT(RT_SOURCE_ARGS, rt_config_get_source(lc, "launch.num_processes"));
    EXPECT_EQ_STR(NULL, rt_config_get_source_file(lc, "launch.num_processes"));
    g_autofree char *origin = rt_config_describe_origin(lc, "launch.num_processes");
    EXPECT_EQ_STR("--num_processes", origin);
    return 0;
}

/* ---------------------------------------------------------------- environment */

static const char *env_get(char **env, const char *name)
{
    return g_environ_getenv(env, name);
}

DEF_TEST(worker_environment)
{
    fake_gpus gpus = {0};
    const char *flags[] = {"num_machines=2",
                           "machine_rank=1",
                           "num_processes=6",
                           "main_process_ip=10.0.0.1",
                           "main_process_port=29601",
                           "mixed_precision=fp16",
                           NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    const char *const base[] = {"PATH=/bin", "RANK=99", "ROBOTRAIN_STORE_PORT=1",
                                "TORCHELASTIC_USE_AGENT_STORE=True", NULL};
    g_auto(GStrv) env = rt_launch_plan_worker_environ(plan, 2, base);
    EXPECT_EQ_STR("/bin", env_get(env, "PATH"));
    EXPECT_EQ_STR("5", env_get(env, "RANK")); /* 1 * 3 + 2 */
    EXPECT_EQ_STR("2", env_get(env, "LOCAL_RANK"));
    EXPECT_EQ_STR("6", env_get(env, "WORLD_SIZE"));
    EXPECT_EQ_STR("3", env_get(env, "LOCAL_WORLD_SIZE"));
    EXPECT_EQ_STR("1", env_get(env, "GROUP_RANK"));
    EXPECT_EQ_STR("2", env_get(env, "GROUP_WORLD_SIZE"));
    EXPECT_EQ_STR("10.0.0.1", env_get(env, "MASTER_ADDR"));
    EXPECT_EQ_STR("29601", env_get(env, "MASTER_PORT"));
    EXPECT_EQ_STR("29601", env_get(env, "ROBOTRAIN_STORE_PORT"));
    EXPECT_EQ_STR("1", env_get(env, "ROBOTRAIN_STORE_HOSTED"));
    EXPECT_EQ_STR("default", env_get(env, "ROBOTRAIN_RUN_ID"));
    EXPECT_EQ_STR("fp16", env_get(env, "ROBOTRAIN_MIXED_PRECISION"));
    EXPECT_EQ_STR("7", env_get(env, "OMP_NUM_THREADS"));
    EXPECT_EQ_STR("", env_get(env, "CUDA_VISIBLE_DEVICES"));

    g_autoptr(rt_launch_plan) single = plan_for(NULL, FALSE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    const char *const inherited[] = {"ROBOTRAIN_STORE_HOSTED=1", "CUDA_VISIBLE_DEVICES=3", NULL};
    g_auto(GStrv) one = rt_launch_plan_worker_environ(single, 0, inherited);
    EXPECT_EQ_STR(NULL, env_get(one, "ROBOTRAIN_STORE_HOSTED")); /* a single process hosts its own */
    EXPECT_EQ_STR("3", env_get(one, "CUDA_VISIBLE_DEVICES"));    /* gpu_ids all: left as it is */
    EXPECT_EQ_STR("0", env_get(one, "RANK"));
    EXPECT_EQ_STR("1", env_get(one, "WORLD_SIZE"));
    return 0;
}

/* ---------------------------------------------------------------- the rendezvous */

DEF_TEST(hosted_store)
{
    fake_gpus gpus = {0};
    const char *flags[] = {"num_processes=2", "main_process_port=0", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, &error);
    EXPECT_NO_ERROR(error);
    rt_store_server *server = NULL;
    OK(rt_launcher_host_store(plan, &server, &error));
    EXPECT_NO_ERROR(error);
    OK(server != NULL);
    OK(plan->master_port != 0);
    EXPECT_EQ_INT(rt_store_server_get_port(server), plan->master_port);

    /* a worker of the run reaches it with the run id the plan gives the workers */
    rt_store *client = rt_store_connect("127.0.0.1", plan->master_port, plan->run_id, 5000, &error);
    EXPECT_NO_ERROR(error);
    gint64 sum = 0;
    OK(rt_store_add(client, "n", 2, &sum, &error));
    EXPECT_EQ_INT(2, sum);
    rt_store_free(client);

    /* a second run on the same port is refused, saying how to get another */
    g_autoptr(rt_config) lc = config_with(flags);
    g_autofree char *port = g_strdup_printf("%u", plan->master_port);
    OK(rt_launch_config_set_flag(lc, "launch.main_process_port", port, "--main_process_port", &error));
    g_autoptr(rt_launch_plan) again = rt_launch_plan_new(lc, TRUE, fake_probe, &gpus, test_env, &error);
    EXPECT_NO_ERROR(error);
    rt_store_server *second = NULL;
    OK(!rt_launcher_host_store(again, &second, &error));
    OK(second == NULL);
    g_autofree char *expected =
        g_strdup_printf("cannot host the rendezvous on port %s (main_process_port)", port);
    OK(error && strstr(error->message, "Address already in use"));
    EXPECT_ERROR(error, expected);
    rt_store_server_free(server);

    /* a single process gets a free port but no store */
    const char *single[] = {"main_process_port=0", NULL};
    g_autoptr(rt_launch_plan) one = plan_for(single, TRUE, &gpus, &error);
    OK(rt_launcher_host_store(one, &second, &error));
    OK(second == NULL);
    OK(one->master_port != 0);
    return 0;
}

/* ---------------------------------------------------------------- output */

/* Everything p wrote into a pipe, after flushing it. */
static char *prefixed(const char *const *pieces)
{
    int fds[2];
    if (pipe(fds) < 0)
        return NULL;
    rt_line_prefixer *p = rt_line_prefixer_new("[rank 3] ", fds[1]);
    for (size_t i = 0; pieces[i]; i++)
        rt_line_prefixer_feed(p, pieces[i], strlen(pieces[i]));
    rt_line_prefixer_free(p);
    close(fds[1]);
    GString *out = g_string_new(NULL);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        g_string_append_len(out, buf, n);
    close(fds[0]);
    return g_string_free(out, FALSE);
}

DEF_TEST(line_prefixer)
{
    const char *pieces[] = {"ab", "c\nde", "\n\n", "last", NULL};
    g_autofree char *out = prefixed(pieces);
    EXPECT_EQ_STR("[rank 3] abc\n[rank 3] de\n[rank 3] \n[rank 3] last\n", out);

    const char *none[] = {NULL};
    g_autofree char *empty = prefixed(none);
    EXPECT_EQ_STR("", empty);

    /* a line longer than the limit is cut, each piece prefixed */
    g_autofree char *lng = g_strnfill(RT_LINE_PREFIXER_MAX + 10, 'x');
    const char *longp[] = {lng, "\n", NULL};
    g_autofree char *expected =
        g_strdup_printf("[rank 3] %.*s\n[rank 3] xxxxxxxxxx\n", RT_LINE_PREFIXER_MAX, lng);
    g_autofree char *cut = NULL;
    /* more than a pipe holds: write to a file */
    g_autofree char *path = g_build_filename(g_get_tmp_dir(), "rt-prefixer-XXXXXX", NULL);
    int fd = g_mkstemp(path);
    OK(fd >= 0);
    rt_line_prefixer *p = rt_line_prefixer_new("[rank 3] ", fd);
    for (size_t i = 0; longp[i]; i++)
        rt_line_prefixer_feed(p, longp[i], strlen(longp[i]));
    rt_line_prefixer_free(p);
    close(fd);
    OK(g_file_get_contents(path, &cut, NULL, NULL));
    unlink(path);
    OK1(cut && strcmp(expected, cut) == 0,
        "a long line is cut into prefixed pieces"); /* (not printed: 64 KiB) */

    /* nobody reads: output is dropped, nothing fails */
    int fds[2];
    OK(pipe(fds) == 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    p = rt_line_prefixer_new("> ", fds[1]);
    rt_line_prefixer_feed(p, "lost\n", 5);
    rt_line_prefixer_feed(p, "lost too\n", 9);
    rt_line_prefixer_free(p);
    close(fds[1]);
    signal(SIGPIPE, SIG_DFL);
    return 0;
}

/* ---------------------------------------------------------------- statuses and runs */

/* The wait status of sh -c script (run by GLib, so no state of this process is copied). */
static int status_of_child(const char *script)
{
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)script, NULL};
    int status = -1;
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status, NULL))
        return -1;
    return status;
}

DEF_TEST(statuses_in_words)
{
    g_autofree char *three = rt_launcher_describe_status(status_of_child("exit 3"));
    EXPECT_EQ_STR("exited with status 3", three);
    g_autofree char *killed = rt_launcher_describe_status(status_of_child("kill -KILL $$"));
    EXPECT_EQ_STR("was killed by signal 9 (SIGKILL)", killed);
    g_autofree char *term = rt_launcher_describe_status(status_of_child("kill -TERM $$"));
    EXPECT_EQ_STR("was killed by signal 15 (SIGTERM)", term);
    return 0;
}

DEF_TEST(find_program)
{
    GError *error = NULL;
    g_autofree char *sh = rt_launcher_find_program("sh", &error);
    EXPECT_NO_ERROR(error);
    OK(sh && g_path_is_absolute(sh));
    OK(rt_launcher_find_program("/no/such/program", &error) == NULL);
    EXPECT_ERROR(error, "'/no/such/program' does not exist");
    OK(rt_launcher_find_program("/etc", &error) == NULL);
    EXPECT_ERROR(error, "'/etc' is not an executable file");
    OK(rt_launcher_find_program("train", &error) == NULL);
    EXPECT_ERROR(error,
                 "'train' was not found in PATH; the program to launch is any executable, looked up in PATH "
                 "(to train: robotrain launch [options] -- robotrain train [options])");
    return 0;
}

/* Runs n_processes /bin/sh workers executing script. */
static gboolean run_sh(int n_processes, const char *script, rt_launch_result *result, GError **error)
{
    fake_gpus gpus = {0};
    g_autofree char *n = g_strdup_printf("num_processes=%d", n_processes);
    const char *flags[] = {n, NULL};
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, error);
    if (!plan)
        return FALSE;
    g_autofree char *sh = rt_launcher_find_program("sh", error);
    char *argv[] = {(char *)"sh", (char *)"-c", (char *)script, NULL};
    rt_launch_options options = {.grace_period_s = 5, .prefix_output = TRUE, .log = NULL};
    return rt_launcher_run(plan, sh, argv, &options, result, error);
}

DEF_TEST(runs)
{
    GError *error = NULL;
    rt_launch_result result;
    OK(run_sh(3, "exit 0", &result, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(0, result.exit_status);
    EXPECT_EQ_INT(-1, result.failed_rank);
    EXPECT_EQ_STR("3 workers exited with status 0", result.summary);
    g_free(result.summary);

    /* rank 1 fails at once; rank 0 would sleep 20 s but is stopped by SIGTERM */
    gint64 start = g_get_monotonic_time();
    OK(run_sh(2, "if [ $RANK = 1 ]; then exit 3; fi; exec sleep 20", &result, &error));
    EXPECT_NO_ERROR(error);
    OK(g_get_monotonic_time() - start < 10 * G_USEC_PER_SEC);
    EXPECT_EQ_INT(3, result.exit_status);
    EXPECT_EQ_INT(1, result.failed_rank);
    OK(WIFEXITED(result.failed_status) && WEXITSTATUS(result.failed_status) == 3);
    OK(g_str_has_prefix(result.summary, "rank 1 (pid "));
    OK(g_str_has_suffix(result.summary, ") exited with status 3"));
    g_free(result.summary);

    OK(run_sh(2, "if [ $RANK = 0 ]; then kill -SEGV $$; fi; exit 0", &result, &error));
    EXPECT_EQ_INT(128 + SIGSEGV, result.exit_status);
    EXPECT_EQ_INT(0, result.failed_rank);
    OK(g_str_has_suffix(result.summary, "was killed by signal 11 (SIGSEGV)"));
    g_free(result.summary);

    /* the handlers the launcher installed are gone again */
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    OK(now.sa_handler == SIG_DFL);
    sigaction(SIGCHLD, NULL, &now);
    OK(now.sa_handler == SIG_DFL);
    return 0;
}

DEF_TEST(spawn_failure)
{
    fake_gpus gpus = {0};
    const char *flags[] = {"num_processes=2", NULL};
    GError *error = NULL;
    g_autoptr(rt_launch_plan) plan = plan_for(flags, TRUE, &gpus, &error);
    char *argv[] = {(char *)"x", NULL};
    rt_launch_options options = {.grace_period_s = 1};
    rt_launch_result result;
    if (rt_launcher_run(plan, "/no/such/program", argv, &options, &result, &error)) {
        /* posix_spawn() may also report a failed exec as exit status 127 (it does under valgrind) */
        EXPECT_EQ_INT(127, result.exit_status);
        EXPECT_EQ_INT(0, result.failed_rank);
        g_free(result.summary);
        return 0;
    }
    EXPECT_ERROR(error, "cannot start rank 0 (/no/such/program): No such file or directory");
    return 0;
}

int main(void)
{
    RUN_TEST(single_process_by_default);
    RUN_TEST(processes_without_gpus_run_on_cpus);
    RUN_TEST(processes_with_gpus_run_on_gpus);
    RUN_TEST(multi_gpu_defaults_to_one_process_per_gpu);
    RUN_TEST(one_process_from_a_flag_is_not_distributed);
    RUN_TEST(cpu_flag);
    RUN_TEST(missing_gpus);
    RUN_TEST(two_machines);
    RUN_TEST(impossible_settings);
    RUN_TEST(set_flag_errors_name_the_flag);
    RUN_TEST(worker_environment);
    RUN_TEST(hosted_store);
    RUN_TEST(line_prefixer);
    RUN_TEST(statuses_in_words);
    RUN_TEST(find_program);
    RUN_TEST(runs);
    RUN_TEST(spawn_failure);
    END_TEST;
}
