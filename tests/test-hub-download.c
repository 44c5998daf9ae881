/* The Hub client's downloads against the loopback stand-in (tests/servers/hub-server.py): the
 * cache layout huggingface_hub writes, offline reuse, revision pinning, errors, retries,
 * resumed and corrupted transfers, local-folder mode, LeRobot's dataset versions. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/hub.h>

#include "servers/hub-server.h"
#include "testing.h"

#define TOKEN "hf_test_token_0123456789"
#define SHA_A "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
#define SHA_B "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
#define SHA_M "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
/* git hash-object of "hello\n" and its sha256 (`sha256sum`), independent references. */
#define HELLO_GIT_SHA1 "ce013625030ba8dba906f756967f9e9ca394464a"
#define DATA_FILE "data/chunk-000/file-000.parquet"

typedef struct fixture {
    hub_server server;
    char *dir;      /* caches and local folders of this test */
    char *commit_a; /* the files of SHA_A (tag v3.0), SHA_B (main), SHA_M (a model) */
    char *commit_b;
    char *commit_m;
    rt_hub_config *config;
} fixture;

static const char *const tiny_files[] = {
    "meta/info.json",
    "meta/stats.json",
    "meta/tasks.parquet",
    "meta/episodes/chunk-000/file-000.parquet",
    DATA_FILE,
    "videos/observation.images.cam/chunk-000/file-000.mp4",
    NULL,
};

/* Commit A: the tiny LeRobot v3 dataset of shared/data when there is one, else made-up files of
 * the same names; plus hello.txt and README.md. */
static gboolean make_commit_a(const char *dir)
{
    char *shared = rt_test_sharedfile("data/tiny-lerobot-v3");
    for (guint i = 0; tiny_files[i]; i++) {
        gboolean ok;
        if (shared) {
            char *src = g_build_filename(shared, tiny_files[i], NULL);
            GBytes *b = hub_read(src);
            gsize n = 0;
            const void *p = b ? g_bytes_get_data(b, &n) : NULL;
            ok = b && hub_write(dir, tiny_files[i], p, (gssize)n);
            if (b)
                g_bytes_unref(b);
            g_free(src);
        } else {
            gsize n = 2000 + 1000 * i;
            guint8 *data = hub_bytes(n, 100 + i);
            ok = hub_write(dir, tiny_files[i], data, (gssize)n);
            g_free(data);
        }
        if (!ok)
            return FALSE;
    }
    g_free(shared);
    return hub_write(dir, "hello.txt", "hello\n", 6) && hub_write(dir, "README.md", "# tiny\n", -1);
}

/* Commit B (main): A with another meta/info.json and one more data file. */
static gboolean make_commit_b(const char *a, const char *b)
{
    for (guint i = 0; tiny_files[i]; i++) {
        char *src = g_build_filename(a, tiny_files[i], NULL);
        GBytes *bytes = hub_read(src);
        gsize n = 0;
        const void *p = g_bytes_get_data(bytes, &n);
        gboolean ok = hub_write(b, tiny_files[i], p, (gssize)n);
        g_bytes_unref(bytes);
        g_free(src);
        if (!ok)
            return FALSE;
    }
    guint8 *more = hub_bytes(4000, 7);
    gboolean ok =
        hub_write(b, "meta/info.json", "{\"codebase_version\": \"v3.0\", \"commit\": \"B\"}\n", -1) &&
        hub_write(b, "data/chunk-000/file-001.parquet", more, 4000) &&
        hub_write(b, "hello.txt", "hello\n", 6) && hub_write(b, "README.md", "# tiny\n", -1);
    g_free(more);
    return ok;
}

static gboolean make_commit_m(const char *m)
{
    guint8 *weights = hub_bytes(6000, 42);
    gboolean ok = hub_write(m, "model.safetensors", weights, 6000) &&
                  hub_write(m, "config.json", "{\"architectures\": [\"ResNet\"]}\n", -1);
    g_free(weights);
    return ok;
}

static char *repo_json(const char *type, const char *id, const char *extra, const char *commits,
                       const char *branches, const char *tags)
{
    return g_strdup_printf("{\"type\": \"%s\", \"id\": \"%s\"%s, \"commits\": [%s], "
                           "\"branches\": {%s}, \"tags\": {%s}}",
                           type, id, extra, commits, branches, tags);
}

