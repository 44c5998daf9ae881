/* The W&B client's parts that need no server: numbers and history lines (checked against what
 * Python's repr() and json module write), the summary, ~/.netrc, the config in W&B's form, tag
 * and artifact names, the --wandb.* rows, settings errors, and offline runs (the folder they
 * write, resume from it, a damaged folder). */
#include "config.h"

#include <math.h>

#include "testing.h"
#include "test-wandb-server.h"

#include "net/wandb-private.h"
#include <robotrain/wandb.h>

static char *tmp_root;

static char *new_dir(const char *name)
{
    return wbt_new_dir(tmp_root, name);
}

/* ---------------------------------------------------------------- history lines */

DEF_TEST(numbers)
{
    /* The expected texts are Python's repr() of the same doubles (integral values aside). */
    static const struct {
        double value;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {1e-5, "1e-05"},
        {2.5e-7, "2.5e-07"},
        {1.0 / 3, "0.3333333333333333"},
        {2.0 / 3, "0.6666666666666666"},
        {0.1 + 0.2, "0.30000000000000004"},
        {(double)0.53f, "0.5299999713897705"},
        {123456.789, "123456.789"},
        {1766000000.1, "1766000000.1"},
        {5e-324, "5e-324"},
        {1e20, "1e+20"},
        {200.0, "200"}, /* Python writes 200.0; W&B reads both as the number 200 */
        {-3.0, "-3"},
        {0.0, "0"},
    };
    char buf[32];
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        EXPECT_EQ_STR(cases[i].text, rt_wandb_format_number(cases[i].value, buf));
    /* Non-finite values as Python's json module writes them. */
    EXPECT_EQ_STR("NaN", rt_wandb_format_number(NAN, buf));
    EXPECT_EQ_STR("Infinity", rt_wandb_format_number(INFINITY, buf));
    EXPECT_EQ_STR("-Infinity", rt_wandb_format_number(-INFINITY, buf));
    return 0;
}

DEF_TEST(rows)
{
    rt_wandb_row row;
    rt_wandb_row_init(&row);
    row.step = 7;
    row.runtime = 1.5;
    row.timestamp = 1766000000.25;
    rt_wandb_row_set(&row, "train/loss", 0.75);
    rt_wandb_row_set(&row, "say \"hi\"\n", 1);
    rt_wandb_row_set(&row, "train/loss", 0.25); /* replaces, keeps its place */
    GString *out = g_string_new(NULL);
    rt_wandb_row_format(&row, out);
    EXPECT_EQ_STR("{\"train/loss\":0.25,\"say \\\"hi\\\"\\n\":1,\"_step\":7,\"_runtime\":1.5,"
                  "\"_timestamp\":1766000000.25}\n",
                  out->str);
    /* json-glib reads it back to the same values. */
    JsonNode *n = wbt_parse(out->str);
    OK(n != NULL);
    EXPECT_NEAR(0.25, json_object_get_double_member(json_node_get_object(n), "train/loss"), 0);
    EXPECT_EQ_INT(1, json_object_get_int_member(json_node_get_object(n), "say \"hi\"\n"));
    json_node_unref(n);
    /* A reset row starts empty. */
    rt_wandb_row_reset(&row);
    row.step = 8;
    g_string_truncate(out, 0);
    rt_wandb_row_format(&row, out);
    EXPECT_EQ_STR("{\"_step\":8,\"_runtime\":0,\"_timestamp\":0}\n", out->str);
    g_string_free(out, TRUE);
    rt_wandb_row_clear(&row);

    GString *s = g_string_new(NULL);
    rt_wandb_append_json_string(s, "a\tb\x01\\", -1);
    EXPECT_EQ_STR("\"a\\tb\\u0001\\\\\"", s->str);
    g_string_free(s, TRUE);
    return 0;
}

