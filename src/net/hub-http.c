/* One HTTP request with libcurl: headers, bodies from memory or a file, answers into memory or
 * appended to a file, timeouts, progress, and the retry loop with exponential back-off. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "net/hub-private.h"

/* Error bodies kept when the body goes to a file (enough for a JSON error). */
#define ERROR_BODY_BYTES (64u << 10)
#define PROGRESS_INTERVAL_US (100 * 1000)
#define RETRY_AFTER_CAP_S 300.0

void hub_http_request_init(hub_http_request *request, const char *method, const char *url)
{
    memset(request, 0, sizeof *request);
    request->method = method;
    request->url = url;
    request->upload_fd = -1;
    request->sink_fd = -1;
}

void hub_http_response_init(hub_http_response *response)
{
    memset(response, 0, sizeof *response);
    response->headers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    response->body = g_byte_array_new();
}

void hub_http_response_clear(hub_http_response *response)
{
    if (response->headers)
        g_hash_table_unref(response->headers);
    if (response->body)
        g_byte_array_unref(response->body);
    g_free(response->effective_url);
    memset(response, 0, sizeof *response);
}

const char *hub_http_header(const hub_http_response *response, const char *name)
{
    return response->headers ? g_hash_table_lookup(response->headers, name) : NULL;
}

gboolean hub_http_status_retryable(long status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

/* State of one transfer, shared by the callbacks. */
typedef struct transfer {
    rt_hub *hub;
    const hub_http_request *request;
    hub_http_response *response;
    int status_known; /* 0: not yet; 1: body goes to sink; 2: body goes to memory */
    gsize upload_pos;
    GError *write_error;
    gboolean too_big;
    gboolean cancelled;
    gint64 last_report_us;
} transfer;

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    transfer *t = user;
    size_t len = size * n;
    char *line = g_strndup(data, len);
    g_strchomp(line);
    if (g_str_has_prefix(line, "HTTP/")) {
        /* A new response (after a redirect or a 100 Continue): forget the previous headers. */
        g_hash_table_remove_all(t->response->headers);
        t->status_known = 0;
    } else {
        char *colon = strchr(line, ':');
        if (colon && colon != line) {
            *colon = '\0';
            char *name = g_ascii_strdown(g_strstrip(line), -1);
            char *value = g_strdup(g_strstrip(colon + 1));
            const char *old = g_hash_table_lookup(t->response->headers, name);
            if (old) {
                char *joined = g_strconcat(old, ", ", value, NULL);
                g_free(value);
                value = joined;
            }
            g_hash_table_replace(t->response->headers, name, value);
        }
    }
    g_free(line);
    return len;
}

static gboolean write_all(int fd, const char *data, size_t len, GError **error)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write the downloaded data: %s", g_strerror(e));
            return FALSE;
        }
        data += w;
        len -= (size_t)w;
    }
    return TRUE;
}

/* The first body bytes of a 2xx answer going to the sink: checks how it fits a Range. */
static gboolean start_sink(transfer *t, long status)
{
    const hub_http_request *r = t->request;
    if (r->range_from == 0)
        return TRUE;
    if (status == 200) {
        /* The server ignored the Range: start over (huggingface_hub does the same). */
        if (ftruncate(r->sink_fd, 0) != 0 || lseek(r->sink_fd, 0, SEEK_SET) != 0) {
            int e = errno;
            g_set_error(&t->write_error, RT_ERROR, RT_ERROR_IO, "cannot truncate the partial download: %s",
                        g_strerror(e));
            return FALSE;
        }
        if (r->sink_sum) {
            g_checksum_reset(r->sink_sum);
            if (r->sum_prefix_len)
                g_checksum_update(r->sink_sum, r->sum_prefix, (gssize)r->sum_prefix_len);
        }
        t->response->restarted = TRUE;
        return TRUE;
    }
    const char *range = hub_http_header(t->response, "content-range");
    guint64 start = 0;
    if (range && g_str_has_prefix(range, "bytes "))
        start = g_ascii_strtoull(range + 6, NULL, 10);
    if (status == 206 && (!range || start != r->range_from)) {
        g_set_error(&t->write_error, RT_ERROR, RT_ERROR_NETWORK,
                    "%s %s: asked for the bytes from %" G_GUINT64_FORMAT
                    " on, the server sent a range starting at %s",
                    r->method, r->url, r->range_from, range ? range : "(no Content-Range)");
        return FALSE;
    }
    return TRUE;
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    transfer *t = user;
    size_t len = size * n;
    if (!t->status_known) {
        long status = 0;
        curl_easy_getinfo(t->hub->curl, CURLINFO_RESPONSE_CODE, &status);
        t->status_known = (t->request->sink_fd >= 0 && status >= 200 && status < 300) ? 1 : 2;
        if (t->status_known == 1 && !start_sink(t, status))
            return 0;
    }
    if (t->status_known == 1) {
        if (!write_all(t->request->sink_fd, data, len, &t->write_error))
            return 0;
        if (t->request->sink_sum)
            g_checksum_update(t->request->sink_sum, (const guchar *)data, len);
        t->response->sunk += len;
        return len;
    }
    gsize cap = t->request->sink_fd >= 0 ? ERROR_BODY_BYTES : HUB_MAX_JSON_BYTES;
    if (t->response->body->len + len > cap) {
        if (t->request->sink_fd >= 0)
            return len; /* an error body: keep its start, drop the rest */
        t->too_big = TRUE;
        return 0;
    }
    g_byte_array_append(t->response->body, (const guint8 *)data, (guint)len);
    return len;
}

