/* The W&B client against the stand-in server tests/servers/wandb-server.py on 127.0.0.1: run
 * creation (the GraphQL request as sent), metric streaming (every line once, in order, with its
 * step), resume with the same id (offsets continue), the service down at start or in the middle,
 * a refused key, offline folders sent later by sync, a slow server that must not slow the caller,
 * the bounded queue spilling to disk, finishing with the service gone. Skips (77) without
 * python3; a server that does not start is a failure. */
#include "config.h"

#include "testing.h"
#include "test-wandb-server.h"

#include <robotrain/wandb.h>

#define KEY "test-key-0123"
#define KEY_AUTH "Basic YXBpOnRlc3Qta2V5LTAxMjM=" /* base64("api:test-key-0123"), by Python */

static char *tmp_root;

static char *new_dir(const char *name)
{
    return wbt_new_dir(tmp_root, name);
}

static void test_settings(rt_wandb_settings *s, const char *url, const char *out)
{
    wbt_settings(s, url, out, KEY, 300);
}

static gboolean log1(rt_wandb_run *run, gint64 step, const char *name, double value)
{
    const char *names[] = {name};
    GError *err = NULL;
    gboolean ok = rt_wandb_log(run, step, names, &value, 1, &err);
    if (!ok) {
        printf("# log failed: %s\n", err->message);
        g_error_free(err);
    }
    return ok;
}

static char *run_key(const char *entity, const char *project, const char *id)
{
    return g_strdup_printf("%s/%s/%s", entity, project, id);
}

/* The server's history of a run as parsed lines. Returns (transfer full): g_ptr_array_unref(). */
static GPtrArray *history_of(wbt_server *srv, const char *key)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
    JsonNode *run = wbt_server_run(srv, key);
    JsonArray *h = run ? json_object_get_array_member(json_node_get_object(run), "history") : NULL;
    for (guint i = 0; h && i < json_array_get_length(h); i++)
        g_ptr_array_add(out, wbt_parse(json_array_get_string_element(h, i)));
    if (run)
        json_node_unref(run);
    return out;
}

static gint64 line_step(GPtrArray *lines, guint i)
{
    JsonNode *n = lines->pdata[i];
    return n ? json_object_get_int_member_with_default(json_node_get_object(n), "_step", -1) : -2;
}

/* Checks that the server's history of key holds exactly the steps first, first+stride, ... (n
 * of them), each received once (no overwrite, no gap). */
static int check_steps(wbt_server *srv, const char *key, gint64 first, gint64 stride, guint n)
{
    GPtrArray *lines = history_of(srv, key);
    JsonNode *run = wbt_server_run(srv, key);
    EXPECT_EQ_INT(n, lines->len);
    for (guint i = 0; i < n; i++)
        EXPECT_EQ_INT(first + (gint64)i * stride, line_step(lines, i));
    EXPECT_EQ_INT(n, wbt_run_int(run, "lines_received"));
    EXPECT_EQ_INT(0, wbt_run_int(run, "overwrites"));
    EXPECT_EQ_INT(0, wbt_run_int(run, "gaps"));
    EXPECT_EQ_INT(0, wbt_run_int(run, "after_complete"));
    g_ptr_array_unref(lines);
    json_node_unref(run);
    return 0;
}

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        if ((call) != 0)                                                                                     \
            return -1;                                                                                       \
    } while (0)

/* ---------------------------------------------------------------- creation */

