/* tests/test-dist-gloo.c: the Gloo comm module across real processes on loopback.
 *
 * Like robotrain launch, this driver hosts the run's store and starts tests/dist-gloo-worker
 * once per rank with the launcher's variables; each worker checks its own results (known
 * vectors, exact sums and averages, broadcast from rank 1, a barrier that really waits) and
 * reports into the store. Worlds of 2 and 3 processes; a world in which one worker exits right
 * after joining (the others must fail within the timeout, naming the collective); a world in
 * which one worker never starts (bootstrap must fail within the timeout, naming the key). */
#include "config.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/store.h>

#include "testing.h"

#define MAX_WORKERS 4

typedef struct {
    rt_store_server *server;
    rt_store *store;
    uint16_t port;
    char run_id[64];
} run;

static int run_counter;

static gboolean run_start(run *r, GError **error)
{
    g_snprintf(r->run_id, sizeof r->run_id, "gloo-test-%d-%d", (int)getpid(), run_counter++);
    r->server = rt_store_server_new("127.0.0.1", 0, r->run_id, error);
    if (!r->server)
        return FALSE;
    r->port = rt_store_server_get_port(r->server);
    r->store = rt_store_connect("127.0.0.1", r->port, r->run_id, 5000, error);
    return r->store != NULL;
}

static void run_stop(run *r)
{
    rt_store_free(r->store);
    rt_store_server_free(r->server);
}

/* Starts ranks first..last-1 of a world of size n, playing scenario. */
static gboolean spawn_workers(const run *r, int n, int count, const char *scenario, GPid *pids, GError **error)
{
    for (int rank = 0; rank < count; rank++) {
        char **env = g_get_environ();
        char value[32];
        g_snprintf(value, sizeof value, "%d", rank);
        env = g_environ_setenv(env, "RANK", value, TRUE);
        env = g_environ_setenv(env, "LOCAL_RANK", value, TRUE);
        g_snprintf(value, sizeof value, "%d", n);
        env = g_environ_setenv(env, "WORLD_SIZE", value, TRUE);
        env = g_environ_setenv(env, "LOCAL_WORLD_SIZE", value, TRUE);
        g_snprintf(value, sizeof value, "%u", r->port);
        env = g_environ_setenv(env, "MASTER_PORT", value, TRUE);
        env = g_environ_setenv(env, "MASTER_ADDR", "127.0.0.1", TRUE);
        env = g_environ_setenv(env, "ROBOTRAIN_STORE_HOSTED", "1", TRUE);
        env = g_environ_setenv(env, "ROBOTRAIN_RUN_ID", r->run_id, TRUE);
        env = g_environ_unsetenv(env, "GLOO_SOCKET_IFNAME");
        char *argv[] = { (char *)RT_TEST_GLOO_WORKER, (char *)scenario, NULL };
        gboolean ok = g_spawn_async(NULL, argv, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pids[rank], error);
        g_strfreev(env);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* Waits for every worker, killing them all after limit_s. Fills status[] with exit codes
 * (-1 for a signal). Returns FALSE when the limit was reached. */
static gboolean reap_workers(GPid *pids, int count, double limit_s, int *status)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)(limit_s * 1e6);
    int left = count;
    gboolean in_time = TRUE;
    for (int i = 0; i < count; i++)
        status[i] = -2;
    while (left > 0) {
        for (int i = 0; i < count; i++) {
            if (status[i] != -2)
                continue;
            int st = 0;
            pid_t done = waitpid(pids[i], &st, WNOHANG);
            if (done == pids[i]) {
                status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                g_spawn_close_pid(pids[i]);
                left--;
            }
        }
        if (left > 0 && g_get_monotonic_time() > deadline) {
            in_time = FALSE;
            for (int i = 0; i < count; i++)
                if (status[i] == -2)
                    kill(pids[i], SIGKILL);
            deadline = G_MAXINT64;
        }
        if (left > 0)
            g_usleep(20000);
    }
    return in_time;
}

/* The report of rank (transfer full), or NULL. */
static char *report_of(run *r, int rank)
{
    char key[32];
    g_snprintf(key, sizeof key, "report/%d", rank);
    GError *error = NULL;
    GBytes *v = rt_store_get(r->store, key, 0, &error);
    g_clear_error(&error);
    if (!v)
        return NULL;
    gsize n = 0;
    const char *data = g_bytes_get_data(v, &n);
    char *text = g_strndup(data, n);
    g_bytes_unref(v);
    return text;
}

