/* The Hub client's configuration (the environment huggingface_hub reads) and the client
 * object. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <robotrain/version.h>

#include "net/hub-private.h"

#define DEFAULT_ENDPOINT "https://huggingface.co"

/* huggingface_hub's _is_true: 1, ON, YES, TRUE in any case. */
static gboolean env_true(const char *name)
{
    const char *v = g_getenv(name);
    if (!v)
        return FALSE;
    return g_ascii_strcasecmp(v, "1") == 0 || g_ascii_strcasecmp(v, "on") == 0 ||
           g_ascii_strcasecmp(v, "yes") == 0 || g_ascii_strcasecmp(v, "true") == 0;
}

/* A non-empty variable, or NULL. */
static const char *env(const char *name)
{
    const char *v = g_getenv(name);
    return v && *v ? v : NULL;
}

/* $HOME as Python's expanduser reads it (GLib caches its own answer for the process). */
static const char *home_dir(void)
{
    const char *home = env("HOME");
    return home ? home : g_get_home_dir();
}

static char *expand_home(const char *path)
{
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0'))
        return g_build_filename(home_dir(), path + 1, NULL);
    return g_strdup(path);
}

/* huggingface_hub's _clean_token: drop CR and LF, strip blanks; empty means none. */
static char *clean_token(const char *raw)
{
    if (!raw)
        return NULL;
    GString *s = g_string_new(NULL);
    for (const char *p = raw; *p; p++)
        if (*p != '\r' && *p != '\n')
            g_string_append_c(s, *p);
    g_strstrip(s->str);
    char *token = g_strdup(s->str);
    g_string_free(s, TRUE);
    if (!*token) {
        g_free(token);
        return NULL;
    }
    return token;
}

static gboolean env_seconds(const char *name, double fallback, double *out, GError **error)
{
    const char *v = env(name);
    *out = fallback;
    if (!v)
        return TRUE;
    char *end = NULL;
    double s = g_ascii_strtod(v, &end);
    if (!end || *end != '\0' || !(s >= 0) || s > 1e6) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s=%s is not a number of seconds: set it to e.g. 10, or unset it", name, v);
        return FALSE;
    }
    *out = s;
    return TRUE;
}

rt_hub_config *rt_hub_config_new_from_env(GError **error)
{
    rt_hub_config *c = g_new0(rt_hub_config, 1);

    const char *endpoint = env("HF_ENDPOINT");
    c->endpoint = g_strdup(endpoint ? endpoint : DEFAULT_ENDPOINT);
    size_t n = strlen(c->endpoint);
    while (n > 0 && c->endpoint[n - 1] == '/')
        c->endpoint[--n] = '\0';

    const char *home = env("HF_HOME");
    if (home) {
        c->hf_home = expand_home(home);
    } else {
        const char *xdg = env("XDG_CACHE_HOME");
        c->hf_home = xdg ? g_build_filename(xdg, "huggingface", NULL)
                         : g_build_filename(home_dir(), ".cache", "huggingface", NULL);
    }
    const char *cache = env("HF_HUB_CACHE");
    if (!cache)
        cache = env("HUGGINGFACE_HUB_CACHE");
    c->hub_cache = cache ? expand_home(cache) : g_build_filename(c->hf_home, "hub", NULL);
    const char *lerobot = env("HF_LEROBOT_HOME");
    c->lerobot_home = lerobot ? expand_home(lerobot) : g_build_filename(c->hf_home, "lerobot", NULL);
    const char *token_path = env("HF_TOKEN_PATH");
    c->token_path = token_path ? expand_home(token_path) : g_build_filename(c->hf_home, "token", NULL);

    c->token = clean_token(env("HF_TOKEN"));
    if (!c->token)
        c->token = clean_token(env("HUGGING_FACE_HUB_TOKEN"));
    if (!c->token) {
        char *contents = NULL;
        GError *local = NULL;
        if (g_file_get_contents(c->token_path, &contents, NULL, &local)) {
            c->token = clean_token(contents);
            if (contents)
                memset(contents, 0, strlen(contents));
            g_free(contents);
        } else if (!g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO,
                        "cannot read the Hugging Face token file %s: %s (fix its permissions, "
                        "or set HF_TOKEN, or HF_TOKEN_PATH to another file)",
                        c->token_path, local->message);
            g_error_free(local);
            rt_hub_config_free(c);
            return NULL;
        }
        g_clear_error(&local);
    }

    c->offline = env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE");
    if (!env_seconds("HF_HUB_ETAG_TIMEOUT", 10, &c->etag_timeout_s, error) ||
        !env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10, &c->download_timeout_s, error)) {
        rt_hub_config_free(c);
        return NULL;
    }
    c->max_retries = 5;
    c->retry_base_s = 1;
    c->retry_max_s = 8;
    curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    c->user_agent =
        g_strdup_printf("robotrain/%s; libcurl/%s", RT_VERSION, cv && cv->version ? cv->version : "unknown");
    return c;
}

