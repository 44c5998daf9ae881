/* Pushing a trained policy to the loopback Hub stand-in: repository creation, preupload, the
 * LFS batch upload (basic and multipart, verify), the NDJSON commit checked field by field, the
 * bytes the storage received, unchanged files, and the errors. */
#include "config.h"

#include <robotrain/error.h>
#include <robotrain/hub.h>

#include "servers/hub-server.h"
#include "testing.h"

#define TOKEN "hf_push_token_abcdef"
#define WEIGHTS_BYTES 5000

typedef struct fixture {
    hub_server server;
    char *dir;
    char *folder; /* a pretrained_model/ folder */
    guint8 *weights;
    rt_hub_config *config;
} fixture;

static const char config_json[] = "{\"type\": \"act\", \"chunk_size\": 100}\n";
static const char train_json[] = "{\"steps\": 100000, \"batch_size\": 8}\n";

static int fixture_setup(fixture *f, int multipart_chunk)
{
    memset(f, 0, sizeof *f);
    f->dir = hub_tmpdir();
    f->folder = g_build_filename(f->dir, "pretrained_model", NULL);
    f->weights = hub_bytes(WEIGHTS_BYTES, 1234);
    if (!hub_write(f->folder, "config.json", config_json, -1) ||
        !hub_write(f->folder, "train_config.json", train_json, -1) ||
        !hub_write(f->folder, "model.safetensors", f->weights, WEIGHTS_BYTES) ||
        !hub_write(f->folder, "empty.json", "", 0) ||
        /* never pushed: git and huggingface_hub bookkeeping */
        !hub_write(f->folder, ".git/HEAD", "ref: refs/heads/main\n", -1) ||
        !hub_write(f->folder, ".cache/huggingface/upload/x.metadata", "x", -1) ||
        !hub_write(f->folder, "notes.txt", "not selected by the patterns\n", -1))
        return -1;
    char *config = g_strdup_printf("{\"tokens\": [\"%s\"], \"lfs_patterns\": [\"*.safetensors\"], "
                                   "\"multipart_chunk\": %d, \"verify\": true, \"repos\": []}",
                                   TOKEN, multipart_chunk);
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
    f->config->offline = FALSE;
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
    g_free(f->folder);
    g_free(f->weights);
}