DEF_TEST(summary)
{
    rt_wandb_summary sm;
    rt_wandb_summary_init(&sm);
    const char *l1 =
        "{\"train/loss\":0.5,\"train/lr\":1e-05,\"_step\":1,\"_runtime\":0.5,\"_timestamp\":17.5}";
    const char *l2 = "{ \"train/loss\" : NaN , \"eval/s\":\"a,b}\" ,\"ok\":true,\"_step\":2,\"_runtime\":1}";
    OK(rt_wandb_summary_merge(&sm, l1, strlen(l1)));
    OK(rt_wandb_summary_merge(&sm, l2, strlen(l2)));
    GString *out = g_string_new(NULL);
    rt_wandb_summary_format(&sm, out);
    EXPECT_EQ_STR(
        "{\"train/loss\":NaN,\"train/lr\":1e-05,\"_step\":2,\"_runtime\":1,\"eval/s\":\"a,b}\",\"ok\":true}",
        out->str);
    EXPECT_EQ_STR("2", rt_wandb_summary_lookup(&sm, "_step"));
    OK(rt_wandb_summary_lookup(&sm, "_timestamp") == NULL);
    /* Lines that are not flat objects change nothing. */
    const char *bad[] = {"[1,2]",
                         "{\"a\":{\"b\":1}}",
                         "{\"a\":1} x",
                         "{\"a\":1,}",
                         "{\"a\" 1}",
                         "{\"a\":nope}",
                         "{\"a\":\"unterminated}",
                         ""};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        OK(!rt_wandb_summary_merge(&sm, bad[i], strlen(bad[i])));
    g_string_truncate(out, 0);
    rt_wandb_summary_format(&sm, out);
    OK(strstr(out->str, "\"a\"") == NULL);
    OK(rt_wandb_summary_merge(&sm, "{}", 2));
    g_string_free(out, TRUE);
    rt_wandb_summary_clear(&sm);
    return 0;
}

/* ---------------------------------------------------------------- settings */

DEF_TEST(netrc)
{
    const char *text = "# W&B\n"
                       "machine github.com login me password gh-token\n"
                       "machine api.wandb.ai\n"
                       "  login user\n"
                       "  password wandb-key-1\n"
                       "macdef init\n"
                       "  password not-this\n"
                       "\n"
                       "machine \"quoted.host\" login \"a b\" password \"p w\\\"d\"\n"
                       "default login anonymous password fallback-key\n";
    char *k = rt_wandb_netrc_find(text, "api.wandb.ai");
    EXPECT_EQ_STR("wandb-key-1", k);
    g_free(k);
    k = rt_wandb_netrc_find(text, "API.WANDB.AI");
    EXPECT_EQ_STR("wandb-key-1", k);
    g_free(k);
    k = rt_wandb_netrc_find(text, "quoted.host");
    EXPECT_EQ_STR("p w\"d", k);
    g_free(k);
    k = rt_wandb_netrc_find(text, "github.com");
    EXPECT_EQ_STR("gh-token", k);
    g_free(k);
    k = rt_wandb_netrc_find(text, "other.host");
    EXPECT_EQ_STR("fallback-key", k);
    g_free(k);
    OK(rt_wandb_netrc_find("machine a password b\n", "c") == NULL);
    OK(rt_wandb_netrc_find("", "c") == NULL);
    OK(rt_wandb_netrc_find("machine", "machine") == NULL);
    return 0;
}

