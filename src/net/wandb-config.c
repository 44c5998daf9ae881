/* W&B settings: the --wandb.* rows, the environment (WANDB_*), ~/.netrc, run ids, the run's
 * config in W&B's form, and the names LeRobot gives tags and artifacts. */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "net/wandb-private.h"

static const char *const mode_choices[] = {"online", "offline", "disabled", NULL};

/* The rows of LeRobot's WandBConfig (lerobot/configs/default.py), keys relative to "wandb". */
static const rt_option wandb_rows[] = {
    {.key = "enable",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Log the run to Weights & Biases (rank 0 only)."},
    {.key = "disable_artifact",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Do not upload checkpoints to W&B as artifacts."},
    {.key = "project",
     .type = RT_OPT_STRING,
     .default_value = "lerobot",
     .flags = RT_OPT_NULLABLE,
     .help = "W&B project of the run; null means WANDB_PROJECT, else lerobot."},
    {.key = "entity",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "W&B entity (user or team) owning the project; null means WANDB_ENTITY, else the API "
             "key's default entity."},
    {.key = "notes",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "Notes shown with the run in W&B."},
    {.key = "run_id",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "W&B run id (letters, digits, '_', '-', '.'); a resumed run continues the run of this id. "
             "The trainer writes it to train_config.json."},
    {.key = "mode",
     .type = RT_OPT_ENUM,
     .default_value = NULL,
     .choices = mode_choices,
     .flags = RT_OPT_NULLABLE,
     .help = "online streams to the server, offline only writes OUTPUT_DIR/wandb (send it later "
             "with robotrain wandb sync), disabled does nothing; null means WANDB_MODE, else online."},
    {.key = "add_tags",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Tag the run with the policy type, seed and dataset."},
};

const rt_option *rt_wandb_options(size_t *n)
{
    if (n)
        *n = G_N_ELEMENTS(wandb_rows);
    return wandb_rows;
}

const char *rt_wandb_mode_name(rt_wandb_mode mode)
{
    switch (mode) {
    case RT_WANDB_MODE_ONLINE:
        return "online";
    case RT_WANDB_MODE_OFFLINE:
        return "offline";
    case RT_WANDB_MODE_DISABLED:
        return "disabled";
    case RT_WANDB_MODE_DEFAULT:
    default:
        return "default";
    }
}

static gboolean mode_from_name(const char *name, rt_wandb_mode *mode)
{
    /* "run" and "dryrun" are the W&B SDK's older names of online and offline. */
    if (g_ascii_strcasecmp(name, "online") == 0 || g_ascii_strcasecmp(name, "run") == 0)
        *mode = RT_WANDB_MODE_ONLINE;
    else if (g_ascii_strcasecmp(name, "offline") == 0 || g_ascii_strcasecmp(name, "dryrun") == 0)
        *mode = RT_WANDB_MODE_OFFLINE;
    else if (g_ascii_strcasecmp(name, "disabled") == 0)
        *mode = RT_WANDB_MODE_DISABLED;
    else
        return FALSE;
    return TRUE;
}

void rt_wandb_settings_init(rt_wandb_settings *s)
{
    g_return_if_fail(s != NULL);
    memset(s, 0, sizeof *s);
    s->enable = TRUE;
    s->mode = RT_WANDB_MODE_DEFAULT;
    s->queue_rows = 256;
    s->send_interval_ms = 15000;
    s->heartbeat_ms = 30000;
    s->retry_min_ms = 2000;
    s->retry_max_ms = 60000;
    s->request_timeout_ms = 60000;
}

void rt_wandb_settings_from_config(rt_wandb_settings *s, const rt_config *cfg, const char *prefix)
{
    g_return_if_fail(s != NULL && cfg != NULL);
    if (!prefix)
        prefix = "wandb";
    char key[128];
#define WB_KEY(name) (g_snprintf(key, sizeof key, "%s.%s", prefix, name), key)
    s->enable = rt_config_get_bool(cfg, WB_KEY("enable"));
    s->disable_artifact = rt_config_get_bool(cfg, WB_KEY("disable_artifact"));
    s->project = rt_config_get_string(cfg, WB_KEY("project"));
    s->entity = rt_config_get_string(cfg, WB_KEY("entity"));
    s->notes = rt_config_get_string(cfg, WB_KEY("notes"));
    s->run_id = rt_config_get_string(cfg, WB_KEY("run_id"));
    const char *mode = rt_config_get_string(cfg, WB_KEY("mode"));
#undef WB_KEY
    s->mode = RT_WANDB_MODE_DEFAULT;
    if (mode)
        mode_from_name(mode, &s->mode); /* the row's choices already checked it */
}

gboolean wb_mode_resolve(const rt_wandb_settings *s, rt_wandb_mode *mode, GError **error)
{
    if (!s->enable) {
        *mode = RT_WANDB_MODE_DISABLED;
        return TRUE;
    }
    if (s->mode != RT_WANDB_MODE_DEFAULT) {
        *mode = s->mode;
        return TRUE;
    }
    const char *env = g_getenv("WANDB_MODE");
    if (env && *env) {
        if (!mode_from_name(env, mode)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "WANDB_MODE is '%s': use online, offline or disabled (or set --wandb.mode)", env);
            return FALSE;
        }
        return TRUE;
    }
    *mode = RT_WANDB_MODE_ONLINE;
    return TRUE;
}

gboolean wb_check_run_id(const char *id, const char *what, GError **error)
{
    size_t len = strlen(id);
    gboolean ok = len > 0 && len <= 64 && id[0] != '.';
    for (size_t i = 0; ok && i < len; i++)
        ok = g_ascii_isalnum(id[i]) || id[i] == '_' || id[i] == '-' || id[i] == '.';
    if (!ok) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s '%s' is not a W&B run id: use 1 to 64 letters, digits, '_', '-' or '.' "
                    "(not starting with '.')",
                    what, id);
        return FALSE;
    }
    return TRUE;
}

