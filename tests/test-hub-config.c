/* The Hub client's configuration (huggingface_hub's environment variables), names and
 * patterns: no server needed. */
#include "config.h"

#include <unistd.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>
#include <robotrain/hub.h>

#include "testing.h"

static const char *const hub_vars[] = {
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_LEROBOT_HOME",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HUB_ETAG_TIMEOUT",
    "HF_HUB_DOWNLOAD_TIMEOUT",
    "XDG_CACHE_HOME",
    NULL,
};

static char *home;

static void clean_env(void)
{
    for (const char *const *v = hub_vars; *v; v++)
        g_unsetenv(*v);
    g_setenv("HOME", home, TRUE);
}

static rt_hub_config *load(void)
{
    GError *err = NULL;
    rt_hub_config *c = rt_hub_config_new_from_env(&err);
    if (!c) {
        printf("# %s\n", err->message);
        g_error_free(err);
    }
    return c;
}

DEF_TEST(defaults)
{
    clean_env();
    rt_hub_config *c = load();
    OK(c != NULL);
    EXPECT_EQ_STR("https://huggingface.co", c->endpoint);
    char *hf = g_build_filename(home, ".cache", "huggingface", NULL);
    char *hub = g_build_filename(hf, "hub", NULL);
    char *lerobot = g_build_filename(hf, "lerobot", NULL);
    char *token = g_build_filename(hf, "token", NULL);
    char *lerobot_hub = g_build_filename(lerobot, "hub", NULL);
    EXPECT_EQ_STR(hf, c->hf_home);
    EXPECT_EQ_STR(hub, c->hub_cache);
    EXPECT_EQ_STR(lerobot, c->lerobot_home);
    EXPECT_EQ_STR(token, c->token_path);
    char *lc = rt_hub_config_lerobot_cache(c);
    EXPECT_EQ_STR(lerobot_hub, lc);
    OK(c->token == NULL);
    OK(!c->offline);
    EXPECT_NEAR(10, c->etag_timeout_s, 0);
    EXPECT_NEAR(10, c->download_timeout_s, 0);
    EXPECT_EQ_INT(5, c->max_retries);
    EXPECT_NEAR(1, c->retry_base_s, 0);
    EXPECT_NEAR(8, c->retry_max_s, 0);
    OK(g_str_has_prefix(c->user_agent, "robotrain/"));
    OK(strstr(c->user_agent, "libcurl/") != NULL);
    g_free(lc);
    g_free(lerobot_hub);
    g_free(token);
    g_free(lerobot);
    g_free(hub);
    g_free(hf);
    rt_hub_config_free(c);
    return 0;
}

DEF_TEST(paths_from_environment)
{
    clean_env();
    g_setenv("XDG_CACHE_HOME", "/x/xdg", TRUE);
    rt_hub_config *c = load();
    EXPECT_EQ_STR("/x/xdg/huggingface", c->hf_home);
    EXPECT_EQ_STR("/x/xdg/huggingface/hub", c->hub_cache);
    rt_hub_config_free(c);

    g_setenv("HF_HOME", "~/hf", TRUE);
    c = load();
    char *want = g_build_filename(home, "hf", NULL);
    EXPECT_EQ_STR(want, c->hf_home);
    g_free(want);
    want = g_build_filename(home, "hf", "lerobot", NULL);
    EXPECT_EQ_STR(want, c->lerobot_home);
    g_free(want);
    rt_hub_config_free(c);

    g_setenv("HF_HOME", "/x/hf", TRUE);
    g_setenv("HUGGINGFACE_HUB_CACHE", "/x/legacy", TRUE);
    c = load();
    EXPECT_EQ_STR("/x/legacy", c->hub_cache);
    EXPECT_EQ_STR("/x/hf/token", c->token_path);
    rt_hub_config_free(c);
    g_setenv("HF_HUB_CACHE", "/x/cache", TRUE);
    g_setenv("HF_LEROBOT_HOME", "/x/lr", TRUE);
    g_setenv("HF_TOKEN_PATH", "/x/tok", TRUE);
    g_setenv("HF_ENDPOINT", "http://127.0.0.1:8080///", TRUE);
    g_setenv("HF_HUB_ETAG_TIMEOUT", "2.5", TRUE);
    g_setenv("HF_HUB_DOWNLOAD_TIMEOUT", "30", TRUE);
    c = load();
    EXPECT_EQ_STR("/x/cache", c->hub_cache);
    EXPECT_EQ_STR("/x/lr", c->lerobot_home);
    EXPECT_EQ_STR("/x/tok", c->token_path);
    EXPECT_EQ_STR("http://127.0.0.1:8080", c->endpoint);
    EXPECT_NEAR(2.5, c->etag_timeout_s, 0);
    EXPECT_NEAR(30, c->download_timeout_s, 0);
    rt_hub_config *copy = rt_hub_config_copy(c);
    rt_hub_config_free(c);
    EXPECT_EQ_STR("/x/cache", copy->hub_cache);
    rt_hub_config_free(copy);

    GError *err = NULL;
    g_setenv("HF_HUB_ETAG_TIMEOUT", "ten", TRUE);
    OK(rt_hub_config_new_from_env(&err) == NULL);
    EXPECT_ERROR(err, "HF_HUB_ETAG_TIMEOUT=ten is not a number of seconds");
    return 0;
}

