/* W&B artifacts: the digests and the manifest against values computed independently (Python's
 * hashlib, RFC 1321's MD5 of "hello"), then the upload flow against the stand-in server
 * (tests/servers/wandb-server.py checks each mutation's variables, the uploads' Content-MD5 and
 * bytes, the manifest and the artifact digest at commit): two files committed with their
 * sizes and MD5; the same bytes again deduplicated; 5xx uploads retried; a refused upload a
 * warning while the run goes on; offline and disabled runs. */
#include "config.h"

#include <string.h>

#include "testing.h"
#include "test-wandb-server.h"

#include "net/wandb-private.h"
#include <robotrain/wandb.h>

#define KEY "wb_artifact_key"

static char *tmp_root;

static char *new_dir(const char *name)
{
    return wbt_new_dir(tmp_root, name);
}

static void test_settings(rt_wandb_settings *s, const char *url, const char *out)
{
    wbt_settings(s, url, out, KEY, 200);
}

/* ---------------------------------------------------------------- no server */

DEF_TEST(digests)
{
    /* the values are Python's: hashlib.md5(b"wandb-artifact-manifest-v1\n" + b"".join(
     * b"%s:%s\n" % (name, digest) for name in sorted(entries))).hexdigest() */
    rt_wandb_artifact_entry e[] = {
        {.name = "model.safetensors", .md5 = "I1fPVsLW8lQ/ZFbG9je8HA==", .size = 44952128},
        {.name = "config.json", .md5 = "AAAAAAAAAAAAAAAAAAAAAA==", .size = 7},
        {.name = "b/x.bin", .md5 = "XUFAKrxLKna5cZ2REBfFkg==", .size = 5},
    };
    g_autofree char *digest = rt_wandb_artifact_digest(e, G_N_ELEMENTS(e));
    EXPECT_EQ_STR("79781acf53f8014a74d57fd95aa92088", digest);

    g_autofree char *manifest = rt_wandb_artifact_manifest(e, G_N_ELEMENTS(e));
    JsonNode *root = wbt_parse(manifest);
    OK(root && JSON_NODE_HOLDS_OBJECT(root));
    JsonObject *o = json_node_get_object(root);
    EXPECT_EQ_INT(1, json_object_get_int_member(o, "version"));
    EXPECT_EQ_STR("wandb-storage-policy-v1", json_object_get_string_member(o, "storagePolicy"));
    JsonObject *contents = json_object_get_object_member(o, "contents");
    EXPECT_EQ_INT(3, json_object_get_size(contents));
    JsonObject *m = json_object_get_object_member(contents, "model.safetensors");
    EXPECT_EQ_STR("I1fPVsLW8lQ/ZFbG9je8HA==", json_object_get_string_member(m, "digest"));
    EXPECT_EQ_INT(44952128, json_object_get_int_member(m, "size"));
    /* sorted by name, as the server's digest reads them */
    OK(strstr(manifest, "\"b/x.bin\"") < strstr(manifest, "\"config.json\"") &&
       strstr(manifest, "\"config.json\"") < strstr(manifest, "\"model.safetensors\""));
    json_node_unref(root);

    g_autofree char *dir = new_dir("md5");
    g_autofree char *hello = g_build_filename(dir, "hello", NULL);
    g_file_set_contents(hello, "hello", 5, NULL);
    char *md5 = NULL;
    gint64 size = 0;
    GError *err = NULL;
    OK(rt_wandb_file_md5(hello, &md5, &size, &err));
    EXPECT_EQ_STR("XUFAKrxLKna5cZ2REBfFkg==", md5); /* MD5("hello") = 5d41402abc4b2a76b9719d911017c592 */
    EXPECT_EQ_INT(5, size);
    g_free(md5);

    /* a file of several read blocks: the same as the MD5 of its bytes at once */
    gsize big_len = (1u << 16) * 3 + 17;
    guchar *big = g_malloc(big_len);
    for (gsize i = 0; i < big_len; i++)
        big[i] = (guchar)(i * 7 + i / 251);
    g_autofree char *big_path = g_build_filename(dir, "big", NULL);
    g_file_set_contents(big_path, (const char *)big, (gssize)big_len, NULL);
    guint8 raw[16];
    gsize raw_len = sizeof raw;
    GChecksum *c = g_checksum_new(G_CHECKSUM_MD5);
    g_checksum_update(c, big, big_len);
    g_checksum_get_digest(c, raw, &raw_len);
    g_checksum_free(c);
    g_autofree char *want = g_base64_encode(raw, raw_len);
    OK(rt_wandb_file_md5(big_path, &md5, &size, &err));
    EXPECT_EQ_STR(want, md5);
    EXPECT_EQ_INT((gint64)big_len, size);
    g_free(md5);
    g_free(big);

    g_autofree char *missing = g_build_filename(dir, "missing", NULL);
    OK(!rt_wandb_file_md5(missing, &md5, &size, &err));
    EXPECT_ERROR(err, missing);
    return 0;
}