/* 0: ready; 77: skip; -1: failed. */
static int fixture_setup(fixture *f, int page_size)
{
    memset(f, 0, sizeof *f);
    f->dir = hub_tmpdir();
    f->commit_a = g_build_filename(f->dir, "repo-a", NULL);
    f->commit_b = g_build_filename(f->dir, "repo-b", NULL);
    f->commit_m = g_build_filename(f->dir, "repo-m", NULL);
    if (!make_commit_a(f->commit_a) || !make_commit_b(f->commit_a, f->commit_b) ||
        !make_commit_m(f->commit_m)) {
        printf("# cannot write the fixture repositories under %s\n", f->dir);
        return -1;
    }
    char *ca = g_strdup_printf("{\"sha\": \"%s\", \"dir\": \"%s\"}", SHA_A, f->commit_a);
    char *cb = g_strdup_printf("{\"sha\": \"%s\", \"dir\": \"%s\"}", SHA_B, f->commit_b);
    char *cm = g_strdup_printf("{\"sha\": \"%s\", \"dir\": \"%s\"}", SHA_M, f->commit_m);
    char *both = g_strdup_printf("%s, %s", ca, cb);
    char *main_b = g_strdup_printf("\"main\": \"%s\"", SHA_B);
    char *main_a = g_strdup_printf("\"main\": \"%s\"", SHA_A);
    char *main_m = g_strdup_printf("\"main\": \"%s\"", SHA_M);
    char *v30 = g_strdup_printf("\"v3.0\": \"%s\"", SHA_A);
    char *old = g_strdup_printf("\"v2.0\": \"%s\", \"v2.1\": \"%s\"", SHA_A, SHA_A);
    char *newer =
        g_strdup_printf("\"v3.1\": \"%s\", \"v3.0.1\": \"%s\", \"v2.1\": \"%s\"", SHA_A, SHA_A, SHA_A);
    char *ancient = g_strdup_printf("\"v1.6\": \"%s\"", SHA_A);
    char *repos[] = {
        repo_json("dataset", "lerobot/tiny", "", both, main_b, v30),
        repo_json("dataset", "lerobot/secret", ", \"private\": true", ca, main_a, ""),
        repo_json("dataset", "lerobot/gated", ", \"gated\": true", ca, main_a, ""),
        repo_json("model", "user/backbone", "", cm, main_m, ""),
        repo_json("dataset", "lerobot/old", "", ca, main_a, old),
        repo_json("dataset", "lerobot/newer", "", ca, main_a, newer),
        repo_json("dataset", "lerobot/ancient", "", ca, main_a, ancient),
        repo_json("dataset", "lerobot/untagged", "", ca, main_a, ""),
        NULL,
    };
    char *joined = g_strjoinv(", ", repos);
    char *config = g_strdup_printf("{\"tokens\": [\"%s\"], \"lfs_patterns\": [\"*.parquet\", "
                                   "\"*.mp4\", \"*.safetensors\"], \"tree_page_size\": %d, "
                                   "\"repos\": [%s]}",
                                   TOKEN, page_size, joined);
    for (char **r = repos; *r; r++)
        g_free(*r);
    g_free(joined);
    g_free(ca);
    g_free(cb);
    g_free(cm);
    g_free(both);
    g_free(main_a);
    g_free(main_b);
    g_free(main_m);
    g_free(v30);
    g_free(old);
    g_free(newer);
    g_free(ancient);
    int rc = hub_server_start(&f->server, config);
    g_free(config);
    if (rc != 0)
        return rc;

    GError *err = NULL;
    f->config = rt_hub_config_new_from_env(&err);
    if (!f->config) {
        printf("# %s\n", err->message);
        g_error_free(err);
        return -1;
    }
    g_free(f->config->endpoint);
    f->config->endpoint = g_strdup(f->server.endpoint);
    g_free(f->config->token);
    f->config->token = g_strdup(TOKEN);
    g_free(f->config->hub_cache);
    f->config->hub_cache = g_build_filename(f->dir, "hub", NULL);
    g_free(f->config->lerobot_home);
    f->config->lerobot_home = g_build_filename(f->dir, "lerobot", NULL);
    f->config->offline = FALSE; /* the test environment sets HF_HUB_OFFLINE=1 */
    f->config->max_retries = 3;
    f->config->retry_base_s = 0.001;
    f->config->retry_max_s = 0.01;
    return 0;
}

static void fixture_teardown(fixture *f)
{
    hub_server_free(&f->server);
    rt_hub_config_free(f->config);
    if (f->dir)
        hub_rm_rf(f->dir);
    g_free(f->dir);
    g_free(f->commit_a);
    g_free(f->commit_b);
    g_free(f->commit_m);
}

#define SETUP(f, page)                                                                                       \
    do {                                                                                                     \
        int rc_ = fixture_setup(&(f), (page));                                                               \
        if (rc_ == 77)                                                                                       \
            SKIP_ALL("python3 is not installed");                                                            \
        OK1(rc_ == 0, "the loopback Hub stand-in starts");                                                   \
    } while (0)

static rt_hub *client(const rt_hub_config *config)
{
    GError *err = NULL;
    rt_hub *hub = rt_hub_new(config, &err);
    if (!hub) {
        printf("# %s\n", err->message);
        g_error_free(err);
    }
    return hub;
}

static char *storage(const fixture *f, const char *cache, const char *folder)
{
    return g_build_filename(cache ? cache : f->config->hub_cache, folder, NULL);
}

static char *read_text(const char *path)
{
    char *text = NULL;
    g_file_get_contents(path, &text, NULL, NULL);
    return text;
}

/* The symlink target of path, or NULL (transfer full). */
static char *link_target(const char *path)
{
    return g_file_read_link(path, NULL);
}

static gboolean same_file(const char *a, const char *b)
{
    GBytes *x = hub_read(a), *y = hub_read(b);
    gboolean same = x && y && g_bytes_equal(x, y);
    if (x)
        g_bytes_unref(x);
    if (y)
        g_bytes_unref(y);
    return same;
}

static guint count_files(const char *dir, const char *suffix)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    guint n = 0;
    const char *name;
    while (d && (name = g_dir_read_name(d)) != NULL)
        n += !suffix || g_str_has_suffix(name, suffix);
    if (d)
        g_dir_close(d);
    return n;
}

static rt_hub_snapshot_options dataset(const char *revision)
{
    rt_hub_snapshot_options o = {.type = RT_HUB_DATASET, .repo_id = "lerobot/tiny", .revision = revision};
    return o;
}

/* ---- layout ------------------------------------------------------------------------------ */