DEF_TEST(offline_values)
{
    const char *yes[] = {"1", "ON", "yes", "True", "TRUE"};
    const char *no[] = {"0", "false", "off", "", "2"};
    for (guint i = 0; i < G_N_ELEMENTS(yes); i++) {
        clean_env();
        g_setenv("HF_HUB_OFFLINE", yes[i], TRUE);
        rt_hub_config *c = load();
        OK1(c->offline, yes[i]);
        rt_hub_config_free(c);
    }
    for (guint i = 0; i < G_N_ELEMENTS(no); i++) {
        clean_env();
        g_setenv("HF_HUB_OFFLINE", no[i], TRUE);
        rt_hub_config *c = load();
        OK1(!c->offline, no[i]);
        rt_hub_config_free(c);
    }
    clean_env();
    g_setenv("TRANSFORMERS_OFFLINE", "1", TRUE);
    rt_hub_config *c = load();
    OK(c->offline);
    rt_hub_config_free(c);

    /* offline, the calls that need the Hub say so */
    GError *err = NULL;
    rt_hub *hub = rt_hub_new(NULL, &err);
    EXPECT_NO_ERROR(err);
    OK(rt_hub_list_refs(hub, RT_HUB_DATASET, "lerobot/pusht", &err) == NULL);
    EXPECT_ERROR(err, "HF_HUB_OFFLINE is set");
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));
    rt_hub_free(hub);
    return 0;
}

DEF_TEST(tokens)
{
    char *dir = g_dir_make_tmp("robotrain-hub-token-XXXXXX", NULL);
    char *file = g_build_filename(dir, "token", NULL);
    clean_env();
    g_setenv("HF_HOME", dir, TRUE);
    rt_hub_config *c = load();
    OK(c->token == NULL);
    rt_hub_config_free(c);

    OK(g_file_set_contents(file, "\r\n  hf_from_file \n", -1, NULL));
    c = load();
    EXPECT_EQ_STR("hf_from_file", c->token);
    rt_hub_config_free(c);
    g_setenv("HUGGING_FACE_HUB_TOKEN", "hf_legacy", TRUE);
    c = load();
    EXPECT_EQ_STR("hf_legacy", c->token);
    rt_hub_config_free(c);
    g_setenv("HF_TOKEN", " hf_env\n", TRUE);
    c = load();
    EXPECT_EQ_STR("hf_env", c->token);
    rt_hub_config_free(c);
    /* empty means unset: the next source */
    g_setenv("HF_TOKEN", "", TRUE);
    g_unsetenv("HUGGING_FACE_HUB_TOKEN");
    c = load();
    EXPECT_EQ_STR("hf_from_file", c->token);
    rt_hub_config_free(c);
    OK(g_file_set_contents(file, "\n", -1, NULL));
    c = load();
    OK(c->token == NULL);
    rt_hub_config_free(c);

    /* a token file that cannot be read is named */
    g_unlink(file);
    g_mkdir(file, 0700);
    GError *err = NULL;
    OK(rt_hub_config_new_from_env(&err) == NULL);
    OK(err && strstr(err->message, file));
    EXPECT_ERROR(err, "cannot read the Hugging Face token file");
    g_rmdir(file);
    g_rmdir(dir);
    g_free(file);
    g_free(dir);
    return 0;
}

DEF_TEST(client)
{
    clean_env();
    rt_hub_config *c = load();
    g_free(c->endpoint);
    c->endpoint = g_strdup("ftp://example.org");
    GError *err = NULL;
    OK(rt_hub_new(c, &err) == NULL);
    EXPECT_ERROR(err, "Hub endpoint 'ftp://example.org' is not an http:// or https:// URL");
    g_free(c->endpoint);
    c->endpoint = g_strdup("https://huggingface.co");
    rt_hub *hub = rt_hub_new(c, &err);
    EXPECT_NO_ERROR(err);
    rt_hub_config_free(c);
    EXPECT_EQ_STR("https://huggingface.co", rt_hub_get_config(hub)->endpoint);
    EXPECT_EQ_INT(0, rt_hub_request_count(hub));
    rt_hub_free(hub);
    return 0;
}

