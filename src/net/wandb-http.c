/* One libcurl client per thread for the W&B API: JSON POSTs with the key as HTTP Basic
 * "api:KEY", bounded time and response size, an abort flag checked during transfers, and
 * answers sorted into "fine", "try again later", "the key is wrong" and "give up". */
#include "config.h"

#include <string.h>

#include <curl/curl.h>
#include <json-glib/json-glib.h>

#include "net/net-init.h"
#include "net/wandb-private.h"
#include <robotrain/version.h>

struct wb_http {
    const wb_server *srv;
    const gint *abort_flag;
    CURL *curl;
    struct curl_slist *headers;
    GString *reply;
    gboolean too_big;
    char errbuf[CURL_ERROR_SIZE];
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *user)
{
    wb_http *http = user;
    size_t n = size * nmemb;
    if (http->reply->len + n > WB_MAX_RESPONSE) {
        http->too_big = TRUE;
        return 0;
    }
    g_string_append_len(http->reply, data, (gssize)n);
    return n;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    wb_http *http = user;
    return http->abort_flag && g_atomic_int_get(http->abort_flag) ? 1 : 0;
}

wb_http *wb_http_new(const wb_server *srv, const gint *abort_flag)
{
    rt_net_global_init();
    wb_http *http = g_new0(wb_http, 1);
    http->srv = srv;
    http->abort_flag = abort_flag;
    http->reply = g_string_new(NULL);
    http->curl = curl_easy_init();
    if (!http->curl)
        return http; /* wb_http_post() reports it */

    http->headers = curl_slist_append(http->headers, "Content-Type: application/json");
    http->headers = curl_slist_append(http->headers, "Accept: application/json");
    http->headers = curl_slist_append(http->headers, "Expect:"); /* no 100-continue round trip */
    if (srv->api_key) {
        g_autofree char *user_pass = g_strconcat("api:", srv->api_key, NULL);
        g_autofree char *b64 = g_base64_encode((const guchar *)user_pass, strlen(user_pass));
        g_autofree char *header = g_strconcat("Authorization: Basic ", b64, NULL);
        http->headers = curl_slist_append(http->headers, header);
        memset(user_pass, 0, strlen(user_pass));
        memset(b64, 0, strlen(b64));
        memset(header, 0, strlen(header));
    }
    CURL *c = http->curl;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, http->headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "robotrain/" RT_VERSION);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, http->errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, http);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, http);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)srv->request_timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)MIN(srv->request_timeout_ms, 10000u));
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    return http;
}

void wb_http_free(wb_http *http)
{
    if (!http)
        return;
    if (http->curl)
        curl_easy_cleanup(http->curl);
    for (struct curl_slist *h = http->headers; h; h = h->next)
        memset(h->data, 0, strlen(h->data)); /* the Authorization line */
    curl_slist_free_all(http->headers);
    g_string_free(http->reply, TRUE);
    g_free(http);
}

/* A short, printable account of a failed answer: the server's "errors"[0].message or "error"
 * when the body is JSON, else its first bytes; the key is masked in case the server echoes it. */
static char *describe_body(const wb_http *http)
{
    const char *body = http->reply->str;
    g_autofree char *text = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    if (http->reply->len && json_parser_load_from_data(parser, body, (gssize)http->reply->len, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        JsonObject *o = json_node_get_object(json_parser_get_root(parser));
        JsonArray *errors = wb_json_array(o, "errors");
        if (errors && json_array_get_length(errors) > 0 &&
            JSON_NODE_HOLDS_OBJECT(json_array_get_element(errors, 0)))
            text = g_strdup(wb_json_string(json_array_get_object_element(errors, 0), "message"));
        if (!text)
            text = g_strdup(wb_json_string(o, "error"));
    }
    if (!text)
        text = g_strndup(body, MIN(http->reply->len, 200));
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < ' ')
            *c = ' ';
    g_strstrip(text);
    if (http->srv->api_key && *http->srv->api_key) {
        g_auto(GStrv) parts = g_strsplit(text, http->srv->api_key, -1);
        g_free(text);
        text = g_strjoinv("***", parts);
    }
    return *text ? g_strdup_printf(": %s", text) : g_strdup("");
}

wb_result wb_http_post(wb_http *http, const char *path, const char *body, gsize len, char **reply,
                       GError **error)
{
    g_autofree char *url = g_strconcat(http->srv->base_url, path, NULL);
    if (!http->curl) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot start a transfer to %s: libcurl failed", url);
        return WB_RETRY;
    }
    CURL *c = http->curl;
    g_string_truncate(http->reply, 0);
    http->too_big = FALSE;
    http->errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the request to %s was stopped", url);
        return WB_ABORTED;
    }
    if (http->too_big) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "the answer of %s is larger than %u MiB: is %s a W&B server?", url, WB_MAX_RESPONSE >> 20,
                    http->srv->base_url);
        return WB_FATAL;
    }
    if (rc != CURLE_OK) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot reach W&B at %s: %s", url,
                    http->errbuf[0] ? http->errbuf : curl_easy_strerror(rc));
        return WB_RETRY;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        if (reply)
            *reply = g_strndup(http->reply->str, http->reply->len);
        return WB_OK;
    }
    g_autofree char *why = describe_body(http);
    if (status == 401 || status == 403) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "W&B refused the API key from %s (HTTP %ld from %s%s): set WANDB_API_KEY to a valid key "
                    "(see https://wandb.ai/authorize), or run with --wandb.mode=offline and send the run "
                    "later with 'robotrain wandb sync DIR'",
                    http->srv->key_origin ? http->srv->key_origin : "nowhere (none was given)", status, url,
                    why);
        return WB_AUTH;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "W&B answered HTTP %ld to %s%s", status, url, why);
    return status == 408 || status == 429 || status >= 500 ? WB_RETRY : WB_FATAL;
}