DEF_TEST(snapshot_cache_layout)
{
    fixture f;
    SETUP(f, 2);
    rt_hub *hub = client(f.config);
    OK(hub != NULL);
    GError *err = NULL;
    rt_hub_snapshot_options o = dataset("v3.0");
    char *folder = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    char *repo = storage(&f, NULL, "datasets--lerobot--tiny");
    char *expect = g_build_filename(repo, "snapshots", SHA_A, NULL);
    EXPECT_EQ_STR(expect, folder);

    /* refs/v3.0 holds the commit, without a newline */
    char *ref_path = g_build_filename(repo, "refs", "v3.0", NULL);
    char *ref = read_text(ref_path);
    EXPECT_EQ_STR(SHA_A, ref);

    /* small files: blob named by git sha1, relative symlink as huggingface_hub makes it */
    char *hello = g_build_filename(folder, "hello.txt", NULL);
    char *target = link_target(hello);
    EXPECT_EQ_STR("../../blobs/" HELLO_GIT_SHA1, target);
    char *hello_text = read_text(hello);
    EXPECT_EQ_STR("hello\n", hello_text);

    char *info = g_build_filename(folder, "meta/info.json", NULL);
    char *info_src = g_build_filename(f.commit_a, "meta/info.json", NULL);
    GBytes *info_bytes = hub_read(info_src);
    gsize info_len = 0;
    const void *info_data = g_bytes_get_data(info_bytes, &info_len);
    char *info_sha1 = hub_git_sha1_hex(info_data, info_len);
    char *info_want = g_strconcat("../../../blobs/", info_sha1, NULL);
    char *info_target = link_target(info);
    EXPECT_EQ_STR(info_want, info_target);
    g_free(info_target);
    g_free(info_want);
    g_free(info_sha1);
    g_bytes_unref(info_bytes);
    g_free(info_src);
    g_free(info);

    /* LFS files: blob named by sha256 of the content, one more ../ per folder level */
    char *src = g_build_filename(f.commit_a, DATA_FILE, NULL);
    GBytes *bytes = hub_read(src);
    gsize n = 0;
    const void *p = g_bytes_get_data(bytes, &n);
    char *sha = hub_sha256_hex(p, n);
    char *data = g_build_filename(folder, DATA_FILE, NULL);
    char *data_target = link_target(data);
    char *want_target = g_strconcat("../../../../blobs/", sha, NULL);
    EXPECT_EQ_STR(want_target, data_target);
    OK(same_file(data, src));

    /* every file of the commit, byte for byte */
    for (guint i = 0; tiny_files[i]; i++) {
        char *a = g_build_filename(f.commit_a, tiny_files[i], NULL);
        char *b = g_build_filename(folder, tiny_files[i], NULL);
        OK1(same_file(a, b), tiny_files[i]);
        OK1(g_file_test(b, G_FILE_TEST_IS_SYMLINK), "snapshot entries are symlinks");
        g_free(a);
        g_free(b);
    }
    /* blobs: one per distinct content, nothing left half-written */
    char *blobs = g_build_filename(repo, "blobs", NULL);
    EXPECT_EQ_INT(8, count_files(blobs, NULL));
    EXPECT_EQ_INT(0, count_files(blobs, ".incomplete"));
    /* the tree listing cache huggingface_hub reads */
    char *tree = g_build_filename(repo, "trees", SHA_A ".json", NULL);
    char *tree_text = read_text(tree);
    OK(tree_text && strstr(tree_text, "\"format_version\" : 1"));
    OK(tree_text && strstr(tree_text, "\"blob_id\" : \"" HELLO_GIT_SHA1 "\""));
    char *lfs_line = g_strdup_printf("\"lfs_sha256\" : \"%s\"", sha);
    OK(tree_text && strstr(tree_text, lfs_line));
    /* the lock huggingface_hub shares */
    char *lock = g_build_filename(f.config->hub_cache, ".locks", "datasets--lerobot--tiny",
                                  HELLO_GIT_SHA1 ".lock", NULL);
    OK(g_file_test(lock, G_FILE_TEST_EXISTS));

    /* the wire: paged listing followed, token sent to the Hub and never to the storage host */
    GPtrArray *log = hub_server_log(&f.server);
    OK(hub_log_count(log, "^GET /api/datasets/lerobot/tiny/tree/" SHA_A "\\?recursive=true", "hub") >= 4);
    OK(hub_log_count(log, "^GET /api/datasets/lerobot/tiny/revision/v3.0$", "hub") == 1);
    guint to_storage = 0, with_token = 0, hub_requests = 0;
    for (guint i = 0; i < log->len; i++) {
        JsonNode *e = log->pdata[i];
        const char *auth = hub_log_header(e, "authorization");
        if (strcmp(hub_log_str(e, "port"), "storage") == 0) {
            to_storage++;
            OK1(auth == NULL, "no token sent to the storage host");
        } else {
            hub_requests++;
            with_token += auth && strcmp(auth, "Bearer " TOKEN) == 0;
        }
    }
    EXPECT_EQ_INT(4, to_storage); /* the LFS files: 3 parquet + 1 mp4 */
    EXPECT_EQ_INT(hub_requests, with_token);
    JsonNode *head =
        hub_log_find(log, "^HEAD /datasets/lerobot/tiny/resolve/" SHA_A "/hello.txt$", "hub", FALSE);
    OK(head != NULL);
    EXPECT_EQ_STR("identity", hub_log_header(head, "accept-encoding"));

    g_ptr_array_unref(log);
    g_free(lock);
    g_free(lfs_line);
    g_free(tree_text);
    g_free(tree);
    g_free(blobs);
    g_free(want_target);
    g_free(data_target);
    g_free(data);
    g_free(sha);
    g_bytes_unref(bytes);
    g_free(src);
    g_free(hello_text);
    g_free(target);
    g_free(hello);
    g_free(ref);
    g_free(ref_path);
    g_free(expect);
    g_free(repo);
    g_free(folder);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(listing_and_refs)
{
    fixture f;
    SETUP(f, 3);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    GPtrArray *files = rt_hub_list_files(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(8, files->len); /* folders left out */
    gboolean saw_hello = FALSE, saw_data = FALSE;
    for (guint i = 0; i < files->len; i++) {
        rt_hub_entry *e = files->pdata[i];
        if (strcmp(e->path, "hello.txt") == 0) {
            saw_hello = TRUE;
            EXPECT_EQ_INT(6, e->size);
            EXPECT_EQ_STR(HELLO_GIT_SHA1, e->blob_id);
            OK(e->lfs_sha256 == NULL);
        }
        if (strcmp(e->path, DATA_FILE) == 0) {
            saw_data = TRUE;
            char *src = g_build_filename(f.commit_a, DATA_FILE, NULL);
            GBytes *b = hub_read(src);
            gsize n = 0;
            const void *p = g_bytes_get_data(b, &n);
            char *sha = hub_sha256_hex(p, n);
            EXPECT_EQ_STR(sha, e->lfs_sha256);
            EXPECT_EQ_INT(n, e->size);
            g_free(sha);
            g_bytes_unref(b);
            g_free(src);
        }
    }
    OK(saw_hello && saw_data);
    g_ptr_array_unref(files);

    rt_hub_refs *refs = rt_hub_list_refs(hub, RT_HUB_DATASET, "lerobot/tiny", &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, refs->branches->len);
    EXPECT_EQ_INT(1, refs->tags->len);
    rt_hub_ref *tag = refs->tags->pdata[0];
    EXPECT_EQ_STR("v3.0", tag->name);
    EXPECT_EQ_STR("refs/tags/v3.0", tag->ref);
    EXPECT_EQ_STR(SHA_A, tag->target_commit);
    rt_hub_refs_free(refs);

    char *sha = rt_hub_resolve_revision(hub, RT_HUB_DATASET, "lerobot/tiny", "main", NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(SHA_B, sha);
    g_free(sha);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- offline ----------------------------------------------------------------------------- */

DEF_TEST(offline_reuse)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    rt_hub_snapshot_options o = dataset("v3.0");
    char *online = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    char *file =
        rt_hub_download_file(hub, RT_HUB_MODEL, "user/backbone", NULL, "model.safetensors", NULL, &err);
    EXPECT_NO_ERROR(err);
    rt_hub_free(hub);

    /* HF_HUB_OFFLINE: the same calls, no request at all */
    g_setenv("HF_HUB_OFFLINE", "1", TRUE);
    rt_hub_config *off = rt_hub_config_copy(f.config);
    rt_hub_config *env = rt_hub_config_new_from_env(&err);
    EXPECT_NO_ERROR(err);
    off->offline = env->offline;
    OK(off->offline);
    rt_hub_config_free(env);
    hub = client(off);
    char *again = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(online, again);
    char *file_again =
        rt_hub_download_file(hub, RT_HUB_MODEL, "user/backbone", "main", "model.safetensors", NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(file, file_again);
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));

    /* offline misses name the repository, the revision, the file, and what to do */
    rt_hub_snapshot_options main_o = dataset("main");
    OK(rt_hub_snapshot_download(hub, &main_o, &err) == NULL);
    OK(err && err->code == RT_ERROR_NOT_FOUND);
    OK(err && strstr(err->message, "dataset repository 'lerobot/tiny'"));
    OK(err && strstr(err->message, "HF_HUB_OFFLINE"));
    EXPECT_ERROR(err, "revision 'main'");
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", "meta/missing.json", NULL, &err) ==
       NULL);
    OK(err && strstr(err->message, "revision 'v3.0'"));
    OK(err && strstr(err->message, "run once with network access"));
    OK(err && strstr(err->message, "--dataset.root"));
    EXPECT_ERROR(err, "'meta/missing.json' of dataset repository 'lerobot/tiny'");
    const char *const more[] = {"data/chunk-000/file-001.parquet", NULL};
    o.allow_patterns = more;
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    EXPECT_ERROR(err, "'data/chunk-000/file-001.parquet' of dataset repository 'lerobot/tiny' at "
                      "revision 'v3.0' is not in the cache");
    o.allow_patterns = NULL;
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));
    rt_hub_free(hub);
    rt_hub_config_free(off);
    g_setenv("HF_HUB_OFFLINE", "1", TRUE);

    /* the Hub gone (connection refused): the cache answers after one failed attempt */
    hub_server_stop(&f.server);
    hub = client(f.config);
    char *down = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(online, down);
    EXPECT_EQ_INT(1, rt_hub_request_count(hub));
    char *hello = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", "hello.txt", NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(hello && g_str_has_suffix(hello, "snapshots/" SHA_A "/hello.txt"));
    /* by commit sha, fully cached: no request */
    guint before = rt_hub_request_count(hub);
    rt_hub_snapshot_options by_sha = dataset(SHA_A);
    char *pinned = rt_hub_snapshot_download(hub, &by_sha, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(online, pinned);
    EXPECT_EQ_INT(before, rt_hub_request_count(hub));
    /* nothing cached for main: the connection error, after the retries, with the hint */
    rt_hub_snapshot_options main2 = dataset("main");
    guint start = rt_hub_request_count(hub);
    OK(rt_hub_snapshot_download(hub, &main2, &err) == NULL);
    OK(err && err->code == RT_ERROR_NETWORK);
    OK(err && strstr(err->message, f.server.endpoint));
    OK(err && strstr(err->message, "HF_HUB_OFFLINE=1"));
    EXPECT_ERROR(err, "cannot reach the Hub");
    /* one quick attempt before looking in the cache, then 1 + max_retries */
    EXPECT_EQ_INT(1 + 1 + f.config->max_retries, rt_hub_request_count(hub) - start);

    g_free(pinned);
    g_free(hello);
    g_free(down);
    g_free(file_again);
    g_free(again);
    g_free(file);
    g_free(online);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- revisions --------------------------------------------------------------------------- */

DEF_TEST(revision_pinning)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    rt_hub_snapshot_options om = dataset("main");
    rt_hub_snapshot_options ot = dataset("v3.0");
    char *main_dir = rt_hub_snapshot_download(hub, &om, &err);
    EXPECT_NO_ERROR(err);
    char *tag_dir = rt_hub_snapshot_download(hub, &ot, &err);
    EXPECT_NO_ERROR(err);
    OK(g_str_has_suffix(main_dir, "/snapshots/" SHA_B));
    OK(g_str_has_suffix(tag_dir, "/snapshots/" SHA_A));

    char *info_b = g_build_filename(main_dir, "meta/info.json", NULL);
    char *info_a = g_build_filename(tag_dir, "meta/info.json", NULL);
    char *src_b = g_build_filename(f.commit_b, "meta/info.json", NULL);
    char *src_a = g_build_filename(f.commit_a, "meta/info.json", NULL);
    OK(same_file(info_b, src_b));
    OK(same_file(info_a, src_a));
    OK(!same_file(info_a, info_b));
    char *extra_b = g_build_filename(main_dir, "data/chunk-000/file-001.parquet", NULL);
    char *extra_a = g_build_filename(tag_dir, "data/chunk-000/file-001.parquet", NULL);
    OK(g_file_test(extra_b, G_FILE_TEST_EXISTS));
    OK(!g_file_test(extra_a, G_FILE_TEST_EXISTS));

    char *repo = storage(&f, NULL, "datasets--lerobot--tiny");
    char *ref_main = g_build_filename(repo, "refs", "main", NULL);
    char *ref_tag = g_build_filename(repo, "refs", "v3.0", NULL);
    char *t_main = read_text(ref_main), *t_tag = read_text(ref_tag);
    EXPECT_EQ_STR(SHA_B, t_main);
    EXPECT_EQ_STR(SHA_A, t_tag);
    /* identical files share one blob: 8 in A, B adds info.json and file-001 */
    char *blobs = g_build_filename(repo, "blobs", NULL);
    EXPECT_EQ_INT(10, count_files(blobs, NULL));
    /* each distinct content was fetched once: B's 9 files, then A's own info.json */
    GPtrArray *log = hub_server_log(&f.server);
    EXPECT_EQ_INT(8 + 2,
                  hub_log_count(log, "^GET ", "storage") + hub_log_count(log, "^GET /datasets/", "hub"));
    g_ptr_array_unref(log);

    /* the single-file call pins the same way */
    char *one =
        rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", SHA_A, "meta/info.json", NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(same_file(one, src_a));
    g_free(one);

    g_free(blobs);
    g_free(t_main);
    g_free(t_tag);
    g_free(ref_main);
    g_free(ref_tag);
    g_free(repo);
    g_free(extra_a);
    g_free(extra_b);
    g_free(info_a);
    g_free(info_b);
    g_free(src_a);
    g_free(src_b);
    g_free(main_dir);
    g_free(tag_dir);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- errors ------------------------------------------------------------------------------ */

DEF_TEST(errors_name_what_is_wrong)
{
    fixture f;
    SETUP(f, 100);
    GError *err = NULL;

    /* private, no token: 401, what to do */
    rt_hub_config *anon = rt_hub_config_copy(f.config);
    g_clear_pointer(&anon->token, g_free);
    rt_hub *hub = client(anon);
    rt_hub_snapshot_options o = {.type = RT_HUB_DATASET, .repo_id = "lerobot/secret"};
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    OK(err && err->code == RT_ERROR_NETWORK);
    char *url = g_strconcat(f.server.endpoint, "/api/datasets/lerobot/secret/revision/main", NULL);
    OK(err && strstr(err->message, url));
    OK(err && strstr(err->message, "401"));
    OK(err && strstr(err->message, "no token was sent"));
    OK(err && strstr(err->message, "accept its terms"));
    EXPECT_ERROR(err, "set HF_TOKEN");
    rt_hub_free(hub);

    /* a refused token: 401 "invalid", and the token is never printed */
    g_free(anon->token);
    anon->token = g_strdup("hf_wrong_secret_value");
    hub = client(anon);
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "hello.txt", NULL, &err) == NULL);
    OK(err && !strstr(err->message, "hf_wrong_secret_value"));
    EXPECT_ERROR(err, "refused the token");
    rt_hub_free(hub);
    rt_hub_config_free(anon);

    hub = client(f.config);
    /* gated, terms not accepted: 403 */
    o.repo_id = "lerobot/gated";
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    OK(err && strstr(err->message, "is gated"));
    OK(err && !strstr(err->message, TOKEN));
    EXPECT_ERROR(err, "accept its terms at ");
    /* no such repository (with a token: 404) */
    o.repo_id = "lerobot/tinny";
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    OK(err && err->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(err, "dataset repository 'lerobot/tinny' does not exist");
    /* no such revision */
    rt_hub_snapshot_options bad_rev = dataset("v9.9");
    OK(rt_hub_snapshot_download(hub, &bad_rev, &err) == NULL);
    OK(err && err->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(err, "revision 'v9.9' does not exist in dataset repository 'lerobot/tiny'");
    /* no such file: 404, named, and remembered under .no_exist */
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "meta/nope.json", NULL, &err) ==
       NULL);
    OK(err && err->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(err, "file 'meta/nope.json' does not exist in dataset repository 'lerobot/tiny' "
                      "at revision 'main'");
    char *marker = g_build_filename(f.config->hub_cache, "datasets--lerobot--tiny", ".no_exist", SHA_B,
                                    "meta", "nope.json", NULL);
    OK(g_file_test(marker, G_FILE_TEST_EXISTS));
    /* a file asked for by name in a snapshot */
    const char *const wrong[] = {"meta/info.jsn", NULL};
    rt_hub_snapshot_options named = dataset("main");
    named.allow_patterns = wrong;
    OK(rt_hub_snapshot_download(hub, &named, &err) == NULL);
    EXPECT_ERROR(err, "file 'meta/info.jsn' does not exist in dataset repository 'lerobot/tiny'");
    /* malformed names never reach the network */
    guint before = rt_hub_request_count(hub);
    o.repo_id = "lerobot/../etc";
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    EXPECT_ERROR(err, "is not a Hub repository id");
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "../../x", "a", NULL, &err) == NULL);
    EXPECT_ERROR(err, "is not a revision");
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "../secret", NULL, &err) == NULL);
    EXPECT_ERROR(err, "is not a file path inside a repository");
    EXPECT_EQ_INT(before, rt_hub_request_count(hub));

    /* 5xx that does not go away: after the retries */
    hub_server_faults(&f.server, "[{\"match\": \"^HEAD /datasets/lerobot/tiny/resolve/main/README.md\", "
                                 "\"times\": 100, \"status\": 502}]");
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "README.md", NULL, &err) == NULL);
    OK(err && err->code == RT_ERROR_NETWORK);
    OK(err && strstr(err->message, "/datasets/lerobot/tiny/resolve/main/README.md"));
    EXPECT_ERROR(err, "HTTP 502 after 4 attempts");
    g_free(marker);
    g_free(url);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- retries ----------------------------------------------------------------------------- */