DEF_TEST(names)
{
    const char *good[] = {"lerobot/pusht", "gpt2", "user-1/my_model.v2", "A/B"};
    const char *bad[][2] = {
        {"", "it is empty"},
        {"a/b/c", "more than one '/'"},
        {"lerobot//pusht", "more than one '/'"},
        {"lerobot/pu--sht", "contains \"--\""},
        {"../x", "contains \"--\" or \"..\""},
        {"-x/y", "starts or ends with '-' or '.'"},
        {"x/y.", "starts or ends with '-' or '.'"},
        {"x/y z", "characters other than"},
        {"/x", "is empty"},
    };
    GError *err = NULL;
    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
        OK1(rt_hub_check_repo_id(good[i], &err), good[i]);
        EXPECT_NO_ERROR(err);
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        OK1(!rt_hub_check_repo_id(bad[i][0], &err), bad[i][0]);
        OK(err && err->code == RT_ERROR_INVALID_ARG);
        EXPECT_ERROR(err, bad[i][1]);
    }
    char long_id[100];
    memset(long_id, 'a', 97);
    long_id[97] = '\0';
    OK(!rt_hub_check_repo_id(long_id, &err));
    EXPECT_ERROR(err, "longer than 96 characters");

    char *n = rt_hub_repo_folder_name(RT_HUB_DATASET, "lerobot/pusht");
    EXPECT_EQ_STR("datasets--lerobot--pusht", n);
    g_free(n);
    n = rt_hub_repo_folder_name(RT_HUB_MODEL, "gpt2");
    EXPECT_EQ_STR("models--gpt2", n);
    g_free(n);
    n = rt_hub_repo_folder_name(RT_HUB_SPACE, "a/b");
    EXPECT_EQ_STR("spaces--a--b", n);
    g_free(n);
    EXPECT_EQ_STR("dataset", rt_hub_repo_type_name(RT_HUB_DATASET));

    OK(rt_hub_is_commit_sha("0123456789abcdef0123456789abcdef01234567"));
    OK(!rt_hub_is_commit_sha("0123456789ABCDEF0123456789abcdef01234567"));
    OK(!rt_hub_is_commit_sha("0123456789abcdef0123456789abcdef0123456"));
    OK(!rt_hub_is_commit_sha("v3.0"));
    OK(!rt_hub_is_commit_sha(NULL));
    return 0;
}

DEF_TEST(patterns)
{
    /* fnmatch semantics as huggingface_hub's filter: '*' crosses '/' */
    struct {
        const char *pattern, *path;
        gboolean match;
    } cases[] = {
        {"meta/", "meta/info.json", TRUE},
        {"meta/", "meta/episodes/chunk-000/file-000.parquet", TRUE},
        {"meta/", "metadata/x", FALSE},
        {"*.json", "meta/info.json", TRUE},
        {"*.json", "info.json.bak", FALSE},
        {"data/chunk-00?/*.parquet", "data/chunk-003/file-001.parquet", TRUE},
        {"data/chunk-00?/*.parquet", "data/chunk-0103/file-001.parquet", FALSE},
        {"data/chunk-000/file-000.parquet", "data/chunk-000/file-000.parquet", TRUE},
        {"data/chunk-000/file-000.parquet", "data/chunk-000/file-0000.parquet", FALSE},
        {"[!m]*", "meta/info.json", FALSE},
        {"[!m]*", "data/x", TRUE},
        {"[a-c]*", "b", TRUE},
        {"[a-c]*", "d", FALSE},
        {"[x", "[x", TRUE},
        {"*", "", TRUE},
        {"a*b*c", "aXXbYYc", TRUE},
        {"a*b*c", "aXXbYY", FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *const allow[] = {cases[i].pattern, NULL};
        gboolean m = rt_hub_match_patterns(cases[i].path, allow, NULL);
        char *what = g_strdup_printf("'%s' %s '%s'", cases[i].pattern,
                                     cases[i].match ? "matches" : "does not match", cases[i].path);
        OK1(m == cases[i].match, what);
        g_free(what);
    }
    const char *const allow[] = {"*.safetensors", "*.json", NULL};
    const char *const ignore[] = {"checkpoints/", NULL};
    OK(rt_hub_match_patterns("config.json", allow, ignore));
    OK(!rt_hub_match_patterns("checkpoints/1/config.json", allow, ignore));
    OK(!rt_hub_match_patterns("notes.txt", allow, ignore));
    OK(rt_hub_match_patterns("notes.txt", NULL, NULL));
    OK(!rt_hub_match_patterns("checkpoints/a", NULL, ignore));
    return 0;
}

int main(void)
{
    home = g_dir_make_tmp("robotrain-hub-home-XXXXXX", NULL);
    RUN_TEST(defaults);
    RUN_TEST(paths_from_environment);
    RUN_TEST(offline_values);
    RUN_TEST(tokens);
    RUN_TEST(client);
    RUN_TEST(names);
    RUN_TEST(patterns);
    g_rmdir(home);
    g_free(home);
    END_TEST;
}