DEF_TEST(create_run)
{
    g_autofree char *dir = new_dir("create");
    wbt_server srv;
    const char *args[] = {"--api-key", KEY, NULL};
    OK(wbt_server_start(&srv, dir, args));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    s.display_name = "act_pusht";
    s.notes = "first try";
    g_auto(GStrv) tags = rt_wandb_lerobot_tags("act", 1000, "lerobot/pusht", NULL);
    s.tags = (const char *const *)tags;
    s.config_json = "{\"batch_size\": 8, \"policy\": {\"type\": \"act\", \"chunk_size\": 100}, "
                    "\"optimizer\": {\"lr\": 1e-05}, \"wandb\": {\"enable\": true}}";
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    const char *id = rt_wandb_run_get_id(run);
    EXPECT_EQ_INT(8, strlen(id));
    for (const char *c = id; *c; c++)
        OK(g_ascii_islower(*c) || g_ascii_isdigit(*c));
    g_autofree char *url = rt_wandb_run_get_url(run);
    g_autofree char *want_url = g_strdup_printf("%s/ent/proj/runs/%s", srv.url, id);
    EXPECT_EQ_STR(want_url, url);
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *run_dir = g_strdup(rt_wandb_run_get_dir(run));
    g_autofree char *key = run_key("ent", "proj", id);
    g_autofree char *id_copy = g_strdup(id);
    rt_wandb_run_free(run);

    /* The first request is upsertBucket with what was given. */
    g_autoptr(GPtrArray) rec = wbt_server_records(&srv);
    OK(rec->len >= 2);
    JsonObject *r0 = json_node_get_object(rec->pdata[0]);
    EXPECT_EQ_STR("/graphql", json_object_get_string_member(r0, "path"));
    EXPECT_EQ_STR(KEY_AUTH, json_object_get_string_member(r0, "auth"));
    EXPECT_EQ_STR("application/json", json_object_get_string_member(r0, "content_type"));
    OK(g_str_has_prefix(json_object_get_string_member(r0, "user_agent"), "robotrain/"));
    JsonObject *body = json_object_get_object_member(r0, "body");
    OK(strstr(json_object_get_string_member(body, "query"), "upsertBucket(input:") != NULL);
    JsonObject *v = json_object_get_object_member(body, "variables");
    EXPECT_EQ_STR(id_copy, json_object_get_string_member(v, "name"));
    EXPECT_EQ_STR("proj", json_object_get_string_member(v, "project"));
    EXPECT_EQ_STR("ent", json_object_get_string_member(v, "entity"));
    EXPECT_EQ_STR("act_pusht", json_object_get_string_member(v, "displayName"));
    EXPECT_EQ_STR("first try", json_object_get_string_member(v, "notes"));
    EXPECT_EQ_STR("train_eval", json_object_get_string_member(v, "jobType"));
    JsonArray *t = json_object_get_array_member(v, "tags");
    EXPECT_EQ_INT(3, json_array_get_length(t));
    EXPECT_EQ_STR("policy:act", json_array_get_string_element(t, 0));
    EXPECT_EQ_STR("seed:1000", json_array_get_string_element(t, 1));
    EXPECT_EQ_STR("dataset:lerobot/pusht", json_array_get_string_element(t, 2));
    /* config: a JSON string mapping each top-level key to {"value": ...}. */
    JsonNode *config = wbt_parse(json_object_get_string_member(v, "config"));
    OK(config && JSON_NODE_HOLDS_OBJECT(config));
    JsonObject *c = json_node_get_object(config);
    EXPECT_EQ_INT(4, json_object_get_size(c));
    EXPECT_EQ_INT(8, json_object_get_int_member(json_object_get_object_member(c, "batch_size"), "value"));
    JsonObject *policy = json_object_get_object_member(json_object_get_object_member(c, "policy"), "value");
    EXPECT_EQ_STR("act", json_object_get_string_member(policy, "type"));
    EXPECT_EQ_INT(100, json_object_get_int_member(policy, "chunk_size"));
    JsonObject *opt = json_object_get_object_member(json_object_get_object_member(c, "optimizer"), "value");
    EXPECT_NEAR(1e-5, json_object_get_double_member(opt, "lr"), 0);
    json_node_unref(config);

    /* The last request finishes the run; the server marked it complete with exit code 0. */
    JsonObject *last = json_node_get_object(rec->pdata[rec->len - 1]);
    g_autofree char *fs_path = g_strdup_printf("/files/ent/proj/%s/file_stream", id_copy);
    EXPECT_EQ_STR(fs_path, json_object_get_string_member(last, "path"));
    EXPECT_EQ_STR(KEY_AUTH, json_object_get_string_member(last, "auth"));
    JsonObject *lb = json_object_get_object_member(last, "body");
    OK(json_object_get_boolean_member(lb, "complete"));
    EXPECT_EQ_INT(0, json_object_get_int_member(lb, "exitcode"));
    JsonNode *srun = wbt_server_run(&srv, key);
    OK(srun != NULL);
    OK(json_object_get_boolean_member(json_node_get_object(srun), "complete"));
    EXPECT_EQ_INT(1, wbt_run_int(srun, "upserts"));
    json_node_unref(srun);

    /* The folder records the run for a later sync, and latest-run points at it. */
    g_autofree char *state_path = g_build_filename(run_dir, "run.json", NULL);
    g_autofree char *state_text = NULL;
    OK(g_file_get_contents(state_path, &state_text, NULL, NULL));
    JsonNode *state = wbt_parse(state_text);
    JsonObject *so = json_node_get_object(state);
    EXPECT_EQ_STR(id_copy, json_object_get_string_member(so, "id"));
    EXPECT_EQ_INT(0, json_object_get_int_member(so, "exitcode"));
    OK(json_object_get_boolean_member(so, "complete_sent"));
    json_node_unref(state);
    g_autofree char *latest = g_build_filename(dir, "wandb", "latest-run", NULL);
    g_autofree char *target = g_file_read_link(latest, NULL);
    g_autofree char *want_target = g_strconcat("run-", id_copy, NULL);
    EXPECT_EQ_STR(want_target, target);
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- streaming */

DEF_TEST(stream_metrics)
{
    g_autofree char *dir = new_dir("stream");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    double t0 = (double)g_get_real_time() / 1e6;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    const char *names[] = {"train/loss", "train/lr", "train/steps", "train/grad_norm"};
    for (int k = 0; k < 10; k++) {
        double values[] = {0.5 + 0.1 * k, 1e-5, 100.0 * (k + 1), 1.0 / (k + 3)};
        OK(rt_wandb_log(run, 100 * (k + 1), names, values, 4, &err));
        EXPECT_NO_ERROR(err);
    }
    /* A second call at the same step joins its line. */
    const char *eval_names[] = {"eval/pc_success", "train/loss"};
    double eval_values[] = {42.5, 0.25};
    OK(rt_wandb_log(run, 1000, eval_names, eval_values, 2, &err));
    /* A step going back is refused, naming it. */
    double one = 1.0;
    const char *back[] = {"train/loss"};
    OK(!rt_wandb_log(run, 900, back, &one, 1, &err));
    EXPECT_ERROR(err, "W&B step 900 is not after step 1000, the last one logged");
    const char *bad[] = {"_hidden"};
    OK(!rt_wandb_log(run, 2000, bad, &one, 1, &err));
    EXPECT_ERROR(err, "W&B metric name '_hidden' is not allowed");
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    double t1 = (double)g_get_real_time() / 1e6;
    rt_wandb_stats st;
    rt_wandb_run_get_stats(run, &st);
    EXPECT_EQ_INT(10, st.lines_logged);
    EXPECT_EQ_INT(10, st.lines_written);
    EXPECT_EQ_INT(10, st.lines_sent);
    EXPECT_EQ_INT(0, st.lines_spilled);
    OK(st.connected);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    g_autofree char *hist_path = g_build_filename(rt_wandb_run_get_dir(run), "wandb-history.jsonl", NULL);
    rt_wandb_run_free(run);

    CHECK(check_steps(&srv, key, 100, 100, 10));
    g_autoptr(GPtrArray) lines = history_of(&srv, key);
    double last_runtime = 0;
    for (guint k = 0; k < 10; k++) {
        JsonObject *o = json_node_get_object(lines->pdata[k]);
        double loss = k == 9 ? 0.25 : 0.5 + 0.1 * k; /* the exact doubles come back */
        EXPECT_NEAR(loss, json_object_get_double_member(o, "train/loss"), 0);
        EXPECT_NEAR(1e-5, json_object_get_double_member(o, "train/lr"), 0);
        EXPECT_EQ_INT(100 * (k + 1), json_object_get_int_member(o, "train/steps"));
        EXPECT_NEAR(1.0 / (k + 3), json_object_get_double_member(o, "train/grad_norm"), 0);
        double runtime = json_object_get_double_member(o, "_runtime");
        OK(runtime >= last_runtime && runtime < 60);
        last_runtime = runtime;
        double ts = json_object_get_double_member(o, "_timestamp");
        OK(ts >= t0 - 1 && ts <= t1 + 1);
        EXPECT_EQ_INT(k == 9 ? 8 : 7,
                      json_object_get_size(o)); /* 4 or 5 values, _step, _runtime, _timestamp */
    }
    EXPECT_NEAR(42.5, json_object_get_double_member(json_node_get_object(lines->pdata[9]), "eval/pc_success"),
                0);

    /* The summary holds the last value of every key, with _step and _runtime. */
    JsonNode *srun = wbt_server_run(&srv, key);
    JsonNode *summary = wbt_parse(json_object_get_string_member(json_node_get_object(srun), "summary"));
    JsonObject *so = json_node_get_object(summary);
    EXPECT_NEAR(0.25, json_object_get_double_member(so, "train/loss"), 0);
    EXPECT_NEAR(42.5, json_object_get_double_member(so, "eval/pc_success"), 0);
    EXPECT_EQ_INT(1000, json_object_get_int_member(so, "_step"));
    OK(json_object_has_member(so, "_runtime"));
    OK(!json_object_has_member(so, "_timestamp"));
    json_node_unref(summary);
    OK(json_object_get_boolean_member(json_node_get_object(srun), "complete"));
    json_node_unref(srun);

    /* The requests: offsets are line numbers, each chunk starts where the last one ended. */
    g_autoptr(GPtrArray) rec = wbt_server_records(&srv);
    gint64 next = 0;
    for (guint i = 0; i < rec->len; i++) {
        JsonObject *b = json_object_get_object_member(json_node_get_object(rec->pdata[i]), "body");
        JsonObject *files =
            json_object_has_member(b, "files") ? json_object_get_object_member(b, "files") : NULL;
        if (!files || !json_object_has_member(files, "wandb-history.jsonl"))
            continue;
        JsonObject *h = json_object_get_object_member(files, "wandb-history.jsonl");
        EXPECT_EQ_INT(next, json_object_get_int_member(h, "offset"));
        next += json_array_get_length(json_object_get_array_member(h, "content"));
        JsonObject *sm = json_object_get_object_member(files, "wandb-summary.json");
        EXPECT_EQ_INT(0, json_object_get_int_member(sm, "offset"));
    }
    EXPECT_EQ_INT(10, next);

    /* The folder's file holds the same lines, byte for byte. */
    g_auto(GStrv) local = wbt_read_lines(hist_path);
    OK(local != NULL);
    EXPECT_EQ_INT(10, g_strv_length(local));
    srun = wbt_server_run(&srv, key);
    JsonArray *sh = json_object_get_array_member(json_node_get_object(srun), "history");
    for (guint k = 0; k < 10; k++)
        EXPECT_EQ_STR(local[k], json_array_get_string_element(sh, k));
    json_node_unref(srun);
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- resume */

DEF_TEST(resume_same_id)
{
    g_autofree char *dir = new_dir("resume");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *a = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    for (int step = 1; step <= 5; step++)
        OK(log1(a, step, "train/loss", 1.0 / step));
    OK(rt_wandb_run_finish(a, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *id = g_strdup(rt_wandb_run_get_id(a));
    g_autofree char *key = run_key("ent", "proj", id);
    rt_wandb_run_free(a);
    GPtrArray *first = history_of(&srv, key);
    double runtime_a = json_object_get_double_member(json_node_get_object(first->pdata[4]), "_runtime");
    g_ptr_array_unref(first);
    g_autoptr(GPtrArray) rec_a = wbt_server_records(&srv);
    guint n_a = rec_a->len;

    /* As if the process had died before recording its last acknowledged chunk. */
    g_autofree char *state_path = g_strdup_printf("%s/wandb/run-%s/run.json", dir, id);
    g_autofree char *state_text = NULL;
    OK(g_file_get_contents(state_path, &state_text, NULL, NULL));
    char *sent = strstr(state_text, "\"history_sent\" : 5");
    OK(sent != NULL);
    sent[strlen("\"history_sent\" : ")] = '2';
    OK(g_file_set_contents(state_path, state_text, -1, NULL));

    /* --resume without an id: latest-run names it; the server's line count says lines 3-5 are
     * there already, so lines continue at offset 5 and nothing is sent twice. */
    s.resume = TRUE;
    rt_wandb_run *b = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(id, rt_wandb_run_get_id(b));
    OK(!log1(b, 5, "train/loss", 0.1)); /* the folder's last step was 5 */
    for (int step = 6; step <= 8; step++)
        OK(log1(b, step, "train/loss", 1.0 / step));
    OK(rt_wandb_run_finish(b, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(b);
    CHECK(check_steps(&srv, key, 1, 1, 8));
    JsonNode *srun = wbt_server_run(&srv, key);
    EXPECT_EQ_INT(2, wbt_run_int(srun, "upserts"));
    json_node_unref(srun);
    g_autoptr(GPtrArray) rec_b = wbt_server_records(&srv);
    JsonObject *up = json_node_get_object(rec_b->pdata[n_a]);
    JsonObject *vars = json_object_get_object_member(json_object_get_object_member(up, "body"), "variables");
    EXPECT_EQ_STR(id, json_object_get_string_member(vars, "name"));
    OK(json_object_has_member(vars, "id")); /* the storage id the first upsert returned */
    JsonObject *fs = json_object_get_object_member(json_node_get_object(rec_b->pdata[n_a + 1]), "body");
    JsonObject *h =
        json_object_get_object_member(json_object_get_object_member(fs, "files"), "wandb-history.jsonl");
    EXPECT_EQ_INT(5, json_object_get_int_member(h, "offset"));
    GPtrArray *all = history_of(&srv, key);
    double runtime_b = json_object_get_double_member(json_node_get_object(all->pdata[5]), "_runtime");
    OK(runtime_b >= runtime_a); /* _runtime goes on from where the first session ended */
    g_ptr_array_unref(all);

    /* The same id from another output folder: the server's line count gives the offset. */
    g_autofree char *other = new_dir("resume-other");
    s.output_dir = other;
    s.run_id = id;
    rt_wandb_run *c = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    OK(log1(c, 9, "train/loss", 1.0 / 9));
    OK(rt_wandb_run_finish(c, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(c);
    CHECK(check_steps(&srv, key, 1, 1, 9));

    /* Resuming with no id anywhere says how to give one. */
    g_autofree char *empty = new_dir("resume-empty");
    s.output_dir = empty;
    s.run_id = NULL;
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "cannot resume the W&B run: no run id was given");
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "pass --wandb.run_id=ID");

    /* The folder of a run of another project is not reused silently. */
    s.output_dir = dir;
    s.project = "other-proj";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "not of ent/other-proj");
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- outages */

DEF_TEST(down_at_start)
{
    g_autofree char *dir = new_dir("down-start");
    wbt_server srv;
    const char *args[] = {"--down-for", "1.5", NULL};
    OK(wbt_server_start(&srv, dir, args));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    wbt_log_clear();
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    OK(wbt_log_contains("cannot reach W&B at"));
    OK(wbt_log_contains("kept in"));
    rt_wandb_stats st;
    rt_wandb_run_get_stats(run, &st);
    OK(!st.connected);
    g_autofree char *url = rt_wandb_run_get_url(run);
    OK(url == NULL); /* the entity is known, but the run is not created yet */
    for (int step = 10; step <= 50; step += 10)
        OK(log1(run, step, "train/loss", step / 100.0));
    rt_wandb_commit(run);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    EXPECT_EQ_INT(5, wbt_wait_lines(&srv, key, 5, 15000));
    rt_wandb_run_get_stats(run, &st);
    OK(st.connected);
    OK(st.failures >= 1);
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    CHECK(check_steps(&srv, key, 10, 10, 5));
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(down_in_the_middle)
{
    g_autofree char *dir = new_dir("down-middle");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    for (int step = 1; step <= 3; step++)
        OK(log1(run, step, "train/loss", step));
    rt_wandb_commit(run);
    EXPECT_EQ_INT(3, wbt_wait_lines(&srv, key, 3, 10000));
    wbt_server_control(&srv, "{\"down\": true}");
    for (int step = 4; step <= 6; step++)
        OK(log1(run, step, "train/loss", step));
    rt_wandb_commit(run);
    g_usleep(400000);
    EXPECT_EQ_INT(3, wbt_wait_lines(&srv, key, 4, 0)); /* nothing got through */
    rt_wandb_stats st;
    rt_wandb_run_get_stats(run, &st);
    EXPECT_EQ_INT(6, st.lines_written); /* kept on disk meanwhile */
    EXPECT_EQ_INT(3, st.lines_sent);
    wbt_server_control(&srv, "{\"down\": false}");
    for (int step = 7; step <= 8; step++)
        OK(log1(run, step, "train/loss", step));
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    CHECK(check_steps(&srv, key, 1, 1, 8));
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(lost_answers)
{
    /* The server stores two chunks but their answers never arrive: the client sends them again
     * at the same offsets, so the lines replace themselves instead of being added twice. */
    g_autofree char *dir = new_dir("lost");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    wbt_server_control(&srv, "{\"lose_answers\": 2}");
    for (int step = 1; step <= 4; step++)
        OK(log1(run, step, "train/loss", step));
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    rt_wandb_run_free(run);
    GPtrArray *lines = history_of(&srv, key);
    EXPECT_EQ_INT(4, lines->len);
    for (guint i = 0; i < lines->len; i++)
        EXPECT_EQ_INT(i + 1, line_step(lines, i));
    g_ptr_array_unref(lines);
    JsonNode *srun = wbt_server_run(&srv, key);
    OK(wbt_run_int(srun, "overwrites") >= 2); /* the resent lines */
    EXPECT_EQ_INT(0, wbt_run_int(srun, "gaps"));
    json_node_unref(srun);
    /* Each lost chunk was sent again with the offset it had. */
    g_autoptr(GPtrArray) rec = wbt_server_records(&srv);
    guint lost = 0;
    for (guint i = 0; i < rec->len; i++) {
        JsonObject *r = json_node_get_object(rec->pdata[i]);
        JsonNode *status = json_object_get_member(r, "status");
        if (json_node_get_value_type(status) != G_TYPE_STRING)
            continue;
        lost++;
        JsonObject *h = json_object_get_object_member(
            json_object_get_object_member(json_object_get_object_member(r, "body"), "files"),
            "wandb-history.jsonl");
        OK(i + 1 < rec->len);
        JsonObject *next = json_node_get_object(rec->pdata[i + 1]);
        JsonObject *h2 = json_object_get_object_member(
            json_object_get_object_member(json_object_get_object_member(next, "body"), "files"),
            "wandb-history.jsonl");
        EXPECT_EQ_INT(json_object_get_int_member(h, "offset"), json_object_get_int_member(h2, "offset"));
    }
    EXPECT_EQ_INT(2, lost);
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(heartbeat)
{
    g_autofree char *dir = new_dir("heartbeat");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    s.heartbeat_ms = 100;
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    g_usleep(700000); /* idle: empty requests keep the run alive */
    OK(rt_wandb_run_finish(run, 0, 5000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    JsonNode *srun = wbt_server_run(&srv, key);
    gint64 beats = wbt_run_int(srun, "heartbeats");
    printf("# %" G_GINT64_FORMAT " heartbeats in 0.7 s at one per 0.1 s\n", beats);
    OK(beats >= 2 && beats <= 8);
    json_node_unref(srun);
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(finish_when_gone)
{
    g_autofree char *dir = new_dir("gone");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *run_dir = g_strdup(rt_wandb_run_get_dir(run));
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));

    /* While the run is open its folder cannot be synced by someone else. */
    OK(!rt_wandb_sync(run_dir, &s, NULL, &err));
    EXPECT_ERROR(err, "is in use by another run or sync");

    wbt_server_control(&srv, "{\"down\": true}");
    for (int step = 1; step <= 3; step++)
        OK(log1(run, step, "train/loss", step));
    gint64 t0 = g_get_monotonic_time();
    OK(!rt_wandb_run_finish(run, 1, 500, &err));
    double waited = (double)(g_get_monotonic_time() - t0) / 1e6;
    printf("# finish gave up after %.2f s\n", waited);
    OK(waited < 4.0); /* bounded: 0.5 s plus at most one transfer's abort */
    OK(err && strstr(err->message, "3 W&B history line(s) of run") != NULL);
    OK(err && strstr(err->message, run_dir) != NULL);
    EXPECT_ERROR(err, "send them with 'robotrain wandb sync");
    rt_wandb_run_free(run);

    /* Later the service is back and sync sends the lines and the exit code, once. */
    wbt_server_control(&srv, "{\"down\": false}");
    guint n = 0;
    OK(rt_wandb_sync(run_dir, &s, &n, &err));
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, n);
    CHECK(check_steps(&srv, key, 1, 1, 3));
    JsonNode *srun = wbt_server_run(&srv, key);
    OK(json_object_get_boolean_member(json_node_get_object(srun), "complete"));
    EXPECT_EQ_INT(1, wbt_run_int(srun, "exitcode"));
    json_node_unref(srun);
    OK(rt_wandb_sync(run_dir, &s, &n, &err));
    EXPECT_NO_ERROR(err);
    CHECK(check_steps(&srv, key, 1, 1, 3));
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- keys */

DEF_TEST(refused_key)
{
    g_autofree char *dir = new_dir("auth");
    wbt_server srv;
    const char *args[] = {"--api-key", KEY, NULL};
    OK(wbt_server_start(&srv, dir, args));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    s.api_key = "wrong-secret-key-42";
    GError *err = NULL;
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err != NULL);
    printf("# %s\n", err->message);
    OK(strstr(err->message, "wrong-secret-key-42") == NULL);
    OK(strstr(err->message, "HTTP 401") != NULL);
    OK(strstr(err->message, "W&B refused the API key from the settings") != NULL);
    OK(strstr(err->message, "--wandb.mode=offline") != NULL);
    EXPECT_ERROR(err, "set WANDB_API_KEY to a valid key");
    /* Nothing is left behind in OUTPUT_DIR/wandb. */
    g_autofree char *wandb_dir = g_build_filename(dir, "wandb", NULL);
    g_autoptr(GDir) d = g_dir_open(wandb_dir, 0, NULL);
    OK(d == NULL || g_dir_read_name(d) == NULL);

    /* The key from WANDB_API_KEY, and the message says where the refused key came from. */
    s.api_key = NULL;
    wbt_setenv("WANDB_API_KEY", "another-wrong-key", TRUE);
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err && strstr(err->message, "another-wrong-key") == NULL);
    EXPECT_ERROR(err, "refused the API key from WANDB_API_KEY");
    wbt_unsetenv("WANDB_API_KEY");

    /* The key from a netrc file's entry for the server's host. */
    g_autofree char *netrc = g_build_filename(dir, "netrc", NULL);
    OK(g_file_set_contents(netrc,
                           "machine api.wandb.ai login user password nope\n"
                           "machine 127.0.0.1\n  login user\n  password " KEY "\n",
                           -1, NULL));
    wbt_setenv("NETRC", netrc, TRUE);
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    OK(rt_wandb_run_finish(run, 0, 10000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    g_autoptr(GPtrArray) rec = wbt_server_records(&srv);
    EXPECT_EQ_STR(KEY_AUTH,
                  json_object_get_string_member(json_node_get_object(rec->pdata[rec->len - 1]), "auth"));

    /* No key at all. */
    OK(g_file_set_contents(netrc, "machine elsewhere password x\n", -1, NULL));
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err && strstr(err->message, "run with --wandb.mode=offline") != NULL);
    EXPECT_ERROR(err, "no W&B API key for http://127.0.0.1:");
    wbt_unsetenv("NETRC");

    /* A key refused in the middle of the run: lines stay in the folder, finish says so. */
    s.api_key = KEY;
    run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    wbt_server_control(&srv, "{\"status\": 401}");
    OK(log1(run, 1, "train/loss", 1.0));
    rt_wandb_commit(run);
    OK(!rt_wandb_run_finish(run, 0, 5000, &err));
    OK(err && strstr(err->message, KEY) == NULL);
    OK(err && strstr(err->message, "W&B refused the run") != NULL);
    EXPECT_ERROR(err, "robotrain wandb sync");
    rt_wandb_run_free(run);
    wbt_server_control(&srv, "{}");

    /* The viewer query names the key's default entity. */
    char *entity = NULL;
    OK(rt_wandb_viewer(&s, &entity, &err));
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("default-ent", entity);
    g_free(entity);
    s.api_key = "wrong-secret-key-42";
    OK(!rt_wandb_viewer(&s, NULL, &err));
    OK(err && strstr(err->message, "wrong-secret-key-42") == NULL);
    EXPECT_ERROR(err, "HTTP 401");
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(server_errors)
{
    g_autofree char *dir = new_dir("errors");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    /* GraphQL errors arrive with HTTP 200. */
    wbt_server_control(&srv, "{\"graphql_error\": \"project proj is archived\"}");
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "W&B refused to create or resume run");
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "project proj is archived");
    /* A run stopped from the interface. */
    wbt_server_control(&srv, "{\"stopped\": true}");
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    OK(!rt_wandb_run_stop_requested(run));
    OK(log1(run, 1, "train/loss", 1.0));
    rt_wandb_commit(run);
    gboolean stopped = FALSE;
    for (int i = 0; i < 250 && !stopped; i++) {
        g_usleep(20000);
        stopped = rt_wandb_run_stop_requested(run);
    }
    OK(stopped);
    OK(rt_wandb_run_finish(run, 0, 5000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- offline and sync */

DEF_TEST(offline_then_sync)
{
    g_autofree char *dir = new_dir("offline");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    s.mode = RT_WANDB_MODE_OFFLINE;
    s.project = NULL; /* from WANDB_PROJECT */
    s.display_name = "offline_job";
    s.config_json = "{\"steps\": 4}";
    wbt_setenv("WANDB_PROJECT", "envproj", TRUE);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    wbt_unsetenv("WANDB_PROJECT");
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(RT_WANDB_MODE_OFFLINE, rt_wandb_run_get_mode(run));
    OK(rt_wandb_run_get_url(run) == NULL);
    for (int step = 1; step <= 4; step++)
        OK(log1(run, step, "train/loss", step / 10.0));
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *id = g_strdup(rt_wandb_run_get_id(run));
    g_autofree char *run_dir = g_strdup(rt_wandb_run_get_dir(run));
    rt_wandb_run_free(run);
    g_autoptr(GPtrArray) rec = wbt_server_records(&srv);
    EXPECT_EQ_INT(0, rec->len); /* offline sends nothing */
    g_autofree char *hist = g_build_filename(run_dir, "wandb-history.jsonl", NULL);
    g_auto(GStrv) lines = wbt_read_lines(hist);
    EXPECT_EQ_INT(4, lines ? g_strv_length(lines) : 0);

    /* While W&B is down, sync tries a few times and then says to run it again. */
    guint n = 0;
    wbt_server_control(&srv, "{\"down\": true}");
    OK(!rt_wandb_sync(dir, &s, &n, &err));
    OK(err && strstr(err->message, "cannot reach W&B at") != NULL);
    EXPECT_ERROR(err, "cannot sync the W&B run folder");
    wbt_server_control(&srv, "{}");

    /* sync OUTPUT_DIR: creates the run with the saved settings, sends the lines, finishes it. */
    OK(rt_wandb_sync(dir, &s, &n, &err));
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(1, n);
    g_autofree char *key = run_key("ent", "envproj", id);
    CHECK(check_steps(&srv, key, 1, 1, 4));
    JsonNode *srun = wbt_server_run(&srv, key);
    JsonObject *so = json_node_get_object(srun);
    EXPECT_EQ_STR("offline_job", json_object_get_string_member(so, "displayName"));
    EXPECT_EQ_STR("{\"steps\":{\"value\":4,\"desc\":null}}", json_object_get_string_member(so, "config"));
    OK(json_object_get_boolean_member(so, "complete"));
    EXPECT_EQ_INT(0, wbt_run_int(srun, "exitcode"));
    json_node_unref(srun);
    /* Again: nothing to send, nothing sent. */
    g_autoptr(GPtrArray) before = wbt_server_records(&srv);
    OK(rt_wandb_sync(run_dir, &s, &n, &err));
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(0, n);
    g_autoptr(GPtrArray) after = wbt_server_records(&srv);
    EXPECT_EQ_INT(before->len, after->len);
    CHECK(check_steps(&srv, key, 1, 1, 4));

    /* Folders that hold no run. */
    g_autofree char *nothing = new_dir("offline-nothing");
    OK(!rt_wandb_sync(nothing, &s, &n, &err));
    EXPECT_ERROR(err, "holds no W&B run folder of robotrain");
    g_autofree char *missing = g_build_filename(dir, "no-such-folder", NULL);
    OK(!rt_wandb_sync(missing, &s, &n, &err));
    EXPECT_ERROR(err, "is not a folder");
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- never blocking */

DEF_TEST(slow_server_does_not_block)
{
    g_autofree char *dir = new_dir("slow");
    wbt_server srv;
    const char *args[] = {"--delay", "1.0", NULL};
    OK(wbt_server_start(&srv, dir, args));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err); /* this one waits for the server (1 s) */
    EXPECT_NO_ERROR(err);
    const char *names[] = {"train/loss", "train/grad_norm", "train/lr"};
    gint64 t0 = g_get_monotonic_time(), worst = 0;
    for (int step = 1; step <= 100; step++) {
        double values[] = {1.0 / step, 2.0, 1e-4};
        gint64 c0 = g_get_monotonic_time();
        OK(rt_wandb_log(run, step, names, values, 3, &err));
        rt_wandb_commit(run);
        worst = MAX(worst, g_get_monotonic_time() - c0);
    }
    double total = (double)(g_get_monotonic_time() - t0) / 1e6;
    printf("# 100 logs took %.4f s (slowest %.4f s) against a server answering in 1 s\n", total, worst / 1e6);
    /* Waiting for the server even once would take 1 s; the margin is for valgrind, which runs
     * one thread at a time. */
    OK(total < 0.9);
    OK(worst < 900000);
    OK(rt_wandb_run_finish(run, 0, 30000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    rt_wandb_run_free(run);
    CHECK(check_steps(&srv, key, 1, 1, 100));
    wbt_server_stop(&srv);
    return 0;
}

DEF_TEST(full_queue_spills)
{
    g_autofree char *dir = new_dir("spill");
    wbt_server srv;
    OK(wbt_server_start(&srv, dir, NULL));
    rt_wandb_settings s;
    test_settings(&s, srv.url, dir);
    s.queue_rows = 2;
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    wbt_server_control(&srv, "{\"delay\": 0.5}");
    /* Let the sending thread get stuck in a slow request, then log more than the queue holds. */
    OK(log1(run, 1, "train/loss", 1.0));
    rt_wandb_commit(run);
    g_usleep(200000);
    for (int step = 2; step <= 30; step++)
        OK(log1(run, step, "train/loss", 1.0 / step));
    rt_wandb_commit(run);
    rt_wandb_stats st;
    rt_wandb_run_get_stats(run, &st);
    printf("# %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " lines spilled\n", st.lines_spilled,
           st.lines_logged);
    OK(st.lines_spilled >= 10); /* most of the 29: the queue holds 2 */
    OK(st.lines_written >= st.lines_spilled);
    /* The folder's file has them in order already. */
    g_autofree char *hist = g_build_filename(rt_wandb_run_get_dir(run), "wandb-history.jsonl", NULL);
    g_auto(GStrv) lines = wbt_read_lines(hist);
    for (guint i = 0; lines && lines[i]; i++) {
        JsonNode *n = wbt_parse(lines[i]);
        EXPECT_EQ_INT(i + 1, json_object_get_int_member(json_node_get_object(n), "_step"));
        json_node_unref(n);
    }
    wbt_server_control(&srv, "{}");
    OK(rt_wandb_run_finish(run, 0, 20000, &err));
    EXPECT_NO_ERROR(err);
    g_autofree char *key = run_key("ent", "proj", rt_wandb_run_get_id(run));
    rt_wandb_run_free(run);
    CHECK(check_steps(&srv, key, 1, 1, 30));
    wbt_server_stop(&srv);
    return 0;
}

/* ---------------------------------------------------------------- disabled */

DEF_TEST(disabled)
{
    g_autofree char *dir = new_dir("disabled");
    rt_wandb_settings s;
    test_settings(&s, "http://127.0.0.1:1", dir);
    s.mode = RT_WANDB_MODE_DISABLED;
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(RT_WANDB_MODE_DISABLED, rt_wandb_run_get_mode(run));
    OK(rt_wandb_run_get_dir(run) == NULL);
    OK(log1(run, 1, "train/loss", 1.0));
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    rt_wandb_run_free(run);
    s.mode = RT_WANDB_MODE_ONLINE;
    s.enable = FALSE;
    run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(RT_WANDB_MODE_DISABLED, rt_wandb_run_get_mode(run));
    rt_wandb_run_free(run);
    g_autofree char *wandb_dir = g_build_filename(dir, "wandb", NULL);
    OK(!g_file_test(wandb_dir, G_FILE_TEST_EXISTS));
    return 0;
}

int main(void)
{
    char *python = g_find_program_in_path("python3");
    if (!python)
        SKIP_ALL("python3 is not installed: the W&B stand-in server cannot run");
    g_free(python);
    /* Hermetic: no user settings, no proxy for the loopback server. */
    const char *unset[] = {"WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY",
                           "WANDB_RUN_ID",  "NETRC",          "http_proxy", "https_proxy",   "HTTP_PROXY",
                           "HTTPS_PROXY",   "ALL_PROXY",      "all_proxy"};
    for (size_t i = 0; i < G_N_ELEMENTS(unset); i++)
        wbt_unsetenv(unset[i]);
    wbt_setenv("NO_PROXY", "127.0.0.1,localhost", TRUE);
    wbt_log_capture();
    tmp_root = g_dir_make_tmp("robotrain-wandb-XXXXXX", NULL);
    if (!tmp_root) {
        printf("# cannot create a temporary folder\n");
        return 1;
    }

    RUN_TEST(create_run);
    RUN_TEST(stream_metrics);
    RUN_TEST(resume_same_id);
    RUN_TEST(down_at_start);
    RUN_TEST(down_in_the_middle);
    RUN_TEST(lost_answers);
    RUN_TEST(heartbeat);
    RUN_TEST(finish_when_gone);
    RUN_TEST(refused_key);
    RUN_TEST(server_errors);
    RUN_TEST(offline_then_sync);
    RUN_TEST(slow_server_does_not_block);
    RUN_TEST(full_queue_spills);
    RUN_TEST(disabled);

    if (rt_test_failures == 0)
        wbt_remove_tree(tmp_root);
    else
        printf("# files kept in %s\n", tmp_root);
    g_free(tmp_root);
    END_TEST;
}