static size_t on_read(char *buffer, size_t size, size_t n, void *user)
{
    transfer *t = user;
    const hub_http_request *r = t->request;
    size_t want = size * n;
    if (r->upload_fd >= 0) {
        goffset left = r->upload_len - (goffset)t->upload_pos;
        if (left <= 0)
            return 0;
        if ((goffset)want > left)
            want = (size_t)left;
        for (;;) {
            ssize_t got = pread(r->upload_fd, buffer, want, r->upload_offset + (goffset)t->upload_pos);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                int e = got < 0 ? errno : EIO;
                g_clear_error(&t->write_error);
                g_set_error(&t->write_error, RT_ERROR, RT_ERROR_IO, "cannot read the file being uploaded: %s",
                            got < 0 ? g_strerror(e) : "it is shorter than when it was hashed");
                return CURL_READFUNC_ABORT;
            }
            t->upload_pos += (gsize)got;
            return (size_t)got;
        }
    }
    size_t left = r->body_len - t->upload_pos;
    if (want > left)
        want = left;
    if (want)
        memcpy(buffer, (const char *)r->body + t->upload_pos, want);
    t->upload_pos += want;
    return want;
}

static gboolean report(transfer *t, guint64 now_bytes, gboolean force)
{
    rt_hub *hub = t->hub;
    if (!hub->progress || !t->request->progress_path)
        return TRUE;
    gint64 now = g_get_monotonic_time();
    if (!force && now - t->last_report_us < PROGRESS_INTERVAL_US)
        return TRUE;
    t->last_report_us = now;
    rt_hub_progress p = {
        .repo_id = hub->progress_repo,
        .path = t->request->progress_path,
        .upload = t->request->upload_fd >= 0 || t->request->body != NULL,
        .done = t->request->progress_base + now_bytes,
        .total = t->request->progress_total,
        .file_index = hub->progress_index ? hub->progress_index : 1,
        .n_files = hub->progress_count ? hub->progress_count : 1,
    };
    if (!hub->progress(&p, hub->progress_data)) {
        t->cancelled = TRUE;
        return FALSE;
    }
    return TRUE;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    transfer *t = user;
    gboolean up = t->request->upload_fd >= 0 || t->request->body != NULL;
    return report(t, (guint64)(up ? ulnow : dlnow), FALSE) ? 0 : 1;
}

static gboolean curl_transient(CURLcode code)
{
    switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return TRUE;
    default:
        return FALSE;
    }
}

