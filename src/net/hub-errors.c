/* Messages for what can go wrong talking to the Hub: each names the URL and the repository,
 * revision or file concerned, and says what to do. The token never appears. */
#include "config.h"

#include <string.h>

#include "net/hub-private.h"

char *hub_describe_repo(rt_hub_repo_type type, const char *repo_id)
{
    return g_strdup_printf("%s repository '%s'", rt_hub_repo_type_name(type), repo_id ? repo_id : "?");
}

char *hub_repo_url(const rt_hub *hub, rt_hub_repo_type type, const char *repo_id)
{
    return g_strdup_printf("%s/%s%s", hub->config->endpoint, hub_url_prefix(type), repo_id);
}

/* The start of a body, printable, for messages (transfer full), or NULL when empty. */
static char *body_excerpt(const hub_http_response *r)
{
    if (!r->body || r->body->len == 0)
        return NULL;
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < r->body->len && s->len < 200; i++) {
        guchar c = r->body->data[i];
        g_string_append_c(s, (c >= 0x20 && c < 0x7f) ? (char)c : ' ');
    }
    if (r->body->len > 200)
        g_string_append(s, "...");
    g_strstrip(s->str);
    if (!*s->str) {
        g_string_free(s, TRUE);
        return NULL;
    }
    return g_string_free(s, FALSE);
}

static const char *hint_local_copy(rt_hub_repo_type type)
{
    return type == RT_HUB_DATASET ? ", or point --dataset.root at a local copy of the dataset"
                                  : ", or give the path of a local copy instead of the Hub id";
}

void hub_status_error(GError **error, const rt_hub *hub, const hub_http_response *r, const char *method,
                      const char *url, const hub_target *t, int attempts)
{
    const char *code = hub_http_header(r, "x-error-code");
    const char *xmsg = hub_http_header(r, "x-error-message");
    const char *repo_id = t && t->repo_id ? t->repo_id : "?";
    rt_hub_repo_type type = t ? t->type : RT_HUB_MODEL;
    const char *revision = t && t->revision ? t->revision : "main";
    char *what = hub_describe_repo(type, repo_id);
    char *page = hub_repo_url(hub, type, repo_id);
    char *extra = xmsg ? g_strdup_printf(" (the Hub says: %s)", xmsg) : g_strdup("");
    long s = r->status;
    int ecode = s == 404 ? RT_ERROR_NOT_FOUND : RT_ERROR_NETWORK;
    gboolean gated = code && strcmp(code, "GatedRepo") == 0;

    if (s == 401 && xmsg && strstr(xmsg, "Invalid credentials")) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 401 Unauthorized: the Hub refused the token (from HF_TOKEN or %s) as "
                    "invalid or expired%s; create a new one at "
                    "https://huggingface.co/settings/tokens and set HF_TOKEN",
                    method, url, hub->config->token_path, extra);
    } else if ((s == 401 || s == 403) && gated) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: %ld: %s is gated%s: accept its terms at %s with your account, and set "
                    "HF_TOKEN to a token of that account",
                    method, url, s, what, extra, page);
    } else if (s == 401) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 401 Unauthorized: %s does not exist, or it is private or gated and "
                    "%s%s. Check the spelling of '%s'; for a private or gated repository set "
                    "HF_TOKEN to a token that can read it (or log in with `hf auth login`) and "
                    "accept its terms at %s",
                    method, url, what,
                    hub->config->token ? "the token sent cannot read it" : "no token was sent", extra,
                    repo_id, page);
    } else if (s == 403) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 403 Forbidden%s: the token (HF_TOKEN) is not allowed to do this on "
                    "%s; use a token with %s access to it",
                    method, url, extra, what,
                    strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ? "read" : "write");
    } else if (s == 404 && code && strcmp(code, "RevisionNotFound") == 0) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 404: revision '%s' does not exist in %s%s (a misspelled branch, tag or "
                    "commit?)",
                    method, url, revision, what, extra);
    } else if (s == 404 && code && strcmp(code, "EntryNotFound") == 0) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 404: file '%s' does not exist in %s at revision '%s'%s (a misspelled "
                    "path?)",
                    method, url, t && t->path ? t->path : "?", what, revision, extra);
    } else if (s == 404 && code && strcmp(code, "RepoNotFound") == 0) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 404: %s does not exist%s (a misspelled repository id? ids are "
                    "owner/name%s)",
                    method, url, what, extra, type == RT_HUB_DATASET ? ", e.g. lerobot/pusht" : "");
    } else if (s == 404) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: 404 Not Found%s: check the repository id '%s', the revision '%s'%s%s", method,
                    url, extra, repo_id, revision, t && t->path ? " and the file " : "",
                    t && t->path ? t->path : "");
    } else if (hub_http_status_retryable(s)) {
        g_set_error(error, RT_ERROR, ecode,
                    "%s %s: HTTP %ld%s after %d attempt%s: the Hub is unavailable or overloaded; "
                    "try again later",
                    method, url, s, extra, attempts, attempts == 1 ? "" : "s");
    } else {
        char *body = xmsg ? NULL : body_excerpt(r);
        g_set_error(error, RT_ERROR, ecode, "%s %s: HTTP %ld%s%s%s (about %s)", method, url, s, extra,
                    body ? ": " : "", body ? body : "", what);
        g_free(body);
    }
    g_free(extra);
    g_free(page);
    g_free(what);
}

void hub_transport_error(GError **error, GError *cause, const rt_hub *hub, const hub_target *t, int attempts)
{
    if (!cause)
        return;
    if (cause->code != RT_ERROR_NETWORK || strstr(cause->message, ": cancelled")) {
        g_propagate_error(error, cause);
        return;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                "cannot reach the Hub at %s: %s (%d attempt%s). Check the network connection, "
                "the proxy (HTTPS_PROXY) or HF_ENDPOINT; what was downloaded before stays usable "
                "with HF_HUB_OFFLINE=1",
                hub->config->endpoint, cause->message, attempts, attempts == 1 ? "" : "s");
    g_error_free(cause);
}

void hub_offline_error(GError **error, const rt_hub *hub, const hub_target *t, const char *cache_folder,
                       const char *why, guint n_more)
{
    char *what = hub_describe_repo(t->type, t->repo_id);
    const char *revision = t->revision ? t->revision : "main";
    if (t->path) {
        char *more =
            n_more ? g_strdup_printf(" (and %u more file%s)", n_more, n_more > 1 ? "s" : "") : g_strdup("");
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "'%s'%s of %s at revision '%s' %s not in the cache %s and %s: run once with "
                    "network access (HF_HUB_OFFLINE unset) to download %s%s",
                    t->path, more, what, revision, n_more ? "are" : "is", cache_folder, why,
                    n_more ? "them" : "it", hint_local_copy(t->type));
        g_free(more);
    } else {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "revision '%s' of %s is not in the cache %s and %s: run once with network "
                    "access (HF_HUB_OFFLINE unset) to download it%s",
                    revision, what, cache_folder, why, hint_local_copy(t->type));
    }
    g_free(what);
}