/* ---------------------------------------------------------------- against the server */

/* The server's committed or pending artifact of that name (state JSON), or NULL. */
static JsonObject *find_artifact(JsonNode *state, const char *name, const char *want_state)
{
    JsonObject *arts = json_object_get_object_member(json_node_get_object(state), "artifacts");
    GList *ids = json_object_get_members(arts);
    JsonObject *found = NULL;
    for (GList *l = ids; l; l = l->next) {
        JsonObject *a = json_object_get_object_member(arts, l->data);
        if (strcmp(json_object_get_string_member(a, "name"), name) == 0 &&
            strcmp(json_object_get_string_member(a, "state"), want_state) == 0)
            found = a;
    }
    g_list_free(ids);
    return found;
}

static JsonNode *read_state(wbt_server *srv)
{
    char *text = NULL;
    g_file_get_contents(srv->state, &text, NULL, NULL);
    JsonNode *n = wbt_parse(text ? text : "{}");
    g_free(text);
    return n;
}

static gboolean has_alias(JsonObject *a, const char *alias)
{
    JsonArray *aliases = json_object_get_array_member(a, "aliases");
    for (guint i = 0; i < json_array_get_length(aliases); i++)
        if (strcmp(json_array_get_string_element(aliases, i), alias) == 0)
            return TRUE;
    return FALSE;
}

static guint count_puts(wbt_server *srv, const char *status_text)
{
    g_auto(GStrv) lines = wbt_read_lines(srv->record);
    guint n = 0;
    for (size_t i = 0; lines[i]; i++)
        if (strstr(lines[i], "\"method\": \"PUT\"") && strstr(lines[i], status_text))
            n++;
    return n;
}