#define SETUP(f, chunk)                                                                                      \
    do {                                                                                                     \
        int rc_ = fixture_setup(&(f), (chunk));                                                              \
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

static const char *const allow[] = {"*.safetensors", "*.json", "*.yaml", "*.md", NULL};

static rt_hub_push_options push_options(const fixture *f, const rt_hub_push_blob *card)
{
    rt_hub_push_options o = {
        .type = RT_HUB_MODEL,
        .repo_id = "user/act-test",
        .private_repo = TRUE,
        .folder = f->folder,
        .allow_patterns = allow,
        .blobs = card,
        .n_blobs = card ? 1 : 0,
        .commit_message = "Upload policy weights, train config and readme",
    };
    return o;
}

static JsonNode *parse(GBytes *bytes)
{
    gsize n = 0;
    const char *p = g_bytes_get_data(bytes, &n);
    JsonParser *parser = json_parser_new();
    JsonNode *root = NULL;
    if (json_parser_load_from_data(parser, p, (gssize)n, NULL))
        root = json_node_copy(json_parser_get_root(parser));
    g_object_unref(parser);
    return root;
}

static const char *str_member(JsonObject *o, const char *name)
{
    return o && json_object_has_member(o, name) ? json_object_get_string_member(o, name) : NULL;
}

/* Finds the commit line whose value.path is path (transfer none), or NULL. */
static JsonObject *commit_entry(GPtrArray *lines, const char *path)
{
    for (guint i = 1; i < lines->len; i++) {
        JsonObject *o = json_node_get_object(lines->pdata[i]);
        JsonObject *v = json_object_get_object_member(o, "value");
        if (g_strcmp0(str_member(v, "path"), path) == 0)
            return o;
    }
    return NULL;
}

static GPtrArray *ndjson_lines(GBytes *body)
{
    gsize n = 0;
    const char *p = g_bytes_get_data(body, &n);
    char *text = g_strndup(p, n);
    char **lines = g_strsplit(text, "\n", -1);
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
    for (char **l = lines; *l; l++) {
        if (!**l)
            continue;
        GBytes *b = g_bytes_new(*l, strlen(*l));
        JsonNode *node = parse(b);
        g_bytes_unref(b);
        if (node)
            g_ptr_array_add(out, node);
    }
    g_strfreev(lines);
    g_free(text);
    return out;
}

static gboolean b64_is(const char *b64, const void *data, gsize len)
{
    gsize n = 0;
    guchar *raw = g_base64_decode(b64 ? b64 : "", &n);
    gboolean same = n == len && (len == 0 || memcmp(raw, data, len) == 0);
    g_free(raw);
    return same;
}

DEF_TEST(push_folder_wire_format)
{
    fixture f;
    SETUP(f, 0);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    const char *const tags[] = {"pusht", NULL};
    rt_hub_model_card card = {
        .policy_type = "act", .dataset_repo_id = "lerobot/pusht", .repo_id = "user/act-test", .tags = tags};
    char *readme = rt_hub_model_card_render(&card, NULL);
    rt_hub_push_blob blob = {"README.md", readme, strlen(readme)};
    rt_hub_push_options o = push_options(&f, &blob);
    rt_hub_commit *c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    OK(rt_hub_is_commit_sha(c->commit_oid));
    OK(c->commit_url && strstr(c->commit_url, c->commit_oid));
    char *page = g_strconcat(f.server.endpoint, "/user/act-test", NULL);
    EXPECT_EQ_STR(page, c->repo_url);
    EXPECT_EQ_INT(5, c->n_files); /* config, train_config, empty, model, README */
    EXPECT_EQ_INT(1, c->n_lfs);
    EXPECT_EQ_INT(1, c->n_uploaded);
    EXPECT_EQ_INT(0, c->n_unchanged);
    char *sha = hub_sha256_hex(f.weights, WEIGHTS_BYTES);

    GPtrArray *log = hub_server_log(&f.server);
    /* 1. create: name, organization, visibility */
    JsonNode *create = hub_log_find(log, "^POST /api/repos/create$", "hub", FALSE);
    OK(create != NULL);
    GBytes *b = hub_log_body(create);
    JsonNode *req = parse(b);
    JsonObject *ro = json_node_get_object(req);
    EXPECT_EQ_STR("act-test", str_member(ro, "name"));
    EXPECT_EQ_STR("user", str_member(ro, "organization"));
    EXPECT_EQ_STR("private", str_member(ro, "visibility"));
    OK(!json_object_has_member(ro, "type")); /* models carry no type */
    EXPECT_EQ_STR("Bearer " TOKEN, hub_log_header(create, "authorization"));
    json_node_unref(req);
    g_bytes_unref(b);

    /* 2. preupload: every selected file with its size and first bytes */
    JsonNode *pre = hub_log_find(log, "^POST /api/models/user/act-test/preupload/main$", "hub", FALSE);
    OK(pre != NULL);
    b = hub_log_body(pre);
    req = parse(b);
    JsonArray *files = json_object_get_array_member(json_node_get_object(req), "files");
    EXPECT_EQ_INT(5, json_array_get_length(files));
    gboolean saw_model = FALSE;
    for (guint i = 0; i < json_array_get_length(files); i++) {
        JsonObject *e = json_array_get_object_element(files, i);
        const char *path = str_member(e, "path");
        OK1(strcmp(path, "notes.txt") != 0 && !g_str_has_prefix(path, ".git") &&
                !g_str_has_prefix(path, ".cache"),
            "only selected files, never .git/ or .cache/huggingface/");
        if (strcmp(path, "model.safetensors") == 0) {
            saw_model = TRUE;
            EXPECT_EQ_INT(WEIGHTS_BYTES, json_object_get_int_member(e, "size"));
            OK(b64_is(str_member(e, "sample"), f.weights, 512));
        }
    }
    OK(saw_model);
    json_node_unref(req);
    g_bytes_unref(b);

    /* 3. LFS batch */
    JsonNode *batch = hub_log_find(log, "^POST /user/act-test.git/info/lfs/objects/batch$", "hub", FALSE);
    OK(batch != NULL);
    EXPECT_EQ_STR("application/vnd.git-lfs+json", hub_log_header(batch, "accept"));
    EXPECT_EQ_STR("application/vnd.git-lfs+json", hub_log_header(batch, "content-type"));
    EXPECT_EQ_STR("Bearer " TOKEN, hub_log_header(batch, "authorization"));
    b = hub_log_body(batch);
    req = parse(b);
    JsonObject *bo = json_node_get_object(req);
    EXPECT_EQ_STR("upload", str_member(bo, "operation"));
    EXPECT_EQ_STR("sha256", str_member(bo, "hash_algo"));
    JsonArray *transfers = json_object_get_array_member(bo, "transfers");
    EXPECT_EQ_INT(2, json_array_get_length(transfers));
    EXPECT_EQ_STR("basic", json_array_get_string_element(transfers, 0));
    EXPECT_EQ_STR("multipart", json_array_get_string_element(transfers, 1));
    EXPECT_EQ_STR("main", str_member(json_object_get_object_member(bo, "ref"), "name"));
    JsonArray *objects = json_object_get_array_member(bo, "objects");
    EXPECT_EQ_INT(1, json_array_get_length(objects));
    JsonObject *obj = json_array_get_object_element(objects, 0);
    EXPECT_EQ_STR(sha, str_member(obj, "oid"));
    EXPECT_EQ_INT(WEIGHTS_BYTES, json_object_get_int_member(obj, "size"));
    json_node_unref(req);
    g_bytes_unref(b);

    /* 4. the bytes went to the storage host, without the token; then verify, with it */
    char *put_path = g_strdup_printf("^PUT /_lfs/upload/%s$", sha);
    JsonNode *put = hub_log_find(log, put_path, "storage", FALSE);
    OK(put != NULL);
    OK(hub_log_header(put, "authorization") == NULL);
    EXPECT_EQ_INT(200, hub_log_status(put));
    b = hub_log_body(put);
    OK(hub_same_bytes(b, f.weights, WEIGHTS_BYTES));
    g_bytes_unref(b);
    char *verify_path = g_strdup_printf("^POST /_lfs/verify/%s$", sha);
    JsonNode *verify = hub_log_find(log, verify_path, "hub", FALSE);
    OK(verify != NULL);
    EXPECT_EQ_INT(200, hub_log_status(verify));
    EXPECT_EQ_STR("Bearer " TOKEN, hub_log_header(verify, "authorization"));
    b = hub_log_body(verify);
    req = parse(b);
    EXPECT_EQ_STR(sha, str_member(json_node_get_object(req), "oid"));
    EXPECT_EQ_INT(WEIGHTS_BYTES, json_object_get_int_member(json_node_get_object(req), "size"));
    json_node_unref(req);
    g_bytes_unref(b);

    /* 5. the commit, line by line */
    JsonNode *commit = hub_log_find(log, "^POST /api/models/user/act-test/commit/main$", "hub", FALSE);
    OK(commit != NULL);
    EXPECT_EQ_INT(200, hub_log_status(commit));
    EXPECT_EQ_STR("application/x-ndjson", hub_log_header(commit, "content-type"));
    b = hub_log_body(commit);
    GPtrArray *lines = ndjson_lines(b);
    EXPECT_EQ_INT(1 + 5, lines->len);
    JsonObject *header = json_node_get_object(lines->pdata[0]);
    EXPECT_EQ_STR("header", str_member(header, "key"));
    JsonObject *hv = json_object_get_object_member(header, "value");
    EXPECT_EQ_STR("Upload policy weights, train config and readme", str_member(hv, "summary"));
    EXPECT_EQ_STR("", str_member(hv, "description"));
    OK(!json_object_has_member(hv, "parentCommit"));
    struct {
        const char *path;
        const void *data;
        gsize len;
    } regular[] = {
        {"config.json", config_json, strlen(config_json)},
        {"train_config.json", train_json, strlen(train_json)},
        {"empty.json", "", 0},
        {"README.md", readme, strlen(readme)},
    };
    for (guint i = 0; i < G_N_ELEMENTS(regular); i++) {
        JsonObject *e = commit_entry(lines, regular[i].path);
        OK1(e != NULL, regular[i].path);
        EXPECT_EQ_STR("file", str_member(e, "key"));
        JsonObject *v = json_object_get_object_member(e, "value");
        EXPECT_EQ_STR("base64", str_member(v, "encoding"));
        OK1(b64_is(str_member(v, "content"), regular[i].data, regular[i].len), regular[i].path);
        EXPECT_EQ_INT(3, json_object_get_size(v));
    }
    JsonObject *lfs = commit_entry(lines, "model.safetensors");
    OK(lfs != NULL);
    EXPECT_EQ_STR("lfsFile", str_member(lfs, "key"));
    JsonObject *lv = json_object_get_object_member(lfs, "value");
    EXPECT_EQ_STR("sha256", str_member(lv, "algo"));
    EXPECT_EQ_STR(sha, str_member(lv, "oid"));
    EXPECT_EQ_INT(WEIGHTS_BYTES, json_object_get_int_member(lv, "size"));
    EXPECT_EQ_INT(4, json_object_get_size(lv));
    g_ptr_array_unref(lines);
    g_bytes_unref(b);
    /* the order of the calls */
    guint i_create = 0, i_pre = 0, i_put = 0, i_commit = 0;
    for (guint i = 0; i < log->len; i++) {
        if (log->pdata[i] == create)
            i_create = i;
        if (log->pdata[i] == pre)
            i_pre = i;
        if (log->pdata[i] == put)
            i_put = i;
        if (log->pdata[i] == commit)
            i_commit = i;
    }
    OK(i_create < i_pre && i_pre < i_put && i_put < i_commit);
    g_ptr_array_unref(log);

    /* what the Hub holds now, and the weights downloaded back by their Hub id */
    GBytes *held = hub_server_file(&f.server, "model", "user/act-test", "main", "model.safetensors");
    OK(hub_same_bytes(held, f.weights, WEIGHTS_BYTES));
    g_bytes_unref(held);
    char *back =
        rt_hub_download_file(hub, RT_HUB_MODEL, "user/act-test", NULL, "model.safetensors", NULL, &err);
    EXPECT_NO_ERROR(err);
    GBytes *got = hub_read(back);
    OK(hub_same_bytes(got, f.weights, WEIGHTS_BYTES));
    char *want_blob = g_strdup_printf("blobs/%s", sha);
    char *target = g_file_read_link(back, NULL);
    OK(target && g_str_has_suffix(target, want_blob));
    g_free(target);
    g_free(want_blob);
    g_bytes_unref(got);
    g_free(back);

    g_free(verify_path);
    g_free(put_path);
    g_free(sha);
    g_free(page);
    rt_hub_commit_free(c);
    g_free(readme);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(push_again_changes_only)
{
    fixture f;
    SETUP(f, 0);
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    rt_hub_push_options o = push_options(&f, NULL);
    rt_hub_commit *c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    rt_hub_commit_free(c);

    /* the same folder again: every file identical on the Hub, no commit */
    OK(hub_server_reset(&f.server));
    c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    OK(c->commit_oid == NULL && c->commit_url == NULL);
    EXPECT_EQ_INT(4, c->n_unchanged);
    EXPECT_EQ_INT(0, c->n_files);
    GPtrArray *log = hub_server_log(&f.server);
    EXPECT_EQ_INT(1, hub_log_count(log, "^POST /api/repos/create$", NULL)); /* 409: exists */
    EXPECT_EQ_INT(409, hub_log_status(hub_log_find(log, "^POST /api/repos/create$", NULL, FALSE)));
    EXPECT_EQ_INT(0, hub_log_count(log, "/commit/", NULL));
    EXPECT_EQ_INT(0, hub_log_count(log, "lfs", NULL));
    g_ptr_array_unref(log);
    rt_hub_commit_free(c);

    /* one file changed: a commit of that file alone */
    OK(hub_write(f.folder, "config.json", "{\"type\": \"act\", \"chunk_size\": 50}\n", -1));
    OK(hub_server_reset(&f.server));
    c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, c->n_files);
    EXPECT_EQ_INT(3, c->n_unchanged);
    log = hub_server_log(&f.server);
    GBytes *b = hub_log_body(hub_log_find(log, "/commit/main$", NULL, FALSE));
    GPtrArray *lines = ndjson_lines(b);
    EXPECT_EQ_INT(2, lines->len);
    OK(commit_entry(lines, "config.json") != NULL);
    g_ptr_array_unref(lines);
    g_bytes_unref(b);
    g_ptr_array_unref(log);
    rt_hub_commit_free(c);

    /* the same weights under checkpoints/: the LFS object is stored already, no upload */
    OK(hub_server_reset(&f.server));
    rt_hub_push_options ck = o;
    ck.path_in_repo = "checkpoints/000100/pretrained_model";
    ck.parent_commit = NULL;
    c = rt_hub_push_folder(hub, &ck, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, c->n_lfs);
    EXPECT_EQ_INT(0, c->n_uploaded);
    log = hub_server_log(&f.server);
    EXPECT_EQ_INT(1, hub_log_count(log, "lfs/objects/batch$", NULL));
    EXPECT_EQ_INT(0, hub_log_count(log, "^PUT ", NULL));
    b = hub_log_body(hub_log_find(log, "/commit/main$", NULL, FALSE));
    lines = ndjson_lines(b);
    JsonObject *e = commit_entry(lines, "checkpoints/000100/pretrained_model/model.safetensors");
    OK(e != NULL);
    EXPECT_EQ_STR("lfsFile", str_member(e, "key"));
    g_ptr_array_unref(lines);
    g_bytes_unref(b);
    g_ptr_array_unref(log);
    /* and the step tagged */
    OK(rt_hub_create_tag(hub, RT_HUB_MODEL, "user/act-test", "000100", NULL, NULL, &err));
    EXPECT_NO_ERROR(err);
    OK(!rt_hub_create_tag(hub, RT_HUB_MODEL, "user/act-test", "000100", NULL, NULL, &err));
    EXPECT_ERROR(err, "the tag '000100' exists already in model repository 'user/act-test'");
    rt_hub_commit_free(c);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(multipart_upload)
{
    fixture f;
    SETUP(f, 2000); /* 5000 bytes: parts of 2000, 2000, 1000 */
    rt_hub *hub = client(f.config);
    GError *err = NULL;
    rt_hub_push_options o = push_options(&f, NULL);
    rt_hub_commit *c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, c->n_uploaded);
    char *sha = hub_sha256_hex(f.weights, WEIGHTS_BYTES);
    GPtrArray *log = hub_server_log(&f.server);
    gsize offsets[] = {0, 2000, 4000}, lens[] = {2000, 2000, 1000};
    for (int i = 0; i < 3; i++) {
        char *path = g_strdup_printf("^PUT /_lfs/part/%s/%d$", sha, i + 1);
        JsonNode *put = hub_log_find(log, path, "storage", FALSE);
        OK1(put != NULL, path);
        OK(hub_log_header(put, "authorization") == NULL);
        GBytes *b = hub_log_body(put);
        OK(hub_same_bytes(b, f.weights + offsets[i], lens[i]));
        g_bytes_unref(b);
        g_free(path);
    }
    char *done_path = g_strdup_printf("^POST /_lfs/complete/%s$", sha);
    JsonNode *done = hub_log_find(log, done_path, "storage", FALSE);
    OK(done != NULL);
    EXPECT_EQ_INT(200, hub_log_status(done)); /* the stand-in checked parts, etags and sha256 */
    EXPECT_EQ_STR("application/vnd.git-lfs+json", hub_log_header(done, "content-type"));
    GBytes *b = hub_log_body(done);
    JsonNode *req = parse(b);
    JsonArray *parts = json_object_get_array_member(json_node_get_object(req), "parts");
    EXPECT_EQ_INT(3, json_array_get_length(parts));
    EXPECT_EQ_INT(3, json_object_get_int_member(json_array_get_object_element(parts, 2), "partNumber"));
    json_node_unref(req);
    g_bytes_unref(b);
    GBytes *held = hub_server_file(&f.server, "model", "user/act-test", "main", "model.safetensors");
    OK(hub_same_bytes(held, f.weights, WEIGHTS_BYTES));
    g_bytes_unref(held);
    g_free(done_path);
    g_ptr_array_unref(log);
    g_free(sha);
    rt_hub_commit_free(c);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(push_errors_and_retries)
{
    fixture f;
    SETUP(f, 0);
    GError *err = NULL;
    rt_hub_push_options o = push_options(&f, NULL);

    /* no token: stop before any request, say how to get one */
    rt_hub_config *anon = rt_hub_config_copy(f.config);
    g_clear_pointer(&anon->token, g_free);
    rt_hub *hub = client(anon);
    OK(rt_hub_push_folder(hub, &o, &err) == NULL);
    EXPECT_ERROR(err, "needs a Hugging Face token with write access: set HF_TOKEN");
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));
    rt_hub_free(hub);
    /* a wrong token: the Hub's 401, the token not printed */
    anon->token = g_strdup("hf_not_the_right_one");
    hub = client(anon);
    OK(rt_hub_push_folder(hub, &o, &err) == NULL);
    OK(err && err->code == RT_ERROR_NETWORK);
    OK(err && !strstr(err->message, "hf_not_the_right_one"));
    EXPECT_ERROR(err, "refused the token");
    rt_hub_free(hub);
    rt_hub_config_free(anon);
    /* offline */
    rt_hub_config *off = rt_hub_config_copy(f.config);
    off->offline = TRUE;
    hub = client(off);
    OK(rt_hub_push_folder(hub, &o, &err) == NULL);
    EXPECT_ERROR(err, "HF_HUB_OFFLINE is set");
    rt_hub_free(hub);
    rt_hub_config_free(off);

    hub = client(f.config);
    /* nothing selected */
    const char *const none[] = {"*.bin", NULL};
    rt_hub_push_options empty = o;
    empty.allow_patterns = none;
    OK(rt_hub_push_folder(hub, &empty, &err) == NULL);
    EXPECT_ERROR(err, "has no file that the patterns select");
    /* a folder that is not there */
    rt_hub_push_options missing = o;
    missing.folder = "/nonexistent/robotrain/folder";
    OK(rt_hub_push_folder(hub, &missing, &err) == NULL);
    EXPECT_ERROR(err, "cannot read the folder to push /nonexistent/robotrain/folder");

    /* "another conflicting operation": create is retried; a 500 on the commit is retried too */
    OK(hub_server_reset(&f.server));
    OK(hub_server_faults(&f.server,
                         "[{\"match\": \"^POST /api/repos/create$\", \"times\": 1, \"status\": 409, "
                         "\"body\": \"Cannot create repo: another conflicting operation is in progress\"}, "
                         "{\"match\": \"/commit/main$\", \"times\": 1, \"status\": 500}]"));
    rt_hub_commit *c = rt_hub_push_folder(hub, &o, &err);
    EXPECT_NO_ERROR(err);
    OK(rt_hub_is_commit_sha(c->commit_oid));
    GPtrArray *log = hub_server_log(&f.server);
    EXPECT_EQ_INT(2, hub_log_count(log, "^POST /api/repos/create$", NULL));
    EXPECT_EQ_INT(2, hub_log_count(log, "/commit/main$", NULL));
    g_ptr_array_unref(log);
    rt_hub_commit_free(c);

    /* the storage refuses the bytes */
    OK(hub_write(f.folder, "model.safetensors", "changed weights", -1));
    OK(hub_server_reset(&f.server));
    OK(hub_server_faults(&f.server, "[{\"match\": \"^PUT /_lfs/upload/\", \"times\": 1, \"status\": 403, "
                                    "\"headers\": {\"X-Error-Message\": \"signature expired\"}}]"));
    OK(rt_hub_push_folder(hub, &o, &err) == NULL);
    OK(err && strstr(err->message, "/_lfs/upload/"));
    EXPECT_ERROR(err, "HTTP 403 (the storage says: signature expired) after 1 attempt: the storage "
                      "refused the bytes of 'model.safetensors'");
    log = hub_server_log(&f.server);
    EXPECT_EQ_INT(0, hub_log_count(log, "/commit/", NULL));
    g_ptr_array_unref(log);
    rt_hub_free(hub);
    fixture_teardown(&f);
    return 0;
}

