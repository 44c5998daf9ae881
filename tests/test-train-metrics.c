/* Metrics: LeRobot's number formatting and console line (values worked out by hand with
 * Python's format rules: %.0f rounds half to even, .3f, .1e), the step counters of
 * MetricsTracker, metrics.jsonl, the log prefix, tqdm's bar; and the stop flag set by SIGINT and
 * SIGTERM. */
#include "config.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testing.h"
#include "train/metrics.h"
#include "train/stop.h"

static char *big(double v)
{
    GString *s = g_string_new(NULL);
    rt_format_big_number(s, v);
    return g_string_free(s, FALSE);
}

DEF_TEST(big_numbers)
{
    const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {200, "200"},
        {999, "999"},
        {1000, "1K"},
        {1499, "1K"},
        {1500, "2K"},
        /* 1.5: half to even */ {2500, "2K"},
        {999999, "1000K"},
        {1e6, "1M"},
        {123456789, "123M"},
        {32.32, "32"},
        {2.5e9, "2B"},
        {7e12, "7T"},
        {4e15, "4Q"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *s = big(cases[i].v);
        EXPECT_EQ_STR(cases[i].text, s);
    }
    return 0;
}

static rt_metrics *window(gboolean gpu)
{
    /* batch 8 on 2 processes, 1000 frames in 20 episodes, resumed at step 100 */
    rt_metrics *m = rt_metrics_new(8, 2, 1000, 20, 100, gpu);
    rt_metrics_step(m);
    rt_metrics_update(m, "loss", 1.0);
    rt_metrics_update(m, "loss", 2.0);
    rt_metrics_update(m, "grad_norm", 12.3456);
    rt_metrics_update(m, "lr", 1e-5);
    rt_metrics_update(m, "update_s", 0.1);
    rt_metrics_update(m, "dataloading_s", 0.02);
    rt_metrics_update(m, "l1_loss", 0.4567);
    rt_metrics_update(m, "kld_loss", 0.0781);
    rt_metrics_finish_window(m);
    return m;
}

DEF_TEST(tracker_and_line)
{
    rt_metrics *m = rt_metrics_new(8, 2, 1000, 20, 100, FALSE);
    EXPECT_EQ_INT(100, rt_metrics_steps(m));
    EXPECT_EQ_INT(1600, rt_metrics_samples(m));       /* 100 x 8 x 2 */
    EXPECT_NEAR(32.0, rt_metrics_episodes(m), 1e-12); /* 1600 / (1000 / 20) */
    EXPECT_NEAR(1.6, rt_metrics_epochs(m), 1e-12);
    rt_metrics_free(m);

    m = window(FALSE);
    EXPECT_EQ_INT(101, rt_metrics_steps(m));
    EXPECT_EQ_INT(1616, rt_metrics_samples(m));
    EXPECT_NEAR(1.5, rt_metrics_meter(m, "loss")->avg, 0);
    EXPECT_NEAR(16 / (0.1 + 0.02), rt_metrics_meter(m, "samples_per_s")->avg, 1e-12);
    OK(rt_metrics_meter(m, "gpu_mem_gb") == NULL);
    g_autofree char *line = rt_metrics_format_line(m);
    EXPECT_EQ_STR(
        "step:101 smpl:2K ep:32 epch:1.62 loss:1.500 grdn:12.346 lr:1.0e-05 updt_s:0.100 data_s:0.020 "
        "smp/s:133 l1_loss:0.457 kld_loss:0.078",
        line);
    g_autofree char *json = rt_metrics_to_json(m, 1764581405.25);
    EXPECT_EQ_STR(
        "{\"steps\": 101, \"samples\": 1616, \"episodes\": 32.32, \"epochs\": 1.616, \"loss\": 1.5, "
        "\"grad_norm\": 12.3456, \"lr\": 1e-05, \"update_s\": 0.1, \"dataloading_s\": 0.02, "
        "\"samples_per_s\": 133.33333333333331, \"l1_loss\": 0.4567, \"kld_loss\": 0.0781, "
        "\"time\": 1764581405.250}",
        json);

    /* after a log step the averages start again; the policy's meters stay, at zero */
    rt_metrics_reset(m);
    rt_metrics_update(m, "loss", NAN);
    g_autofree char *line2 = rt_metrics_format_line(m);
    EXPECT_EQ_STR("step:101 smpl:2K ep:32 epch:1.62 loss:nan grdn:0.000 lr:0.0e+00 updt_s:0.000 data_s:0.000 "
                  "smp/s:0 l1_loss:0.000 kld_loss:0.000",
                  line2);
    g_autofree char *json2 = rt_metrics_to_json(m, 0);
    OK(strstr(json2, "\"loss\": null, "));
    rt_metrics_free(m);

    m = window(TRUE); /* with CUDA: mem_gb before the policy's meters */
    rt_metrics_update(m, "gpu_mem_gb", 1.234);
    g_autofree char *line3 = rt_metrics_format_line(m);
    OK(strstr(line3, " smp/s:133 mem_gb:1.23 l1_loss:0.457 kld_loss:0.078"));
    rt_metrics_free(m);
    return 0;
}

DEF_TEST(log_prefix)
{
    g_autoptr(GDateTime) when = g_date_time_new_utc(2026, 12, 1, 9, 30, 5);
    GString *s = g_string_new(NULL);
    rt_log_prefix(s, "INFO", when, "src/train/loop.c", 641);
    EXPECT_EQ_STR("INFO 2026-12-01 09:30:05 rain/loop.c:641 ", s->str);
    g_string_truncate(s, 0);
    rt_log_prefix(s, "WARNING", when, "a.c", 1);
    EXPECT_EQ_STR("WARNING 2026-12-01 09:30:05           a.c:1 ", s->str);
    g_string_free(s, TRUE);
    return 0;
}