DEF_TEST(retry_500_then_success)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    OK(hub_server_faults(&f.server, "[{\"match\": \"^GET /api/datasets/lerobot/tiny/revision/main$\", "
                                    "\"times\": 2, \"status\": 500}]"));
    rt_hub_snapshot_options o = dataset("main");
    const char *const meta[] = {"meta/", NULL};
    o.allow_patterns = meta;
    char *dir = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    OK(g_str_has_suffix(dir, SHA_B));
    GPtrArray *log = hub_server_log(&f.server);
    EXPECT_EQ_INT(3, hub_log_count(log, "^GET /api/datasets/lerobot/tiny/revision/main$", NULL));
    /* meta/ only: the folder pattern */
    EXPECT_EQ_INT(4, hub_log_count(log, "^HEAD /datasets/lerobot/tiny/resolve/" SHA_B "/meta/", NULL));
    EXPECT_EQ_INT(4, hub_log_count(log, "^HEAD ", NULL));
    g_ptr_array_unref(log);
    g_free(dir);

    /* a 503 with Retry-After: 1 waits that long */
    OK(hub_server_reset(&f.server));
    OK(hub_server_faults(&f.server,
                         "[{\"match\": \"^HEAD /datasets/lerobot/tiny/resolve/main/hello.txt$\", "
                         "\"times\": 2, \"status\": 503, \"headers\": {\"Retry-After\": \"1\"}}]"));
    gint64 t0 = g_get_monotonic_time();
    char *hello = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "hello.txt", NULL, &err);
    double waited = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    EXPECT_NO_ERROR(err);
    log = hub_server_log(&f.server);
    EXPECT_EQ_INT(3, hub_log_count(log, "^HEAD /datasets/lerobot/tiny/resolve/main/hello.txt$", NULL));
    g_ptr_array_unref(log);
    /* the first 503 sends it to the (empty) cache at once, the second one is waited out */
    OK1(waited >= 0.95, "Retry-After honoured");
    OK1(waited < 5, "and not much more");
    g_free(hello);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- resume, corruption ------------------------------------------------------------------ */