char *rt_wandb_new_run_id(void)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    char id[9];
    for (int i = 0; i < 8; i++)
        id[i] = alphabet[g_random_int_range(0, (gint32)(sizeof alphabet - 1))];
    id[8] = '\0';
    return g_strdup(id);
}

/* ---------------------------------------------------------------- ~/.netrc */

/* The next token of a netrc file into tok: words separated by blanks, "quoted words" with
 * backslash escapes, '#' comments to the end of the line. FALSE at the end. */
static gboolean netrc_token(const char **pp, GString *tok, gboolean *line_break)
{
    const char *p = *pp;
    *line_break = FALSE;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            if (*p == '\n')
                *line_break = TRUE;
            p++;
        }
        if (*p != '#')
            break;
        while (*p && *p != '\n')
            p++;
    }
    if (!*p) {
        *pp = p;
        return FALSE;
    }
    g_string_truncate(tok, 0);
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1])
                p++;
            g_string_append_c(tok, *p);
        }
        if (*p == '"')
            p++;
    } else {
        for (; *p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n'; p++) {
            if (*p == '\\' && p[1])
                p++;
            g_string_append_c(tok, *p);
        }
    }
    *pp = p;
    return TRUE;
}

char *rt_wandb_netrc_find(const char *text, const char *host)
{
    g_return_val_if_fail(text != NULL && host != NULL, NULL);
    g_autoptr(GString) tok = g_string_new(NULL);
    const char *p = text;
    gboolean nl;
    int in = 0; /* 0: other entry, 1: host's entry, 2: the default entry */
    char *found = NULL, *fallback = NULL;
    while (!found && netrc_token(&p, tok, &nl)) {
        if (strcmp(tok->str, "machine") == 0) {
            if (!netrc_token(&p, tok, &nl))
                break;
            in = g_ascii_strcasecmp(tok->str, host) == 0 ? 1 : 0;
        } else if (strcmp(tok->str, "default") == 0) {
            in = 2;
        } else if (strcmp(tok->str, "password") == 0) {
            if (!netrc_token(&p, tok, &nl))
                break;
            if (in == 1)
                found = g_strdup(tok->str);
            else if (in == 2 && !fallback)
                fallback = g_strdup(tok->str);
        } else if (strcmp(tok->str, "login") == 0 || strcmp(tok->str, "account") == 0) {
            if (!netrc_token(&p, tok, &nl))
                break;
        } else if (strcmp(tok->str, "macdef") == 0) {
            /* A macro runs to the next empty line. */
            const char *end = strstr(p, "\n\n");
            p = end ? end + 2 : p + strlen(p);
            in = 0;
        }
    }
    if (found) {
        g_free(fallback);
        return found;
    }
    return fallback;
}