rt_hub_config *rt_hub_config_copy(const rt_hub_config *config)
{
    g_return_val_if_fail(config != NULL, NULL);
    rt_hub_config *c = g_new0(rt_hub_config, 1);
    *c = *config;
    c->endpoint = g_strdup(config->endpoint);
    c->token = g_strdup(config->token);
    c->token_path = g_strdup(config->token_path);
    c->hf_home = g_strdup(config->hf_home);
    c->hub_cache = g_strdup(config->hub_cache);
    c->lerobot_home = g_strdup(config->lerobot_home);
    c->user_agent = g_strdup(config->user_agent);
    return c;
}

void rt_hub_config_free(rt_hub_config *config)
{
    if (!config)
        return;
    g_free(config->endpoint);
    if (config->token)
        memset(config->token, 0, strlen(config->token));
    g_free(config->token);
    g_free(config->token_path);
    g_free(config->hf_home);
    g_free(config->hub_cache);
    g_free(config->lerobot_home);
    g_free(config->user_agent);
    g_free(config);
}

char *rt_hub_config_lerobot_cache(const rt_hub_config *config)
{
    return g_build_filename(config->lerobot_home, "hub", NULL);
}

rt_hub *rt_hub_new(const rt_hub_config *config, GError **error)
{
    rt_net_global_init();
    rt_hub_config *copy = config ? rt_hub_config_copy(config) : rt_hub_config_new_from_env(error);
    if (!copy)
        return NULL;
    if (!copy->endpoint ||
        !(g_str_has_prefix(copy->endpoint, "http://") || g_str_has_prefix(copy->endpoint, "https://"))) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "Hub endpoint '%s' is not an http:// or https:// URL (check HF_ENDPOINT)",
                    copy->endpoint ? copy->endpoint : "");
        rt_hub_config_free(copy);
        return NULL;
    }
    if (!copy->user_agent)
        copy->user_agent = g_strdup("robotrain/" RT_VERSION);
    rt_hub *hub = g_new0(rt_hub, 1);
    hub->config = copy;
    hub->curl = curl_easy_init();
    if (!hub->curl) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "libcurl could not start (curl_easy_init failed): out of memory, or its TLS "
                    "library failed to initialise");
        rt_hub_free(hub);
        return NULL;
    }
    return hub;
}

void rt_hub_free(rt_hub *hub)
{
    if (!hub)
        return;
    if (hub->curl)
        curl_easy_cleanup(hub->curl);
    rt_hub_config_free(hub->config);
    g_free(hub);
}

const rt_hub_config *rt_hub_get_config(const rt_hub *hub)
{
    return hub->config;
}

guint rt_hub_request_count(const rt_hub *hub)
{
    return hub->n_requests;
}

void rt_hub_set_progress(rt_hub *hub, rt_hub_progress_func func, void *user_data)
{
    hub->progress = func;
    hub->progress_data = user_data;
}

const char *rt_hub_repo_type_name(rt_hub_repo_type type)
{
    switch (type) {
    case RT_HUB_DATASET:
        return "dataset";
    case RT_HUB_SPACE:
        return "space";
    case RT_HUB_MODEL:
    default:
        return "model";
    }
}

static gboolean name_char(char c)
{
    return g_ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
}

gboolean rt_hub_check_repo_id(const char *repo_id, GError **error)
{
    const char *why = NULL;
    if (!repo_id || !*repo_id) {
        why = "it is empty";
    } else if (strlen(repo_id) > 96) {
        why = "it is longer than 96 characters";
    } else if (strstr(repo_id, "--") || strstr(repo_id, "..")) {
        why = "it contains \"--\" or \"..\"";
    } else {
        char **parts = g_strsplit(repo_id, "/", -1);
        guint n = g_strv_length(parts);
        if (n > 2) {
            why = "it has more than one '/'";
        } else {
            for (guint i = 0; i < n && !why; i++) {
                const char *p = parts[i];
                size_t len = strlen(p);
                if (len == 0)
                    why = "a part around '/' is empty";
                else if (p[0] == '-' || p[0] == '.' || p[len - 1] == '-' || p[len - 1] == '.')
                    why = "a part starts or ends with '-' or '.'";
                for (size_t k = 0; k < len && !why; k++)
                    if (!name_char(p[k]))
                        why = "it has characters other than letters, digits, '-', '_' and '.'";
            }
        }
        g_strfreev(parts);
    }
    if (why) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "'%s' is not a Hub repository id (%s): write it as owner/name, e.g. "
                    "lerobot/pusht",
                    repo_id ? repo_id : "", why);
        return FALSE;
    }
    return TRUE;
}

char *rt_hub_repo_folder_name(rt_hub_repo_type type, const char *repo_id)
{
    char **parts = g_strsplit(repo_id, "/", -1);
    char *joined = g_strjoinv("--", parts);
    g_strfreev(parts);
    char *name = g_strdup_printf("%ss--%s", rt_hub_repo_type_name(type), joined);
    g_free(joined);
    return name;
}

gboolean hub_is_hex(const char *s, size_t n)
{
    if (!s || strlen(s) != n)
        return FALSE;
    for (size_t i = 0; i < n; i++)
        if (!g_ascii_isdigit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return FALSE;
    return TRUE;
}

gboolean rt_hub_is_commit_sha(const char *revision)
{
    return hub_is_hex(revision, 40);
}