static char *data_sha(const fixture *f, gsize *size)
{
    char *src = g_build_filename(f->commit_a, DATA_FILE, NULL);
    GBytes *b = hub_read(src);
    const void *p = g_bytes_get_data(b, size);
    char *sha = hub_sha256_hex(p, *size);
    g_bytes_unref(b);
    g_free(src);
    return sha;
}

DEF_TEST(interrupted_download_resumes)
{
    fixture f;
    SETUP(f, 100);
    gsize size = 0;
    char *sha = data_sha(&f, &size);
    gsize half = size / 2;
    char *rule = g_strdup_printf(
        "[{\"match\": \"^GET /cdn/%s\", \"times\": 1, \"drop_after\": %" G_GSIZE_FORMAT "}]", sha, half);
    OK(hub_server_faults(&f.server, rule));
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    char *file = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err);
    EXPECT_NO_ERROR(err);
    char *src = g_build_filename(f.commit_a, DATA_FILE, NULL);
    OK(same_file(file, src));
    GPtrArray *log = hub_server_log(&f.server);
    char *cdn = g_strdup_printf("^GET /cdn/%s", sha);
    EXPECT_EQ_INT(2, hub_log_count(log, cdn, "storage"));
    JsonNode *first = hub_log_find(log, cdn, "storage", FALSE);
    JsonNode *second = hub_log_find(log, cdn, "storage", TRUE);
    OK(hub_log_header(first, "range") == NULL);
    char *range = g_strdup_printf("bytes=%" G_GSIZE_FORMAT "-", half);
    EXPECT_EQ_STR(range, hub_log_header(second, "range"));
    EXPECT_EQ_INT(206, hub_log_status(second));
    g_ptr_array_unref(log);
    g_free(file);
    rt_hub_free(hub);

    /* across calls: with no retries the first call fails and keeps <etag>.incomplete, the next
     * call sends a Range for the rest */
    char *cache2 = g_build_filename(f.dir, "hub2", NULL);
    rt_hub_config *once = rt_hub_config_copy(f.config);
    once->max_retries = 0;
    g_free(once->hub_cache);
    once->hub_cache = g_strdup(cache2);
    OK(hub_server_reset(&f.server));
    OK(hub_server_faults(&f.server, rule));
    hub = client(once);
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err) == NULL);
    EXPECT_ERROR(err, "run again to resume it");
    char *incomplete = g_strdup_printf("%s/datasets--lerobot--tiny/blobs/%s.incomplete", cache2, sha);
    GStatBuf st;
    OK(g_stat(incomplete, &st) == 0);
    EXPECT_EQ_INT(half, st.st_size);
    rt_hub_free(hub);
    OK(hub_server_reset(&f.server));
    hub = client(once);
    file = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(same_file(file, src));
    OK(!g_file_test(incomplete, G_FILE_TEST_EXISTS));
    log = hub_server_log(&f.server);
    EXPECT_EQ_INT(1, hub_log_count(log, cdn, "storage"));
    EXPECT_EQ_STR(range, hub_log_header(hub_log_find(log, cdn, "storage", FALSE), "range"));
    g_ptr_array_unref(log);
    g_free(file);
    rt_hub_free(hub);

    /* a server that ignores the Range: the download starts over, still byte-identical */
    char *cache3 = g_build_filename(f.dir, "hub3", NULL);
    g_free(once->hub_cache);
    once->hub_cache = g_strdup(cache3);
    once->max_retries = 3;
    OK(hub_server_reset(&f.server));
    char *rules =
        g_strdup_printf("[{\"match\": \"^GET /cdn/%s\", \"times\": 1, \"drop_after\": %" G_GSIZE_FORMAT "}, "
                        "{\"match\": \"^GET /cdn/%s\", \"times\": 1, \"ignore_range\": true}]",
                        sha, half, sha);
    OK(hub_server_faults(&f.server, rules));
    hub = client(once);
    file = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(same_file(file, src));
    log = hub_server_log(&f.server);
    EXPECT_EQ_INT(200, hub_log_status(hub_log_find(log, cdn, "storage", TRUE)));
    g_ptr_array_unref(log);
    g_free(file);
    rt_hub_free(hub);

    g_free(rules);
    g_free(cache3);
    g_free(incomplete);
    rt_hub_config_free(once);
    g_free(cache2);
    g_free(range);
    g_free(cdn);
    g_free(src);
    g_free(rule);
    g_free(sha);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(corrupted_download_is_refused)
{
    fixture f;
    SETUP(f, 100);
    gsize size = 0;
    char *sha = data_sha(&f, &size);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    char *rule = g_strdup_printf("[{\"match\": \"^GET /cdn/%s\", \"times\": 1, \"corrupt\": true}, "
                                 "{\"match\": \"^GET /datasets/lerobot/tiny/resolve/main/hello.txt\", "
                                 "\"times\": 1, \"corrupt\": true}]",
                                 sha);
    OK(hub_server_faults(&f.server, rule));
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err) == NULL);
    OK(err && err->code == RT_ERROR_NETWORK);
    OK(err && strstr(err->message, sha));
    EXPECT_ERROR(err, "the sha256 of the received 'data/chunk-000/file-000.parquet'");
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "hello.txt", NULL, &err) == NULL);
    EXPECT_ERROR(err, "the git sha1 of the received 'hello.txt' is ");
    char *blobs = g_build_filename(f.config->hub_cache, "datasets--lerobot--tiny", "blobs", NULL);
    EXPECT_EQ_INT(0, count_files(blobs, NULL)); /* nothing kept, not even .incomplete */
    /* the next call gets it right */
    char *file = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "hello.txt", NULL, &err);
    EXPECT_NO_ERROR(err);
    g_free(file);

    /* the announced size is not what comes */
    rt_hub_config *once = rt_hub_config_copy(f.config);
    once->max_retries = 0;
    rt_hub *hub0 = client(once);
    g_free(rule);
    rule = g_strdup_printf("[{\"match\": \"^HEAD /datasets/lerobot/tiny/resolve/v3.0/%s\", \"times\": 1, "
                           "\"size_delta\": 10}]",
                           DATA_FILE);
    OK(hub_server_faults(&f.server, rule));
    OK(rt_hub_download_file(hub0, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err) == NULL);
    char *msg = g_strdup_printf("the body ended after %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " bytes", size,
                                size + 10);
    EXPECT_ERROR(err, msg);
    g_free(msg);
    rt_hub_free(hub0);
    rt_hub_config_free(once);
    g_free(blobs);
    g_free(rule);
    g_free(sha);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- local folder (--dataset.root) ------------------------------------------------------- */