DEF_TEST(config_and_names)
{
    GError *err = NULL;
    char *c = rt_wandb_config_to_wandb("{\"a\": 1, \"b\": {\"c\": [1, 2]}, \"d\": null, \"e\": \"x\"}", &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR("{\"a\":{\"value\":1,\"desc\":null},\"b\":{\"value\":{\"c\":[1,2]},\"desc\":null},"
                  "\"d\":{\"value\":null,\"desc\":null},\"e\":{\"value\":\"x\",\"desc\":null}}",
                  c);
    g_free(c);
    c = rt_wandb_config_to_wandb(NULL, &err);
    EXPECT_EQ_STR("{}", c);
    g_free(c);
    OK(rt_wandb_config_to_wandb("[1, 2]", &err) == NULL);
    EXPECT_ERROR(err, "the training config given to W&B is not a JSON object");
    OK(rt_wandb_config_to_wandb("{\"a\": ", &err) == NULL);
    EXPECT_ERROR(err, "the training config given to W&B is not JSON");

    char **tags = rt_wandb_lerobot_tags("act", 1000, "lerobot/aloha_sim_transfer_cube_human", "aloha");
    EXPECT_EQ_INT(4, g_strv_length(tags));
    EXPECT_EQ_STR("policy:act", tags[0]);
    EXPECT_EQ_STR("seed:1000", tags[1]);
    EXPECT_EQ_STR("dataset:lerobot/aloha_sim_transfer_cube_human", tags[2]);
    EXPECT_EQ_STR("env:aloha", tags[3]);
    char *name = rt_wandb_artifact_name((const char *const *)tags, "020000");
    EXPECT_EQ_STR("policy_act-seed_1000-dataset_lerobot_aloha_sim_transfer_cube_human-env_aloha-020000",
                  name);
    g_free(name);
    g_strfreev(tags);
    /* Tags are cut to 64 characters (not bytes: "é" is two bytes). */
    GString *long_name = g_string_new("user/");
    for (int i = 0; i < 70; i++)
        g_string_append(long_name, "\xc3\xa9");
    tags = rt_wandb_lerobot_tags(NULL, -1, long_name->str, NULL);
    EXPECT_EQ_INT(2, g_strv_length(tags));
    EXPECT_EQ_STR("seed:-1", tags[0]);
    EXPECT_EQ_INT(64, g_utf8_strlen(tags[1], -1));
    OK(g_str_has_prefix(tags[1], "dataset:user/\xc3\xa9"));
    g_strfreev(tags);
    g_string_free(long_name, TRUE);
    name = rt_wandb_artifact_name(NULL, "000100");
    EXPECT_EQ_STR("000100", name);
    g_free(name);

    char *url = rt_wandb_run_url("https://api.wandb.ai", "my team", "lerobot", "abc123");
    EXPECT_EQ_STR("https://wandb.ai/my%20team/lerobot/runs/abc123", url);
    g_free(url);
    url = rt_wandb_run_url("http://127.0.0.1:8080", "e", "p", "r");
    EXPECT_EQ_STR("http://127.0.0.1:8080/e/p/runs/r", url);
    g_free(url);

    char *a = rt_wandb_new_run_id(), *b = rt_wandb_new_run_id();
    EXPECT_EQ_INT(8, strlen(a));
    for (const char *p = a; *p; p++)
        OK(g_ascii_islower(*p) || g_ascii_isdigit(*p));
    OK(strcmp(a, b) != 0);
    g_free(a);
    g_free(b);
    EXPECT_EQ_STR("offline", rt_wandb_mode_name(RT_WANDB_MODE_OFFLINE));
    return 0;
}

DEF_TEST(option_rows)
{
    size_t n;
    const rt_option *rows = rt_wandb_options(&n);
    EXPECT_EQ_INT(8, n);
    GError *err = NULL;
    rt_config *cfg = rt_config_new("robotrain train");
    OK(rt_config_add_options(cfg, "wandb", rows, n, &err));
    EXPECT_NO_ERROR(err);
    /* LeRobot's defaults. */
    rt_wandb_settings s;
    rt_wandb_settings_init(&s);
    rt_wandb_settings_from_config(&s, cfg, NULL);
    OK(!s.enable);
    OK(!s.disable_artifact);
    EXPECT_EQ_STR("lerobot", s.project);
    OK(s.entity == NULL && s.notes == NULL && s.run_id == NULL);
    EXPECT_EQ_INT(RT_WANDB_MODE_DEFAULT, s.mode);
    OK(rt_config_get_bool(cfg, "wandb.add_tags"));

    char *argv[] = {"train",
                    "--wandb.enable=true",
                    "--wandb.mode=offline",
                    "--wandb.project=p1",
                    "--wandb.run_id=abc",
                    "--wandb.notes",
                    "some notes",
                    "--wandb.disable_artifact",
                    NULL};
    OK(rt_config_parse_args(cfg, G_N_ELEMENTS(argv) - 1, argv, NULL, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_settings_from_config(&s, cfg, "wandb");
    OK(s.enable);
    OK(s.disable_artifact);
    EXPECT_EQ_INT(RT_WANDB_MODE_OFFLINE, s.mode);
    EXPECT_EQ_STR("p1", s.project);
    EXPECT_EQ_STR("abc", s.run_id);
    EXPECT_EQ_STR("some notes", s.notes);

    /* The wandb section of a LeRobot train_config.json loads. */
    const char *json =
        "{\"wandb\": {\"enable\": true, \"disable_artifact\": false, \"project\": \"lerobot\", "
        "\"entity\": null, \"notes\": null, \"run_id\": \"x1y2z3\", \"mode\": null}}";
    OK(rt_config_load_json_data(cfg, json, strlen(json), "train_config.json", &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_settings_from_config(&s, cfg, NULL);
    EXPECT_EQ_STR("x1y2z3", s.run_id);
    EXPECT_EQ_INT(RT_WANDB_MODE_DEFAULT, s.mode);
    OK(s.notes == NULL);

    char *bad[] = {"train", "--wandb.mode=sometimes", NULL};
    OK(!rt_config_parse_args(cfg, 2, bad, NULL, &err));
    EXPECT_ERROR(err, "offline");
    rt_config_free(cfg);
    return 0;
}

/* Settings that never reach a server: offline, in a folder of the test's temporary root. */
static void offline_settings(rt_wandb_settings *s, const char *out)
{
    rt_wandb_settings_init(s);
    s->output_dir = out;
    s->mode = RT_WANDB_MODE_OFFLINE;
    s->project = "proj";
}

DEF_TEST(setting_errors)
{
    g_autofree char *dir = new_dir("errors");
    rt_wandb_settings s;
    offline_settings(&s, dir);
    GError *err = NULL;

    s.run_id = "a/b";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "--wandb.run_id 'a/b' is not a W&B run id");
    s.run_id = NULL;
    wbt_setenv("WANDB_RUN_ID", "..", TRUE);
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "WANDB_RUN_ID '..' is not a W&B run id");
    wbt_unsetenv("WANDB_RUN_ID");

    s.project = "team/proj";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "--wandb.project 'team/proj' is not a W&B project name");
    s.project = "proj";

    s.config_json = "[]";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "not a JSON object");
    s.config_json = NULL;

    s.output_dir = NULL;
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "W&B logging needs --output_dir");
    s.output_dir = dir;

    s.mode = RT_WANDB_MODE_DEFAULT;
    wbt_setenv("WANDB_MODE", "sometimes", TRUE);
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "WANDB_MODE is 'sometimes': use online, offline or disabled");
    wbt_setenv("WANDB_MODE", "offline", TRUE);
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_INT(RT_WANDB_MODE_OFFLINE, rt_wandb_run_get_mode(run));
    rt_wandb_run_free(run);
    wbt_unsetenv("WANDB_MODE");

    s.mode = RT_WANDB_MODE_ONLINE;
    s.api_key = "k";
    wbt_setenv("WANDB_BASE_URL", "ftp://example.com", TRUE);
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "WANDB_BASE_URL 'ftp://example.com' is not an http:// or https:// URL");
    wbt_unsetenv("WANDB_BASE_URL");
    s.base_url = "http://";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "the W&B base URL 'http://' is not an http:// or https:// URL");
    s.base_url = "http://127.0.0.1:1";
    s.api_key = "two words";
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err && strstr(err->message, "two words") == NULL);
    EXPECT_ERROR(err, "the W&B API key from the settings is empty or contains blanks");
    return 0;
}