DEF_TEST(model_card)
{
    const char *const tags[] = {"pusht", "lerobot", "", NULL};
    rt_hub_model_card card = {.policy_type = "act", .dataset_repo_id = "lerobot/pusht", .tags = tags};
    char *meta = rt_hub_model_card_metadata(&card);
    /* what huggingface_hub's ModelCardData.to_yaml() gives for LeRobot's fields */
    EXPECT_EQ_STR("datasets: lerobot/pusht\n"
                  "library_name: lerobot\n"
                  "license: apache-2.0\n"
                  "model_name: act\n"
                  "pipeline_tag: robotics\n"
                  "tags:\n"
                  "- robotics\n"
                  "- lerobot\n"
                  "- act\n"
                  "- pusht",
                  meta);
    g_free(meta);
    rt_hub_model_card odd = {.policy_type = "act",
                             .license = "mit",
                             .base_model = "lerobot/x",
                             .tags = (const char *const[]){"2.0", "it's", "yes", "a:b", NULL}};
    meta = rt_hub_model_card_metadata(&odd);
    EXPECT_EQ_STR("base_model: lerobot/x\n"
                  "library_name: lerobot\n"
                  "license: mit\n"
                  "model_name: act\n"
                  "pipeline_tag: robotics\n"
                  "tags:\n"
                  "- robotics\n"
                  "- lerobot\n"
                  "- act\n"
                  "- '2.0'\n"
                  "- 'it''s'\n"
                  "- 'yes'\n"
                  "- 'a:b'",
                  meta);
    g_free(meta);
    char *text = rt_hub_model_card_render(&card, "# My policy\n");
    OK(g_str_has_prefix(text, "---\ndatasets: lerobot/pusht\n"));
    OK(g_str_has_suffix(text, "- pusht\n---\n\n# My policy\n"));
    g_free(text);
    card.repo_id = "user/act_pusht";
    text = rt_hub_model_card_render(&card, NULL);
    OK(strstr(text, "--policy.path=user/act_pusht"));
    OK(strstr(text, "--dataset.repo_id=lerobot/pusht --policy.type=act"));
    OK(strstr(text, "License: apache-2.0"));
    g_free(text);
    return 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    RUN_TEST(model_card);
    RUN_TEST(push_folder_wire_format);
    RUN_TEST(push_again_changes_only);
    RUN_TEST(multipart_upload);
    RUN_TEST(push_errors_and_retries);
    END_TEST;
}