DEF_TEST(upload)
{
    g_autofree char *dir = new_dir("upload");
    wbt_server srv;
    const char *args[] = {"--api-key", KEY, NULL};
    OK(wbt_server_start(&srv, dir, args));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);

    g_autofree char *a_path = g_build_filename(dir, "weights.bin", NULL);
    g_autofree char *b_path = g_build_filename(dir, "config.json", NULL);
    g_file_set_contents(a_path, "0123456789abcdef", 16, NULL);
    g_file_set_contents(b_path, "{\"type\": \"act\"}", -1, NULL);
    const char *paths[] = {a_path, b_path, NULL};
    const char *names[] = {"model.safetensors", "sub/config.json", NULL};
    const char *aliases[] = {"latest", NULL};
    OK(rt_wandb_run_log_artifact(run, "ckpt-000010", "model", aliases, paths, names, &err));
    EXPECT_NO_ERROR(err);
    /* the same bytes under another run's version: deduplicated (no upload, committed) */
    OK(rt_wandb_run_log_artifact(run, "ckpt-000010", "model", aliases, paths, names, &err));
    /* arguments are checked at once */
    OK(!rt_wandb_run_log_artifact(run, "bad:name", "model", aliases, paths, names, &err));
    EXPECT_ERROR(err, "bad:name");
    const char *gone[] = {"/nonexistent/file", NULL};
    OK(!rt_wandb_run_log_artifact(run, "gone", "model", aliases, gone, NULL, &err));
    EXPECT_ERROR(err, "/nonexistent/file");
    OK(rt_wandb_run_finish(run, 0, 20000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_artifact_stats st;
    rt_wandb_run_get_artifact_stats(run, &st);
    EXPECT_EQ_INT(2, st.queued);
    EXPECT_EQ_INT(2, st.committed);
    EXPECT_EQ_INT(0, st.failed);
    g_autofree char *run_id = g_strdup(rt_wandb_run_get_id(run));
    rt_wandb_run_free(run);

    JsonNode *state = read_state(&srv);
    JsonObject *a = find_artifact(state, "ckpt-000010", "COMMITTED");
    OK(a != NULL);
    if (a) {
        EXPECT_EQ_STR("model", json_object_get_string_member(a, "type"));
        EXPECT_EQ_STR(run_id, json_object_get_string_member(a, "run"));
        EXPECT_EQ_STR("ent", json_object_get_string_member(a, "entity"));
        EXPECT_EQ_STR("v0", json_object_get_string_member(a, "version"));
        OK(has_alias(a, "latest"));
        JsonObject *files = json_object_get_object_member(a, "files");
        EXPECT_EQ_INT(2, json_object_get_size(files));
        JsonObject *f = json_object_get_object_member(files, "model.safetensors");
        /* python3 -c 'import hashlib,base64;print(base64.b64encode(hashlib.md5(b"0123456789abcdef").digest()))' */
        EXPECT_EQ_STR("QDKvjWEDUSOQbljgZxQMxQ==", json_object_get_string_member(f, "md5"));
        EXPECT_EQ_INT(16, json_object_get_int_member(f, "size"));
        OK(json_object_has_member(files, "sub/config.json"));
    }
    /* one artifact only: the second was the first's digest */
    JsonObject *arts = json_object_get_object_member(json_node_get_object(state), "artifacts");
    EXPECT_EQ_INT(1, json_object_get_size(arts));
    EXPECT_EQ_INT(3, count_puts(&srv, "\"status\": 200")); /* two files and the manifest */
    json_node_unref(state);
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(upload_errors)
{
    g_autofree char *dir = new_dir("upload-errors");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *path = g_build_filename(dir, "w.bin", NULL);
    g_file_set_contents(path, "weights", -1, NULL);
    const char *paths[] = {path, NULL};
    const char *aliases[] = {"latest", NULL};

    /* 503 twice, then the uploads go through: retried */
    wbt_server_control(&srv, "{\"upload_status\": 503}");
    OK(rt_wandb_run_log_artifact(run, "retried", "model", aliases, paths, NULL, &err));
    gint64 until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (count_puts(&srv, "\"status\": 503") < 2 && g_get_monotonic_time() < until)
        g_usleep(20000);
    wbt_server_control(&srv, "{}");

    /* refused (403): a warning naming the artifact, nothing committed, the run goes on */
    g_autofree char *path2 = g_build_filename(dir, "w2.bin", NULL);
    g_file_set_contents(path2, "other weights", -1, NULL);
    const char *paths2[] = {path2, NULL};
    rt_wandb_artifact_stats st;
    until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    do {
        g_usleep(20000);
        rt_wandb_run_get_artifact_stats(run, &st);
    } while (st.committed < 1 && g_get_monotonic_time() < until);
    wbt_server_control(&srv, "{\"upload_status\": 403}");
    wbt_log_clear();
    OK(rt_wandb_run_log_artifact(run, "refused", "model", aliases, paths2, NULL, &err));
    const char *names[] = {"train/loss"};
    double v = 0.5;
    OK(rt_wandb_log(run, 1, names, &v, 1, &err));
    OK(rt_wandb_run_finish(run, 0, 20000, &err));
    EXPECT_NO_ERROR(err);
    OK(wbt_log_contains("W&B artifact refused was not uploaded"));
    OK(wbt_log_contains("HTTP 403"));
    rt_wandb_run_get_artifact_stats(run, &st);
    EXPECT_EQ_INT(2, st.queued);
    EXPECT_EQ_INT(1, st.committed);
    EXPECT_EQ_INT(1, st.failed);
    rt_wandb_run_free(run);

    JsonNode *state = read_state(&srv);
    OK(find_artifact(state, "retried", "COMMITTED") != NULL);
    OK(find_artifact(state, "refused", "PENDING") != NULL);
    OK(count_puts(&srv, "\"status\": 503") >= 2);
    json_node_unref(state);
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(offline_and_disabled)
{
    g_autofree char *dir = new_dir("offline");
    rt_wandb_settings s;
    test_settings(&s, "http://127.0.0.1:9", dir);
    s.mode = RT_WANDB_MODE_OFFLINE;
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *path = g_build_filename(dir, "w.bin", NULL);
    g_file_set_contents(path, "weights", -1, NULL);
    const char *paths[] = {path, NULL};
    OK(!rt_wandb_run_log_artifact(run, "off", "model", NULL, paths, NULL, &err));
    OK(g_error_matches(err, RT_ERROR, RT_ERROR_UNSUPPORTED));
    EXPECT_ERROR(err, "offline");
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    rt_wandb_run_free(run);

    s.mode = RT_WANDB_MODE_DISABLED;
    run = rt_wandb_run_start(&s, &err);
    OK(rt_wandb_run_log_artifact(run, "off", "model", NULL, paths, NULL, &err));
    EXPECT_NO_ERROR(err);
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    rt_wandb_run_free(run);
    return 0;
}

int main(void)
{
    const char *unset[] = {"WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY",
                           "WANDB_RUN_ID",  "NETRC",          "http_proxy", "https_proxy",   "HTTP_PROXY",
                           "HTTPS_PROXY",   "ALL_PROXY",      "all_proxy"};
    for (size_t i = 0; i < G_N_ELEMENTS(unset); i++)
        wbt_unsetenv(unset[i]);
    wbt_setenv("NO_PROXY", "127.0.0.1,localhost", TRUE);
    wbt_log_capture();
    tmp_root = g_dir_make_tmp("robotrain-wandb-artifact-XXXXXX", NULL);
    if (!tmp_root) {
        printf("# cannot create a temporary folder\n");
        return 1;
    }
    RUN_TEST(digests);
    RUN_TEST(offline_and_disabled);
    char *python = g_find_program_in_path("python3");
    if (python) {
        RUN_TEST(upload);
        RUN_TEST(upload_errors);
    } else {
        printf("# python3 is not installed: the uploads against the W&B stand-in server are skipped\n");
    }
    g_free(python);
    if (rt_test_failures == 0)
        wbt_remove_tree(tmp_root);
    else
        printf("# files kept in %s\n", tmp_root);
    g_free(tmp_root);
    END_TEST;
}