/* ---------------------------------------------------------------- offline folders */

static char **folder_lines(const char *run_dir)
{
    g_autofree char *path = g_build_filename(run_dir, "wandb-history.jsonl", NULL);
    return wbt_read_lines(path);
}

static JsonNode *folder_state(const char *run_dir)
{
    g_autofree char *path = g_build_filename(run_dir, "run.json", NULL);
    g_autofree char *text = NULL;
    return g_file_get_contents(path, &text, NULL, NULL) ? wbt_parse(text) : NULL;
}

DEF_TEST(offline_folder)
{
    g_autofree char *dir = new_dir("offline");
    rt_wandb_settings s;
    offline_settings(&s, dir);
    s.entity = "ent";
    s.display_name = "job";
    s.notes = "n";
    const char *tags[] = {"policy:act", NULL};
    s.tags = tags;
    s.config_json = "{\"seed\": 1000}";
    GError *err = NULL;
    rt_wandb_run *run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    g_autofree char *run_dir = g_strdup(rt_wandb_run_get_dir(run));
    g_autofree char *want_dir = g_strdup_printf("%s/wandb/run-%s", dir, rt_wandb_run_get_id(run));
    EXPECT_EQ_STR(want_dir, run_dir);
    g_autofree char *id = g_strdup(rt_wandb_run_get_id(run));
    /* Another process (here: a sync) cannot use the folder meanwhile. */
    rt_wandb_settings nowhere;
    rt_wandb_settings_init(&nowhere);
    nowhere.base_url = "http://127.0.0.1:1";
    nowhere.api_key = "k";
    OK(!rt_wandb_sync(run_dir, &nowhere, NULL, &err));
    EXPECT_ERROR(err, "is in use by another run or sync");
    const char *names[] = {"train/loss", "train/steps"};
    for (int step = 100; step <= 300; step += 100) {
        double values[] = {step / 1000.0, step};
        OK(rt_wandb_log(run, step, names, values, 2, &err));
    }
    OK(rt_wandb_run_finish(run, 3, 1000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_stats st;
    rt_wandb_run_get_stats(run, &st);
    EXPECT_EQ_INT(3, st.lines_written);
    EXPECT_EQ_INT(0, st.lines_sent);
    rt_wandb_run_free(run);

    g_auto(GStrv) lines = folder_lines(run_dir);
    EXPECT_EQ_INT(3, lines ? g_strv_length(lines) : 0);
    OK(g_str_has_prefix(lines[0], "{\"train/loss\":0.1,\"train/steps\":100,\"_step\":100,\"_runtime\":"));
    OK(g_str_has_prefix(lines[2], "{\"train/loss\":0.3,\"train/steps\":300,\"_step\":300,\"_runtime\":"));
    JsonNode *state = folder_state(run_dir);
    OK(state != NULL);
    JsonObject *o = json_node_get_object(state);
    EXPECT_EQ_STR(id, json_object_get_string_member(o, "id"));
    EXPECT_EQ_STR("proj", json_object_get_string_member(o, "project"));
    EXPECT_EQ_STR("ent", json_object_get_string_member(o, "entity"));
    EXPECT_EQ_STR("job", json_object_get_string_member(o, "display_name"));
    EXPECT_EQ_STR("n", json_object_get_string_member(o, "notes"));
    EXPECT_EQ_STR("offline", json_object_get_string_member(o, "mode"));
    EXPECT_EQ_STR("{\"seed\":{\"value\":1000,\"desc\":null}}", json_object_get_string_member(o, "config"));
    EXPECT_EQ_INT(3, json_object_get_int_member(o, "exitcode"));
    EXPECT_EQ_INT(0, json_object_get_int_member(o, "history_sent"));
    OK(!json_object_get_boolean_member(o, "complete_sent"));
    double runtime = json_object_get_double_member(o, "runtime");
    json_node_unref(state);

    /* Resume (the id comes from latest-run): lines go on in the same file, steps must grow,
     * _runtime continues. */
    s.resume = TRUE;
    s.display_name = NULL;
    s.config_json = NULL;
    run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    EXPECT_EQ_STR(id, rt_wandb_run_get_id(run));
    double one = 1;
    const char *loss[] = {"train/loss"};
    OK(!rt_wandb_log(run, 300, loss, &one, 1, &err));
    EXPECT_ERROR(err, "W&B step 300 is not after step 300, the last one logged in W&B run");
    OK(!rt_wandb_log(run, -1, loss, &one, 1, &err));
    EXPECT_ERROR(err, "W&B step -1 is negative");
    OK(rt_wandb_log(run, 400, loss, &one, 1, &err));
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    EXPECT_NO_ERROR(err);
    rt_wandb_run_free(run);
    g_auto(GStrv) more = folder_lines(run_dir);
    EXPECT_EQ_INT(4, g_strv_length(more));
    EXPECT_EQ_STR(lines[2], more[2]);
    JsonNode *last = wbt_parse(more[3]);
    OK(json_object_get_double_member(json_node_get_object(last), "_runtime") >= runtime);
    json_node_unref(last);
    state = folder_state(run_dir);
    o = json_node_get_object(state);
    EXPECT_EQ_STR("job", json_object_get_string_member(o, "display_name")); /* kept */
    EXPECT_EQ_STR("{\"seed\":{\"value\":1000,\"desc\":null}}", json_object_get_string_member(o, "config"));
    EXPECT_EQ_INT(0, json_object_get_int_member(o, "exitcode"));
    json_node_unref(state);

    /* A line cut short by a crash is dropped when the folder is opened again. */
    g_autofree char *hist = g_build_filename(run_dir, "wandb-history.jsonl", NULL);
    FILE *f = fopen(hist, "a");
    OK(f != NULL);
    fputs("{\"train/loss\":0.", f);
    fclose(f);
    wbt_log_clear();
    run = rt_wandb_run_start(&s, &err);
    EXPECT_NO_ERROR(err);
    OK(wbt_log_contains("ends with an incomplete line"));
    OK(rt_wandb_log(run, 500, loss, &one, 1, &err));
    OK(rt_wandb_run_finish(run, 0, 1000, &err));
    rt_wandb_run_free(run);
    g_auto(GStrv) fixed = folder_lines(run_dir);
    EXPECT_EQ_INT(5, g_strv_length(fixed));
    OK(g_str_has_prefix(fixed[4], "{\"train/loss\":1,\"_step\":500,"));

    /* A damaged run.json is reported with its path. */
    g_autofree char *state_path = g_build_filename(run_dir, "run.json", NULL);
    OK(g_file_set_contents(state_path, "{\"id\": 5}", -1, NULL));
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err && strstr(err->message, state_path) != NULL);
    EXPECT_ERROR(err, "\"id\" is not a string");
    OK(g_file_set_contents(state_path, "not json", -1, NULL));
    OK(rt_wandb_run_start(&s, &err) == NULL);
    EXPECT_ERROR(err, "is not a JSON object");
    OK(!rt_wandb_sync(run_dir, &nowhere, NULL, &err));
    EXPECT_ERROR(err, "cannot sync the W&B run folder");
    return 0;
}

DEF_TEST(unwritable_folder)
{
    /* OUTPUT_DIR is a file: the run folder cannot be created in it (root or not). */
    g_autofree char *dir = new_dir("not-a-folder");
    g_autofree char *file = g_build_filename(dir, "output", NULL);
    OK(g_file_set_contents(file, "x", -1, NULL));
    rt_wandb_settings s;
    offline_settings(&s, file);
    GError *err = NULL;
    OK(rt_wandb_run_start(&s, &err) == NULL);
    OK(err && strstr(err->message, file) != NULL);
    EXPECT_ERROR(err, "cannot create the W&B run folder");
    return 0;
}

int main(void)
{
    const char *unset[] = {"WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_PROJECT",
                           "WANDB_ENTITY",  "WANDB_RUN_ID",   "NETRC"};
    for (size_t i = 0; i < G_N_ELEMENTS(unset); i++)
        wbt_unsetenv(unset[i]);
    wbt_log_capture();
    tmp_root = g_dir_make_tmp("robotrain-wandb-units-XXXXXX", NULL);
    if (!tmp_root)
        return 1;
    RUN_TEST(numbers);
    RUN_TEST(rows);
    RUN_TEST(summary);
    RUN_TEST(netrc);
    RUN_TEST(config_and_names);
    RUN_TEST(option_rows);
    RUN_TEST(setting_errors);
    RUN_TEST(offline_folder);
    RUN_TEST(unwritable_folder);
    if (rt_test_failures == 0)
        wbt_remove_tree(tmp_root);
    else
        printf("# files kept in %s\n", tmp_root);
    g_free(tmp_root);
    END_TEST;
}