static void set_protocols(CURL *curl)
{
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

gboolean hub_http_once(rt_hub *hub, const hub_http_request *request, hub_http_response *response,
                       gboolean *transient, GError **error)
{
    const rt_hub_config *cfg = hub->config;
    CURL *curl = hub->curl;
    transfer t = {.hub = hub, .request = request, .response = response};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    char *auth = NULL;

    *transient = FALSE;
    if (!response->headers)
        hub_http_response_init(response);
    g_hash_table_remove_all(response->headers);
    g_byte_array_set_size(response->body, 0);
    response->status = 0;
    response->sunk = 0;
    response->restarted = FALSE;
    g_clear_pointer(&response->effective_url, g_free);

    curl_easy_reset(curl);
    set_protocols(curl);
    curl_easy_setopt(curl, CURLOPT_URL, request->url);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, cfg->user_agent);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request->follow ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    double connect_s = request->metadata ? cfg->etag_timeout_s : cfg->download_timeout_s;
    if (connect_s > 0)
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ceil(connect_s * 1000.0));
    if (request->metadata && cfg->etag_timeout_s > 0) {
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)ceil(cfg->etag_timeout_s * 1000.0));
    } else if (cfg->download_timeout_s > 0) {
        /* httpx's read timeout: give up when no byte came for that long. */
        curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)ceil(cfg->download_timeout_s));
    }

    if (request->auth && cfg->token) {
        auth = g_strconcat("Authorization: Bearer ", cfg->token, NULL);
        headers = curl_slist_append(headers, auth);
    }
    if (request->lfs_json) {
        headers = curl_slist_append(headers, "Accept: application/vnd.git-lfs+json");
        headers = curl_slist_append(headers, "Content-Type: application/vnd.git-lfs+json");
    } else if (request->content_type) {
        char *ct = g_strconcat("Content-Type: ", request->content_type, NULL);
        headers = curl_slist_append(headers, ct);
        g_free(ct);
    }
    /* No 100-continue round trip (pre-signed storage URLs do not need it). */
    headers = curl_slist_append(headers, "Expect:");
    for (const char *const *h = request->headers; h && *h; h++)
        headers = curl_slist_append(headers, *h);
    if (request->range_from > 0) {
        char range[64];
        g_snprintf(range, sizeof range, "Range: bytes=%" G_GUINT64_FORMAT "-", request->range_from);
        headers = curl_slist_append(headers, range);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

    gboolean has_body = request->upload_fd >= 0 || request->body != NULL;
    goffset body_len = request->upload_fd >= 0 ? request->upload_len : (goffset)request->body_len;
    if (strcmp(request->method, "HEAD") == 0) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (strcmp(request->method, "PUT") == 0 || (strcmp(request->method, "POST") == 0 && has_body)) {
        if (strcmp(request->method, "PUT") == 0) {
            curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        } else {
            curl_easy_setopt(curl, CURLOPT_POST, 1L);
            curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
        curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    } else if (strcmp(request->method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    } else if (strcmp(request->method, "GET") != 0) {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request->method);
    }
    if (hub->progress && request->progress_path) {
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    }

    hub->n_requests++;
    CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
    char *effective = NULL;
    if (curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective)
        response->effective_url = g_strdup(effective);
    curl_slist_free_all(headers);
    if (auth) {
        memset(auth, 0, strlen(auth));
        g_free(auth);
    }

    if (code == CURLE_OK && !t.cancelled) {
        report(&t, has_body ? (guint64)body_len : response->sunk, TRUE);
        if (t.cancelled)
            code = CURLE_ABORTED_BY_CALLBACK;
    }
    if (code == CURLE_OK)
        return TRUE;

    if (t.write_error) {
        g_propagate_error(error, t.write_error);
    } else if (t.cancelled || code == CURLE_ABORTED_BY_CALLBACK) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "%s %s: cancelled", request->method, request->url);
    } else if (t.too_big) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "%s %s: the answer is larger than %u MiB, more than a Hub API answer can be",
                    request->method, request->url, HUB_MAX_JSON_BYTES >> 20);
    } else {
        *transient = curl_transient(code);
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "%s %s: %s%s%s%s", request->method, request->url,
                    curl_easy_strerror(code), errbuf[0] ? " (" : "", errbuf, errbuf[0] ? ")" : "");
    }
    return FALSE;
}

void hub_http_backoff(rt_hub *hub, int attempt, const hub_http_response *response)
{
    const rt_hub_config *cfg = hub->config;
    double wait = cfg->retry_base_s * pow(2.0, attempt > 1 ? attempt - 1 : 0);
    if (wait > cfg->retry_max_s)
        wait = cfg->retry_max_s;
    const char *after = response ? hub_http_header(response, "retry-after") : NULL;
    if (after && *after) {
        /* Delay-seconds only, as huggingface_hub (an HTTP date falls back to the back-off). */
        char *end = NULL;
        guint64 s = g_ascii_strtoull(after, &end, 10);
        if (end && *end == '\0' && g_ascii_isdigit(after[0]))
            wait = MIN((double)s, RETRY_AFTER_CAP_S);
    }
    if (wait > 0)
        g_usleep((gulong)(wait * G_USEC_PER_SEC));
}

gboolean hub_http_perform(rt_hub *hub, const hub_http_request *request, hub_http_response *response,
                          int max_retries, int *attempts, GError **error)
{
    g_return_val_if_fail(request->sink_fd < 0, FALSE);
    for (int attempt = 1;; attempt++) {
        GError *local = NULL;
        gboolean transient = FALSE;
        if (attempts)
            *attempts = attempt;
        gboolean answered = hub_http_once(hub, request, response, &transient, &local);
        if (!answered) {
            if (!transient || attempt > max_retries) {
                g_propagate_error(error, local);
                return FALSE;
            }
            g_debug("%s; attempt %d of %d", local->message, attempt, max_retries + 1);
            g_clear_error(&local);
            hub_http_backoff(hub, attempt, NULL);
            continue;
        }
        if (!hub_http_status_retryable(response->status) || attempt > max_retries)
            return TRUE;
        g_debug("%s %s: HTTP %ld; attempt %d of %d", request->method, request->url, response->status, attempt,
                max_retries + 1);
        hub_http_backoff(hub, attempt, response);
    }
}