/* ---------------------------------------------------------------- the server */

void wb_server_clear(wb_server *srv)
{
    g_free(srv->base_url);
    g_free(srv->host);
    if (srv->api_key) {
        memset(srv->api_key, 0, strlen(srv->api_key));
        g_free(srv->api_key);
    }
    memset(srv, 0, sizeof *srv);
}

static char *netrc_key(const char *host, int port, const char **origin)
{
    const char *env = g_getenv("NETRC");
    g_autofree char *path = env && *env ? g_strdup(env) : g_build_filename(g_get_home_dir(), ".netrc", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    char *key = NULL;
    if (port > 0) {
        g_autofree char *host_port = g_strdup_printf("%s:%d", host, port);
        key = rt_wandb_netrc_find(text, host_port);
    }
    if (!key)
        key = rt_wandb_netrc_find(text, host);
    memset(text, 0, strlen(text));
    *origin = env && *env ? "the $NETRC file" : "~/.netrc";
    return key;
}

gboolean wb_server_resolve(wb_server *srv, const rt_wandb_settings *s, gboolean need_key, GError **error)
{
    memset(srv, 0, sizeof *srv);
    const char *url_origin = "the W&B base URL";
    const char *base = s ? s->base_url : NULL;
    if (!base || !*base) {
        base = g_getenv("WANDB_BASE_URL");
        url_origin = "WANDB_BASE_URL";
    }
    if (!base || !*base)
        base = WB_DEFAULT_BASE_URL;

    g_autofree char *trimmed = g_strdup(base);
    g_strstrip(trimmed);
    size_t len = strlen(trimmed);
    while (len > 0 && trimmed[len - 1] == '/')
        trimmed[--len] = '\0';
    g_autoptr(GUri) uri = g_uri_parse(trimmed, G_URI_FLAGS_NONE, NULL);
    const char *scheme = uri ? g_uri_get_scheme(uri) : NULL;
    const char *host = uri ? g_uri_get_host(uri) : NULL;
    if (!scheme || (g_ascii_strcasecmp(scheme, "http") != 0 && g_ascii_strcasecmp(scheme, "https") != 0) ||
        !host || !*host || g_uri_get_query(uri) || g_uri_get_fragment(uri)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s '%s' is not an http:// or https:// URL of a W&B server (e.g. %s)", url_origin, base,
                    WB_DEFAULT_BASE_URL);
        return FALSE;
    }
    srv->base_url = g_steal_pointer(&trimmed);
    srv->host = g_strdup(host);
    srv->request_timeout_ms = s && s->request_timeout_ms ? s->request_timeout_ms : 60000;
    srv->retry_min_ms = s && s->retry_min_ms ? s->retry_min_ms : 2000;
    srv->retry_max_ms = s && s->retry_max_ms ? s->retry_max_ms : 60000;
    if (srv->retry_max_ms < srv->retry_min_ms)
        srv->retry_max_ms = srv->retry_min_ms;

    if (s && s->api_key && *s->api_key) {
        srv->api_key = g_strdup(s->api_key);
        srv->key_origin = "the settings";
    } else if (g_getenv("WANDB_API_KEY") && *g_getenv("WANDB_API_KEY")) {
        srv->api_key = g_strdup(g_getenv("WANDB_API_KEY"));
        srv->key_origin = "WANDB_API_KEY";
    } else {
        srv->api_key = netrc_key(srv->host, g_uri_get_port(uri), &srv->key_origin);
    }
    if (srv->api_key) {
        g_strstrip(srv->api_key);
        gboolean printable = *srv->api_key != '\0';
        for (const char *c = srv->api_key; *c && printable; c++)
            printable = (unsigned char)*c > ' ' && *c != 0x7f;
        if (!printable) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "the W&B API key from %s is empty or contains blanks or control characters: "
                        "copy it again from https://wandb.ai/authorize",
                        srv->key_origin);
            wb_server_clear(srv);
            return FALSE;
        }
    }
    if (need_key && !srv->api_key) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "no W&B API key for %s: set WANDB_API_KEY (see https://wandb.ai/authorize), or add "
                    "'machine %s login user password KEY' to ~/.netrc, or run with --wandb.mode=offline "
                    "and send the run later with 'robotrain wandb sync'",
                    srv->base_url, srv->host);
        wb_server_clear(srv);
        return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- names and config */

