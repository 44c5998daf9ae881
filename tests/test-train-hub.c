/* The multi-process contract of rt_train_hub_dataset_folder() (src/train/train-hub.h): with two
 * "ranks" in two threads and a barrier between them, only rank 0 talks to the Hub (the loopback
 * stand-in counts the requests), the other waits for it and then finds the same folder in the
 * cache; when rank 0 fails, the other stops with an error instead of downloading itself. */
#include "config.h"

#include <robotrain/robotrain.h>

#include "servers/hub-server.h"
#include "train/train-hub.h"
#include "train/train-options.h"

#define SHA "3333333333333333333333333333333333333333"

/* A two-party barrier: rank 0 opens it with its result, rank 1 waits for it. */
typedef struct barrier {
    GMutex lock;
    GCond cond;
    gboolean opened, main_ok;
    gint64 opened_at; /* monotonic µs */
} barrier;

typedef struct rank {
    barrier *b;
    gboolean is_main;
    gint64 waited_until; /* when rank 1's wait returned */
    const char *repo_id;
    char *folder;
    GError *error;
} rank;

static hub_server *server;
static guint requests_at_open; /* requests the server had logged when rank 0 opened the barrier */

static guint n_requests(void)
{
    GPtrArray *log = hub_server_log(server);
    guint n = log->len;
    g_ptr_array_unref(log);
    return n;
}

static gboolean wait_func(void *user_data, gboolean main_ok, GError **error)
{
    rank *r = user_data;
    barrier *b = r->b;
    g_mutex_lock(&b->lock);
    if (r->is_main) {
        b->opened = TRUE;
        b->main_ok = main_ok;
        b->opened_at = g_get_monotonic_time();
        requests_at_open = n_requests(); /* the server logs a request before it answers */
        g_cond_broadcast(&b->cond);
    } else {
        while (!b->opened)
            g_cond_wait(&b->cond, &b->lock);
        r->waited_until = g_get_monotonic_time();
    }
    gboolean ok = b->main_ok;
    g_mutex_unlock(&b->lock);
    if (!ok && !r->is_main)
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rank 0 could not get the dataset");
    return ok;
}

static rt_config *train_config(const char *repo_id)
{
    rt_config *cfg = rt_config_new("test");
    GError *error = NULL;
    if (!rt_train_add_options(cfg, &error) || !rt_config_set(cfg, "dataset.repo_id", repo_id, &error))
        g_error("%s", error->message);
    return cfg;
}

static gpointer run_rank(gpointer data)
{
    rank *r = data;
    rt_config *cfg = train_config(r->repo_id);
    r->folder = rt_train_hub_dataset_folder(cfg, r->is_main, wait_func, r, NULL, &r->error);
    rt_config_free(cfg);
    return NULL;
}

/* Rank 1 starts first and must wait; rank 0 starts later and downloads. */
static void two_ranks(barrier *b, rank *r0, rank *r1, const char *repo_id)
{
    memset(b, 0, sizeof *b);
    g_mutex_init(&b->lock);
    g_cond_init(&b->cond);
    *r0 = (rank){.b = b, .is_main = TRUE, .repo_id = repo_id};
    *r1 = (rank){.b = b, .is_main = FALSE, .repo_id = repo_id};
    GThread *t1 = g_thread_new("rank1", run_rank, r1);
    g_usleep(100 * 1000);
    GThread *t0 = g_thread_new("rank0", run_rank, r0);
    g_thread_join(t0);
    g_thread_join(t1);
    g_mutex_clear(&b->lock);
    g_cond_clear(&b->cond);
}

DEF_TEST(only_rank0_downloads)
{
    g_autofree char *src = hub_tmpdir();
    OK(hub_write(src, "meta/info.json", "{\"codebase_version\": \"v3.0\"}", -1) &&
       hub_write(src, "data/chunk-000/file-000.parquet", "not really parquet", -1));
    g_autofree char *config =
        g_strdup_printf("{\"repos\": [{\"type\": \"dataset\", \"id\": \"o/d\", \"commits\": [{\"sha\": "
                        "\"%s\", \"dir\": \"%s\"}],"
                        " \"branches\": {\"main\": \"%s\"}, \"tags\": {\"v3.0\": \"%s\"}}]}",
                        SHA, src, SHA, SHA);
    hub_server s;
    int rc = hub_server_start(&s, config);
    if (rc == 77) {
        hub_rm_rf(src);
        SKIP_ALL("python3 is needed for the Hub stand-in");
    }
    OK(rc == 0);
    server = &s;
    g_autofree char *home = hub_tmpdir();
    g_setenv("HF_ENDPOINT", s.endpoint, TRUE);
    g_setenv("HF_HOME", home, TRUE);
    g_unsetenv("HF_HUB_OFFLINE");
    g_unsetenv("HF_LEROBOT_HOME");
    g_unsetenv("HF_HUB_CACHE");

    barrier b;
    rank r0, r1;
    two_ranks(&b, &r0, &r1, "o/d");
    EXPECT_NO_ERROR(r0.error);
    EXPECT_NO_ERROR(r1.error);
    g_autofree char *want =
        g_build_filename(home, "lerobot", "hub", "datasets--o--d", "snapshots", SHA, NULL);
    EXPECT_EQ_STR(want, r0.folder);
    EXPECT_EQ_STR(want, r1.folder);
    OK1(r1.waited_until >= b.opened_at, "rank 1 went on only after rank 0 had the dataset");
    GPtrArray *log = hub_server_log(&s);
    /* one rank's requests: refs, revision, tree, and one GET per file */
    EXPECT_EQ_INT(2, hub_log_count(log, "^GET /datasets/o/d/resolve/", NULL));
    EXPECT_EQ_INT(1, hub_log_count(log, "^GET /api/datasets/o/d/refs", NULL));
    EXPECT_EQ_INT(requests_at_open, log->len); /* none from rank 1 */
    g_ptr_array_unref(log);
    g_free(r0.folder);
    g_free(r1.folder);

    /* rank 0 fails (the repository does not exist): rank 1 stops too, with no request of its own */
    two_ranks(&b, &r0, &r1, "o/missing");
    OK(r0.folder == NULL && r1.folder == NULL);
    EXPECT_ERROR(r0.error, "--dataset.repo_id=o/missing: ");
    EXPECT_ERROR(r1.error, "rank 0 could not get the dataset");
    log = hub_server_log(&s);
    OK1(hub_log_count(log, "o/missing", NULL) >= 1, "rank 0 asked the Hub");
    EXPECT_EQ_INT(requests_at_open, log->len); /* none from rank 1 */
    g_ptr_array_unref(log);
    g_clear_error(&r0.error);
    g_clear_error(&r1.error);
    hub_server_stop(&s);
    hub_server_free(&s);
    hub_rm_rf(home);
    hub_rm_rf(src);
    return 0;
}

int main(void)
{
    RUN_TEST(only_rank0_downloads);
    END_TEST;
}