DEF_TEST(metrics_jsonl)
{
    g_autofree char *dir = g_dir_make_tmp("test-train-metrics-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "run", NULL);
    GError *error = NULL;
    rt_metrics *m = window(FALSE);
    rt_metrics_log *log = rt_metrics_log_open(out, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_metrics_log_write(log, m, 10.0, &error));
    rt_metrics_step(m);
    OK(rt_metrics_log_write(log, m, 11.0, &error));
    rt_metrics_log_close(log);
    log = rt_metrics_log_open(out, &error); /* a resumed run appends */
    OK(rt_metrics_log_write(log, m, 12.0, &error));
    rt_metrics_log_close(log);
    g_autofree char *path = g_build_filename(out, "metrics.jsonl", NULL);
    g_autofree char *text = NULL;
    OK(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    EXPECT_EQ_INT(4, g_strv_length(lines)); /* three lines and the empty rest */
    EXPECT_EQ_STR("", lines[3]);
    for (int i = 0; i < 3; i++) {
        JsonParser *p = json_parser_new();
        OK(json_parser_load_from_data(p, lines[i], -1, NULL));
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        EXPECT_EQ_INT(i == 0 ? 101 : 102, json_object_get_int_member(o, "steps"));
        EXPECT_NEAR(10.0 + i, json_object_get_double_member(o, "time"), 0);
        EXPECT_NEAR(1.5, json_object_get_double_member(o, "loss"), 0);
        g_object_unref(p);
    }
    rt_metrics_free(m);
    g_unlink(path);
    g_rmdir(out);
    g_rmdir(dir);

    OK(!rt_metrics_log_open("/proc/no-such-dir/run", &error));
    EXPECT_ERROR(error, "/proc/no-such-dir/run: cannot create");
    return 0;
}

DEF_TEST(progress_bar)
{
    /* 80 columns: "Training:  13%|" + 26 cells + "| 1300/10000 [01:02<07:30, 19.30step/s]";
     * 0.13 x 26 x 8 = 27 eighths: three full cells and a 3/8 one */
    g_autofree char *a = rt_progress_format("Training", 1300, 10000, 62.4, 19.3, 80);
    EXPECT_EQ_STR("Training:  13%|███▍                      | 1300/10000 [01:02<07:30, 19.30step/s]", a);
    EXPECT_EQ_INT(80, g_utf8_strlen(a, -1));
    g_autofree char *b = rt_progress_format("Training", 5, 10, 3725, 0.5, 60); /* slow: s/step, hours */
    OK(g_str_has_prefix(b, "Training:  50%|"));
    OK(g_str_has_suffix(b, "| 5/10 [1:02:05<00:10,  2.00s/step]"));
    g_autofree char *c = rt_progress_format("Training", 0, 10, 0, 0, 60); /* no rate yet */
    OK(g_str_has_suffix(c, "| 0/10 [00:00<?, ?step/s]"));
    g_autofree char *d = rt_progress_format("Training", 10, 10, 5, 2, 60);
    OK(g_str_has_prefix(d, "Training: 100%|██████████"));

    /* not a terminal: no bar, lines pass through */
    FILE *f = tmpfile();
    rt_progress *p = rt_progress_new(f, 0, 10);
    OK(!rt_progress_enabled(p));
    rt_progress_update(p, 3);
    rt_progress_print(p, "step:3\n");
    rt_progress_free(p);
    rewind(f);
    char buf[64] = {0};
    OK(fread(buf, 1, sizeof buf - 1, f) == 7);
    EXPECT_EQ_STR("step:3\n", buf);
    fclose(f);
    return 0;
}

static volatile sig_atomic_t custom_calls;
static void custom_handler(int sig)
{
    (void)sig;
    custom_calls++;
}

DEF_TEST(stop_signals)
{
    struct sigaction sa = {0};
    sa.sa_handler = custom_handler;
    sigemptyset(&sa.sa_mask);
    OK(sigaction(SIGTERM, &sa, NULL) == 0);
    GError *error = NULL;
    OK(rt_train_stop_install(&error));
    EXPECT_EQ_INT(0, rt_train_stop_requested());
    OK(raise(SIGINT) == 0);
    EXPECT_EQ_INT(SIGINT, rt_train_stop_requested());
    rt_train_stop_clear();
    OK(raise(SIGTERM) == 0);
    EXPECT_EQ_INT(SIGTERM, rt_train_stop_requested());
    EXPECT_EQ_INT(0, custom_calls); /* ours, not the previous handler */
    rt_train_stop_uninstall();
    OK(raise(SIGTERM) == 0);
    EXPECT_EQ_INT(1, custom_calls); /* the previous handler is back */
    rt_train_stop_clear();

    /* a second signal ends the process by that signal */
    pid_t pid = fork();
    OK(pid >= 0);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        if (!rt_train_stop_install(NULL))
            _exit(2);
        raise(SIGINT);
        if (rt_train_stop_requested() != SIGINT)
            _exit(3);
        raise(SIGINT);
        _exit(4); /* not reached */
    }
    int status = 0;
    OK(waitpid(pid, &status, 0) == pid);
    OK1(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "the child died of the second SIGINT");
    return 0;
}

int main(void)
{
    RUN_TEST(big_numbers);
    RUN_TEST(tracker_and_line);
    RUN_TEST(log_prefix);
    RUN_TEST(metrics_jsonl);
    RUN_TEST(progress_bar);
    RUN_TEST(stop_signals);
    END_TEST;
}