char *rt_wandb_run_url(const char *base_url, const char *entity, const char *project, const char *id)
{
    g_autoptr(GUri) uri = g_uri_parse(base_url, G_URI_FLAGS_NONE, NULL);
    const char *host = uri ? g_uri_get_host(uri) : NULL;
    const char *app = host && g_ascii_strcasecmp(host, "api.wandb.ai") == 0 ? "https://wandb.ai" : base_url;
    g_autofree char *e = g_uri_escape_string(entity, NULL, FALSE);
    g_autofree char *p = g_uri_escape_string(project, NULL, FALSE);
    g_autofree char *r = g_uri_escape_string(id, NULL, FALSE);
    return g_strdup_printf("%s/%s/%s/runs/%s", app, e, p, r);
}

static char *cut_tag(char *tag)
{
    if (g_utf8_validate(tag, -1, NULL)) {
        if (g_utf8_strlen(tag, -1) > 64) {
            char *cut = g_utf8_substring(tag, 0, 64);
            g_free(tag);
            return cut;
        }
    } else if (strlen(tag) > 64) {
        tag[64] = '\0';
    }
    return tag;
}

char **rt_wandb_lerobot_tags(const char *policy_type, gint64 seed, const char *dataset, const char *env_type)
{
    GPtrArray *tags = g_ptr_array_new();
    if (policy_type)
        g_ptr_array_add(tags, cut_tag(g_strdup_printf("policy:%s", policy_type)));
    g_ptr_array_add(tags, cut_tag(g_strdup_printf("seed:%" G_GINT64_FORMAT, seed)));
    if (dataset)
        g_ptr_array_add(tags, cut_tag(g_strdup_printf("dataset:%s", dataset)));
    if (env_type)
        g_ptr_array_add(tags, cut_tag(g_strdup_printf("env:%s", env_type)));
    g_ptr_array_add(tags, NULL);
    return (char **)g_ptr_array_free(tags, FALSE);
}

char *rt_wandb_artifact_name(const char *const *tags, const char *step_dir)
{
    g_return_val_if_fail(step_dir != NULL, NULL);
    GString *name = g_string_new(NULL);
    for (size_t i = 0; tags && tags[i]; i++) {
        g_string_append(name, tags[i]);
        g_string_append_c(name, '-');
    }
    g_string_append(name, step_dir);
    for (char *c = name->str; *c; c++)
        if (*c == ':' || *c == '/')
            *c = '_';
    return g_string_free(name, FALSE);
}

char *rt_wandb_config_to_wandb(const char *json, GError **error)
{
    if (!json || !*json)
        return g_strdup("{}");
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) parse_error = NULL;
    if (!json_parser_load_from_data(parser, json, -1, &parse_error)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "the training config given to W&B is not JSON: %s",
                    parse_error->message);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the training config given to W&B is not a JSON object ({\"key\": value, ...})");
        return NULL;
    }
    JsonObject *config = json_node_get_object(root);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    g_autoptr(GList) members = json_object_get_members(config);
    for (GList *m = members; m; m = m->next) {
        json_builder_set_member_name(b, m->data);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "value");
        json_builder_add_value(b, json_node_copy(json_object_get_member(config, m->data)));
        json_builder_set_member_name(b, "desc");
        json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    g_autoptr(JsonNode) out = json_builder_get_root(b);
    return json_to_string(out, FALSE);
}