static int check_collectives(int n)
{
    GError *error = NULL;
    run r;
    OK(run_start(&r, &error));
    EXPECT_NO_ERROR(error);
    GPid pids[MAX_WORKERS];
    int status[MAX_WORKERS];
    double t0 = g_get_monotonic_time() / 1e6;
    OK(spawn_workers(&r, n, n, "collectives", pids, &error));
    EXPECT_NO_ERROR(error);
    OK1(reap_workers(pids, n, 30.0, status), "the workers finished within 30 s");
    printf("# %d workers took %.2f s\n", n, g_get_monotonic_time() / 1e6 - t0);
    for (int i = 0; i < n; i++) {
        char *text = report_of(&r, i);
        printf("# rank %d: exit %d, report: %s\n", i, status[i], text ? text : "(none)");
        EXPECT_EQ_STR("ok", text);
        EXPECT_EQ_INT(0, status[i]);
        g_free(text);
    }
    run_stop(&r);
    return 0;
}

DEF_TEST(two_workers)
{
    return check_collectives(2);
}

DEF_TEST(three_workers)
{
    return check_collectives(3);
}

DEF_TEST(a_worker_that_exits_early_fails_the_others_in_time)
{
    GError *error = NULL;
    run r;
    OK(run_start(&r, &error));
    enum { N = 3 };
    GPid pids[N];
    int status[N];
    OK(spawn_workers(&r, N, N, "early-exit", pids, &error));
    EXPECT_NO_ERROR(error);
    /* The workers' timeout is 3 s: well within 20 s, or something hangs. */
    OK1(reap_workers(pids, N, 20.0, status), "no worker hung");
    EXPECT_EQ_INT(3, status[N - 1]);
    char *left = report_of(&r, N - 1);
    EXPECT_EQ_STR("left", left);
    g_free(left);
    for (int i = 0; i < N - 1; i++) {
        char *text = report_of(&r, i);
        printf("# rank %d: exit %d, report: %s\n", i, status[i], text ? text : "(none)");
        EXPECT_EQ_INT(0, status[i]);
        OK(text != NULL);
        double waited = g_ascii_strtod(text + strlen("failed after "), NULL);
        OK1(g_str_has_prefix(text, "failed after ") && waited < 10.0, "failed within the 3 s timeout (+ slack)");
        OK(strstr(text, "gloo allreduce (sum) of 4096 f32 elements: rank ") != NULL);
        OK(strstr(text, " of 3: ") != NULL);
        g_free(text);
    }
    run_stop(&r);
    return 0;
}

DEF_TEST(a_worker_that_never_starts_fails_the_bootstrap_in_time)
{
    GError *error = NULL;
    run r;
    OK(run_start(&r, &error));
    enum { N = 3 };
    GPid pids[N];
    int status[N];
    OK(spawn_workers(&r, N, N - 1, "missing-peer", pids, &error));
    EXPECT_NO_ERROR(error);
    OK1(reap_workers(pids, N - 1, 20.0, status), "no worker hung");
    char *address = g_strdup_printf("127.0.0.1:%u", r.port);
    for (int i = 0; i < N - 1; i++) {
        char *text = report_of(&r, i);
        printf("# rank %d: exit %d, report: %s\n", i, status[i], text ? text : "(none)");
        EXPECT_EQ_INT(0, status[i]);
        OK(text != NULL);
        double waited = g_ascii_strtod(text + strlen("failed after "), NULL);
        OK1(waited >= 1.0 && waited < 10.0, "gave up after about the 1.5 s timeout");
        char *expect = g_strdup_printf("gloo bootstrap of communicator 'missing' through the store at %s: rank %d "
                                       "of 3: rendezvous store at %s: timed out after 1.5 s waiting for key "
                                       "'comm/gloo/missing/1/2'",
                                       address, i, address);
        OK1(strstr(text, expect) != NULL, expect);
        g_free(expect);
        g_free(text);
    }
    g_free(address);
    run_stop(&r);
    return 0;
}

int main(void)
{
    RUN_TEST(two_workers);
    RUN_TEST(three_workers);
    RUN_TEST(a_worker_that_exits_early_fails_the_others_in_time);
    RUN_TEST(a_worker_that_never_starts_fails_the_bootstrap_in_time);
    END_TEST;
}