DEF_TEST(local_dir_mode)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    char *root = g_build_filename(f.dir, "root", NULL);
    rt_hub_snapshot_options o = dataset("v3.0");
    o.local_dir = root;
    char *dir = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(root, dir);
    for (guint i = 0; tiny_files[i]; i++) {
        char *a = g_build_filename(f.commit_a, tiny_files[i], NULL);
        char *b = g_build_filename(root, tiny_files[i], NULL);
        OK1(same_file(a, b), tiny_files[i]);
        OK1(!g_file_test(b, G_FILE_TEST_IS_SYMLINK), "plain files in a local folder");
        g_free(a);
        g_free(b);
    }
    char *meta_path = g_build_filename(root, ".cache/huggingface/download/hello.txt.metadata", NULL);
    char *meta = read_text(meta_path);
    OK(meta && g_str_has_prefix(meta, SHA_A "\n" HELLO_GIT_SHA1 "\n"));
    char **lines = g_strsplit(meta ? meta : "", "\n", -1);
    OK(g_strv_length(lines) == 4 && g_ascii_strtod(lines[2], NULL) > 1.7e9);
    g_strfreev(lines);
    char *ignore = g_build_filename(root, ".cache/huggingface/.gitignore", NULL);
    char *ignore_text = read_text(ignore);
    EXPECT_EQ_STR("*", ignore_text);
    /* the refs go to the cache (as huggingface_hub does), the listing beside the files */
    char *ref = g_build_filename(f.config->hub_cache, "datasets--lerobot--tiny/refs/v3.0", NULL);
    OK(g_file_test(ref, G_FILE_TEST_EXISTS));
    char *tree = g_build_filename(root, ".cache/huggingface/trees/" SHA_A ".json", NULL);
    OK(g_file_test(tree, G_FILE_TEST_EXISTS));
    rt_hub_free(hub);

    /* again: only the revision is asked for */
    hub = client(f.config);
    char *again = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, rt_hub_request_count(hub));
    /* offline: the folder as it is */
    rt_hub_free(hub);
    rt_hub_config *off = rt_hub_config_copy(f.config);
    off->offline = TRUE;
    hub = client(off);
    char *offline = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(root, offline);
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));

    rt_hub_free(hub);
    /* a local folder with no refs recorded anywhere (copied by hand): used as it is, offline,
     * as long as the files named are there */
    g_free(off->hub_cache);
    off->hub_cache = g_build_filename(f.dir, "empty-cache", NULL);
    hub = client(off);
    char *copied = rt_hub_snapshot_download(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(root, copied);
    const char *const absent[] = {"data/chunk-000/file-001.parquet", NULL};
    o.allow_patterns = absent;
    OK(rt_hub_snapshot_download(hub, &o, &err) == NULL);
    EXPECT_ERROR(err, "'data/chunk-000/file-001.parquet' of dataset repository 'lerobot/tiny'");
    g_free(copied);
    g_free(offline);
    rt_hub_config_free(off);
    g_free(again);
    g_free(tree);
    g_free(ref);
    g_free(ignore_text);
    g_free(ignore);
    g_free(meta);
    g_free(meta_path);
    g_free(dir);
    g_free(root);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- LeRobot datasets -------------------------------------------------------------------- */

DEF_TEST(dataset_versions)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    char *v = rt_hub_dataset_pick_version(hub, "lerobot/tiny", NULL, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v3.0", v);
    g_free(v);
    /* no v3.x: the next wanted version */
    v = rt_hub_dataset_pick_version(hub, "lerobot/old", NULL, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v2.1", v);
    g_free(v);
    /* LeRobot's rule: same major, minor not above; v3.1 is too new for v3.0 */
    const char *const v30[] = {"v3.0", NULL};
    v = rt_hub_dataset_pick_version(hub, "lerobot/newer", v30, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v3.0.1", v);
    g_free(v);
    const char *const v32[] = {"v3.2", NULL};
    v = rt_hub_dataset_pick_version(hub, "lerobot/newer", v32, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v3.1", v);
    g_free(v);
    OK(rt_hub_dataset_pick_version(hub, "lerobot/ancient", NULL, NULL, &err) == NULL);
    OK(err && strstr(err->message, "v1.6"));
    EXPECT_ERROR(err, "none of which robotrain reads");
    OK(rt_hub_dataset_pick_version(hub, "lerobot/untagged", NULL, NULL, &err) == NULL);
    EXPECT_ERROR(err, "has no version tag (such as v3.0) on the Hub");

    /* LeRobot's two steps into its own cache: meta/ first, then the files of the episodes */
    char *revision = NULL;
    const char *const meta[] = {"meta/", NULL};
    char *dir = rt_hub_dataset_download(hub, "lerobot/tiny", NULL, meta, NULL, &revision, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v3.0", revision);
    char *want =
        g_build_filename(f.config->lerobot_home, "hub", "datasets--lerobot--tiny", "snapshots", SHA_A, NULL);
    EXPECT_EQ_STR(want, dir);
    char *info = g_build_filename(dir, "meta/info.json", NULL);
    char *data = g_build_filename(dir, DATA_FILE, NULL);
    OK(g_file_test(info, G_FILE_TEST_EXISTS));
    OK(!g_file_test(data, G_FILE_TEST_EXISTS));
    const char *const episode[] = {DATA_FILE, "videos/observation.images.cam/chunk-000/file-000.mp4", NULL};
    char *dir2 = rt_hub_dataset_download(hub, "lerobot/tiny", revision, episode, NULL, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(want, dir2);
    OK(g_file_test(data, G_FILE_TEST_EXISTS));
    rt_hub_free(hub);

    /* offline, the version comes from the cached refs */
    rt_hub_config *off = rt_hub_config_copy(f.config);
    off->offline = TRUE;
    hub = client(off);
    v = rt_hub_dataset_pick_version(hub, "lerobot/tiny", NULL, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("v3.0", v);
    g_free(v);
    char *dir3 = rt_hub_dataset_download(hub, "lerobot/tiny", NULL, episode, NULL, NULL, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(want, dir3);
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));
    OK(rt_hub_dataset_pick_version(hub, "lerobot/old", NULL, NULL, &err) == NULL);
    EXPECT_ERROR(err, "HF_HUB_OFFLINE is set");

    g_free(dir3);
    rt_hub_config_free(off);
    g_free(dir2);
    g_free(data);
    g_free(info);
    g_free(want);
    g_free(dir);
    g_free(revision);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

/* ---- progress ---------------------------------------------------------------------------- */

typedef struct progress_log {
    guint calls;
    guint64 last_done, last_total;
    gboolean monotonic;
    gboolean cancel;
    char *path;
} progress_log;

static gboolean on_progress(const rt_hub_progress *p, void *user)
{
    progress_log *l = user;
    if (l->calls && p->done < l->last_done && g_strcmp0(l->path, p->path) == 0)
        l->monotonic = FALSE;
    l->calls++;
    l->last_done = p->done;
    l->last_total = p->total;
    g_free(l->path);
    l->path = g_strdup(p->path);
    return !l->cancel;
}

DEF_TEST(progress_and_cancel)
{
    fixture f;
    SETUP(f, 100);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    progress_log l = {.monotonic = TRUE};
    rt_hub_set_progress(hub, on_progress, &l);
    gsize size = 0;
    char *sha = data_sha(&f, &size);
    char *file = rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "v3.0", DATA_FILE, NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(l.calls >= 1);
    OK(l.monotonic);
    EXPECT_EQ_INT(size, l.last_done);
    EXPECT_EQ_INT(size, l.last_total);
    EXPECT_EQ_STR(DATA_FILE, l.path);
    g_free(file);

    l.cancel = TRUE;
    OK(rt_hub_download_file(hub, RT_HUB_DATASET, "lerobot/tiny", "main", "meta/info.json", NULL, &err) ==
       NULL);
    EXPECT_ERROR(err, "cancelled");
    g_free(l.path);
    g_free(sha);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    RUN_TEST(snapshot_cache_layout);
    RUN_TEST(listing_and_refs);
    RUN_TEST(offline_reuse);
    RUN_TEST(revision_pinning);
    RUN_TEST(errors_name_what_is_wrong);
    RUN_TEST(retry_500_then_success);
    RUN_TEST(interrupted_download_resumes);
    RUN_TEST(corrupted_download_is_refused);
    RUN_TEST(local_dir_mode);
    RUN_TEST(dataset_versions);
    RUN_TEST(progress_and_cancel);
    END_TEST;
}
