/* The rendezvous store's client: one blocking TCP connection, every read and write bounded by
 * a deadline (poll before each system call), requests serialised by a mutex. A failed or
 * timed-out exchange leaves the stream in an unknown state, so the client then refuses further
 * calls with the first failure's message instead of misreading a late reply. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gio/gio.h>

#include <robotrain/error.h>
#include <robotrain/store.h>

#include "dist/store-protocol.h"

/* How long a reply may take beyond the server-side wait it answers. */
#define REPLY_GRACE_MS 5000u

struct rt_store {
    int fd;
    char *address; /* "host:port" */
    unsigned timeout_ms;
    GMutex lock;
    char *broken; /* why the connection is unusable, or NULL */
    rt_store_server *server;
};

static double seconds(unsigned ms)
{
    return ms / 1000.0;
}

/* Milliseconds left until deadline (monotonic microseconds), at least 0. */
static int ms_left(gint64 deadline)
{
    gint64 left = deadline - g_get_monotonic_time();
    if (left <= 0)
        return 0;
    return (int)MIN((left + 999) / 1000, G_MAXINT);
}

/* ---------------------------------------------------------------- connecting */

/* One attempt: a non-blocking connect to each address of host:port in turn, within deadline.
 * Returns the connected socket, or -1 with *err_text (transfer full) and *retry (whether the
 * failure may pass: refused, unreachable, timed out). */
static int try_connect(const char *host, uint16_t port, gint64 deadline, char **err_text, gboolean *retry)
{
    struct addrinfo hints = { 0 }, *list = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    g_snprintf(service, sizeof service, "%u", port);
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0) {
        *err_text = g_strdup_printf("cannot resolve '%s': %s", host, gai_strerror(rc));
        *retry = rc == EAI_AGAIN;
        return -1;
    }
    int fd = -1;
    *retry = TRUE;
    for (struct addrinfo *a = list; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) {
            g_free(*err_text);
            *err_text = g_strdup_printf("socket: %s", g_strerror(errno));
            continue;
        }
        int err = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            err = errno;
            if (err == EINPROGRESS) {
                struct pollfd p = { fd, POLLOUT, 0 };
                int n;
                do
                    n = poll(&p, 1, ms_left(deadline));
                while (n < 0 && errno == EINTR);
                socklen_t len = sizeof err;
                if (n == 0)
                    err = ETIMEDOUT;
                else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                    err = errno;
            }
        }
        if (err) {
            g_free(*err_text);
            *err_text = g_strdup(g_strerror(err));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(list);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    }
    return fd;
}

/* ---------------------------------------------------------------- framed I/O */

/* Sends all of data before deadline. FALSE with *why (a static string or errno text). */
static gboolean send_all(int fd, const uint8_t *data, size_t size, gint64 deadline, const char **why)
{
    while (size) {
        struct pollfd p = { fd, POLLOUT, 0 };
        int n = poll(&p, 1, ms_left(deadline));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *why = n == 0 ? "timed out sending" : g_strerror(errno);
            return FALSE;
        }
        ssize_t put = send(fd, data, size, MSG_NOSIGNAL);
        if (put < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            *why = g_strerror(errno);
            return FALSE;
        }
        data += put;
        size -= (size_t)put;
    }
    return TRUE;
}

/* Fills data with exactly size bytes before deadline. *timed_out tells a timeout apart. */
static gboolean recv_all(int fd, uint8_t *data, size_t size, gint64 deadline, const char **why,
                         gboolean *timed_out)
{
    while (size) {
        struct pollfd p = { fd, POLLIN, 0 };
        int n = poll(&p, 1, ms_left(deadline));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            *timed_out = TRUE;
            *why = "no reply";
            return FALSE;
        }
        if (n < 0) {
            *why = g_strerror(errno);
            return FALSE;
        }
        ssize_t got = recv(fd, data, size, 0);
        if (got == 0) {
            *why = "the server closed the connection (has rank 0 or the launcher exited?)";
            return FALSE;
        }
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            *why = g_strerror(errno);
            return FALSE;
        }
        data += got;
        size -= (size_t)got;
    }
    return TRUE;
}

/* Marks the connection unusable with the message of error. */
static void mark_broken(rt_store *store, GError *error)
{
    if (!store->broken)
        store->broken = g_strdup(error->message);
}

/* Sends the request frame (finished here; transfer full) and receives the reply payload within
 * limit_ms. what describes the call for messages ("get of key 'x'").
 * Returns (transfer full) the payload to free with g_byte_array_unref(), or NULL with error. */
static GByteArray *exchange(rt_store *store, GByteArray *request, gint64 limit_ms, const char *what,
                            GError **error)
{
    if (store->broken) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "rendezvous store at %s: %s: not sent, the connection failed earlier: %s", store->address, what,
                    store->broken);
        g_byte_array_unref(request);
        return NULL;
    }
    rt_wire_finish(request);
    gint64 deadline = g_get_monotonic_time() + limit_ms * 1000;
    const char *why = NULL;
    gboolean timed_out = FALSE;
    GByteArray *reply = NULL;
    uint8_t head[4];
    if (send_all(store->fd, request->data, request->len, deadline, &why) &&
        recv_all(store->fd, head, 4, deadline, &why, &timed_out)) {
        uint32_t n = rt_wire_get_le32(head);
        if (n == 0 || n > RT_WIRE_MAX_FRAME) {
            why = "the server sent a malformed reply (is something else listening on that port?)";
        } else {
            reply = g_byte_array_sized_new(n);
            g_byte_array_set_size(reply, n);
            if (!recv_all(store->fd, reply->data, n, deadline, &why, &timed_out)) {
                g_byte_array_unref(reply);
                reply = NULL;
            }
        }
    }
    g_byte_array_unref(request);
    if (reply)
        return reply;
    if (timed_out)
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "rendezvous store at %s: %s: no reply within %.1f s; the server is stuck or the network "
                    "is down",
                    store->address, what, limit_ms / 1000.0);
    else
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store at %s: %s: connection lost: %s",
                    store->address, what, why);
    mark_broken(store, *error);
    return NULL;
}

/* Reads the status byte of a reply; an ERROR reply becomes error. RT_WIRE_ERROR is returned
 * for a malformed reply too. */
static uint8_t reply_status(rt_store *store, rt_wire_reader *r, const char *what, GError **error)
{
    uint8_t status = rt_wire_u8(r);
    if (status == RT_WIRE_ERROR) {
        const uint8_t *text = NULL;
        size_t n = 0;
        rt_wire_bytes(r, RT_WIRE_MAX_FRAME, &text, &n);
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "rendezvous store at %s: %s: %.*s", store->address,
                    what, (int)n, text ? (const char *)text : "");
    } else if (r->bad || status > RT_WIRE_ERROR) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store at %s: %s: malformed reply",
                    store->address, what);
        mark_broken(store, *error);
        status = RT_WIRE_ERROR;
    }
    return status;
}

/* ---------------------------------------------------------------- life cycle */

/* The limit of a reply to a request that waits up to wait_ms on the server. */
static gint64 reply_limit(unsigned wait_ms)
{
    return (gint64)wait_ms + REPLY_GRACE_MS;
}

/* The hello's reply must come within what is left of the connection timeout (limit_ms). */
static gboolean hello(rt_store *store, const char *run_id, gint64 limit_ms, GError **error)
{
    GByteArray *request = rt_wire_begin(RT_WIRE_HELLO);
    rt_wire_put_u32(request, RT_WIRE_MAGIC);
    rt_wire_put_u32(request, RT_WIRE_VERSION);
    rt_wire_put_str(request, run_id);
    GByteArray *reply = exchange(store, request, limit_ms, "hello", error);
    if (!reply)
        return FALSE;
    rt_wire_reader r;
    rt_wire_reader_init(&r, reply->data, reply->len);
    GError *refused = NULL;
    uint8_t status = reply_status(store, &r, "hello", &refused);
    g_byte_array_unref(reply);
    if (status == RT_WIRE_OK)
        return TRUE;
    if (refused && strstr(refused->message, "belongs to run"))
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "%s; a process of an earlier run may still hold the port: stop it, or choose another "
                    "MASTER_PORT",
                    refused->message);
    else if (refused)
        g_set_error_literal(error, RT_ERROR, RT_ERROR_NETWORK, refused->message);
    g_clear_error(&refused);
    return FALSE;
}

rt_store *rt_store_connect(const char *host, uint16_t port, const char *run_id, unsigned timeout_ms,
                           GError **error)
{
    g_return_val_if_fail(host != NULL, NULL);
    if (timeout_ms == 0)
        timeout_ms = RT_STORE_DEFAULT_TIMEOUT_MS;
    if (!run_id)
        run_id = "default";
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    gulong backoff_us = 10000;
    char *err_text = NULL;
    int attempts = 0;
    int fd = -1;
    for (;;) {
        gboolean retry = FALSE;
        attempts++;
        fd = try_connect(host, port, deadline, &err_text, &retry);
        if (fd >= 0 || !retry || ms_left(deadline) == 0)
            break;
        gint64 left_us = deadline - g_get_monotonic_time();
        g_usleep(MIN((gint64)backoff_us, MAX(left_us, 0)));
        backoff_us = MIN(backoff_us * 2, 1000000ul);
    }
    if (fd < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot reach the rendezvous store at %s:%u within %.1f s (%d attempts; last: %s): check "
                    "that rank 0 (or robotrain launch) runs and that MASTER_ADDR and MASTER_PORT point to it",
                    host, port, seconds(timeout_ms), attempts, err_text ? err_text : "no address");
        g_free(err_text);
        return NULL;
    }
    g_free(err_text);
    rt_store *store = g_new0(rt_store, 1);
    store->fd = fd;
    store->address = g_strdup_printf(strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
    store->timeout_ms = timeout_ms;
    g_mutex_init(&store->lock);
    /* At least a moment for the reply, even when connecting took the whole timeout. */
    if (!hello(store, run_id, MAX(ms_left(deadline), 500), error)) {
        rt_store_free(store);
        return NULL;
    }
    return store;
}

/* Whether host names this machine's loopback interface. */
static gboolean is_loopback(const char *host)
{
    if (!g_ascii_strcasecmp(host, "localhost"))
        return TRUE;
    GInetAddress *addr = g_inet_address_new_from_string(host);
    gboolean loopback = addr && g_inet_address_get_is_loopback(addr);
    g_clear_object(&addr);
    return loopback;
}

rt_store *rt_store_open(const rt_world *world, unsigned timeout_ms, GError **error)
{
    g_return_val_if_fail(world != NULL, NULL);
    rt_store_server *server = NULL;
    const char *host = world->master_addr;
    uint16_t port = world->store_port;
    if (world->world_size == 1) {
        server = rt_store_server_new("127.0.0.1", 0, world->run_id, error);
        host = "127.0.0.1";
    } else if (world->rank == 0 && !world->store_hosted) {
        gboolean loopback = is_loopback(world->master_addr);
        server = rt_store_server_new(loopback ? world->master_addr : NULL, port, world->run_id, error);
        if (server && !loopback)
            host = "localhost";
    } else {
        return rt_store_connect(host, port, world->run_id, timeout_ms, error);
    }
    if (!server) {
        g_prefix_error(error, "rank %d: ", world->rank);
        return NULL;
    }
    rt_store *store = rt_store_connect(host, rt_store_server_get_port(server), world->run_id, timeout_ms, error);
    if (!store) {
        rt_store_server_free(server);
        return NULL;
    }
    store->server = server;
    return store;
}

rt_store_server *rt_store_get_server(const rt_store *store)
{
    g_return_val_if_fail(store != NULL, NULL);
    return store->server;
}

const char *rt_store_get_address(const rt_store *store)
{
    g_return_val_if_fail(store != NULL, NULL);
    return store->address;
}

unsigned rt_store_get_timeout(const rt_store *store)
{
    g_return_val_if_fail(store != NULL, 0);
    return store->timeout_ms;
}

void rt_store_free(rt_store *store)
{
    if (store == NULL)
        return;
    if (store->fd >= 0)
        close(store->fd);
    rt_store_server_free(store->server);
    g_mutex_clear(&store->lock);
    g_free(store->address);
    g_free(store->broken);
    g_free(store);
}

/* ---------------------------------------------------------------- requests */

static gboolean check_key(const rt_store *store, const char *key, GError **error)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > RT_STORE_MAX_KEY) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rendezvous store at %s: a key must have 1 to %u bytes, not %zu%s%.40s%s", store->address,
                    RT_STORE_MAX_KEY, n, n ? " ('" : "", n ? key : "", n ? "...')" : "");
        return FALSE;
    }
    return TRUE;
}

static unsigned resolve_timeout(const rt_store *store, unsigned timeout_ms)
{
    return timeout_ms == RT_STORE_DEFAULT_TIMEOUT ? store->timeout_ms : timeout_ms;
}

gboolean rt_store_set(rt_store *store, const char *key, const void *value, size_t size, GError **error)
{
    g_return_val_if_fail(store != NULL, FALSE);
    g_return_val_if_fail(value != NULL || size == 0, FALSE);
    if (!check_key(store, key, error))
        return FALSE;
    if (size > RT_STORE_MAX_VALUE) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rendezvous store at %s: the value of key '%s' has %zu bytes, more than the %u bytes a "
                    "value may hold",
                    store->address, key, size, RT_STORE_MAX_VALUE);
        return FALSE;
    }
    char *what = g_strdup_printf("set of key '%s'", key);
    GByteArray *request = rt_wire_begin(RT_WIRE_SET);
    rt_wire_put_str(request, key);
    rt_wire_put_bytes(request, value, size);
    g_mutex_lock(&store->lock);
    GByteArray *reply = exchange(store, request, reply_limit(0), what, error);
    gboolean ok = FALSE;
    if (reply) {
        rt_wire_reader r;
        rt_wire_reader_init(&r, reply->data, reply->len);
        ok = reply_status(store, &r, what, error) == RT_WIRE_OK;
        g_byte_array_unref(reply);
    }
    g_mutex_unlock(&store->lock);
    g_free(what);
    return ok;
}

GBytes *rt_store_get(rt_store *store, const char *key, unsigned timeout_ms, GError **error)
{
    g_return_val_if_fail(store != NULL, NULL);
    if (!check_key(store, key, error))
        return NULL;
    timeout_ms = resolve_timeout(store, timeout_ms);
    char *what = g_strdup_printf("get of key '%s'", key);
    GByteArray *request = rt_wire_begin(RT_WIRE_GET);
    rt_wire_put_str(request, key);
    rt_wire_put_u32(request, timeout_ms);
    g_mutex_lock(&store->lock);
    GByteArray *reply = exchange(store, request, reply_limit(timeout_ms), what, error);
    GBytes *value = NULL;
    if (reply) {
        rt_wire_reader r;
        rt_wire_reader_init(&r, reply->data, reply->len);
        uint8_t status = reply_status(store, &r, what, error);
        if (status == RT_WIRE_OK) {
            const uint8_t *data = NULL;
            size_t n = 0;
            if (rt_wire_bytes(&r, RT_STORE_MAX_VALUE, &data, &n))
                value = g_bytes_new(data, n);
            else {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store at %s: %s: malformed reply",
                            store->address, what);
                mark_broken(store, *error);
            }
        } else if (status == RT_WIRE_TIMEOUT && timeout_ms == 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "rendezvous store at %s: key '%s' is not set",
                        store->address, key);
        } else if (status == RT_WIRE_TIMEOUT) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "rendezvous store at %s: timed out after %.1f s waiting for key '%s': the rank that "
                        "sets it has not got this far (did it fail, or is it slower than the timeout?)",
                        store->address, seconds(timeout_ms), key);
        }
        g_byte_array_unref(reply);
    }
    g_mutex_unlock(&store->lock);
    g_free(what);
    return value;
}

/* Builds a WAIT or CHECK request for keys, after checking them. */
static GByteArray *keys_request(const rt_store *store, uint8_t op, const char *const *keys, size_t n_keys,
                                unsigned timeout_ms, GError **error)
{
    if (n_keys == 0 || n_keys > RT_STORE_MAX_KEYS) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rendezvous store at %s: a wait or check takes 1 to %u keys, not %zu", store->address,
                    RT_STORE_MAX_KEYS, n_keys);
        return NULL;
    }
    for (size_t i = 0; i < n_keys; i++)
        if (!check_key(store, keys[i], error))
            return NULL;
    GByteArray *request = rt_wire_begin(op);
    if (op == RT_WIRE_WAIT)
        rt_wire_put_u32(request, timeout_ms);
    rt_wire_put_u32(request, (uint32_t)n_keys);
    for (size_t i = 0; i < n_keys; i++)
        rt_wire_put_str(request, keys[i]);
    return request;
}

gboolean rt_store_wait(rt_store *store, const char *const *keys, size_t n_keys, unsigned timeout_ms,
                       GError **error)
{
    g_return_val_if_fail(store != NULL, FALSE);
    timeout_ms = resolve_timeout(store, timeout_ms);
    GByteArray *request = keys_request(store, RT_WIRE_WAIT, keys, n_keys, timeout_ms, error);
    if (!request)
        return FALSE;
    char *what = g_strdup_printf("wait for key '%s'%s", keys[0], n_keys > 1 ? " and others" : "");
    g_mutex_lock(&store->lock);
    GByteArray *reply = exchange(store, request, reply_limit(timeout_ms), what, error);
    gboolean ok = FALSE;
    if (reply) {
        rt_wire_reader r;
        rt_wire_reader_init(&r, reply->data, reply->len);
        uint8_t status = reply_status(store, &r, what, error);
        if (status == RT_WIRE_OK) {
            ok = TRUE;
        } else if (status == RT_WIRE_TIMEOUT) {
            char *missing = rt_wire_strdup(&r, RT_STORE_MAX_KEY);
            uint32_t n_missing = rt_wire_u32(&r);
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "rendezvous store at %s: timed out after %.1f s waiting for key '%s' (%u of %zu keys "
                        "missing): the rank that sets it has not got this far (did it fail, or is it slower "
                        "than the timeout?)",
                        store->address, seconds(timeout_ms), missing ? missing : "?", n_missing, n_keys);
            g_free(missing);
        }
        g_byte_array_unref(reply);
    }
    g_mutex_unlock(&store->lock);
    g_free(what);
    return ok;
}

gboolean rt_store_add(rt_store *store, const char *key, int64_t delta, int64_t *result, GError **error)
{
    g_return_val_if_fail(store != NULL, FALSE);
    if (!check_key(store, key, error))
        return FALSE;
    char *what = g_strdup_printf("add to key '%s'", key);
    GByteArray *request = rt_wire_begin(RT_WIRE_ADD);
    rt_wire_put_str(request, key);
    rt_wire_put_u64(request, (uint64_t)delta);
    g_mutex_lock(&store->lock);
    GByteArray *reply = exchange(store, request, reply_limit(0), what, error);
    gboolean ok = FALSE;
    if (reply) {
        rt_wire_reader r;
        rt_wire_reader_init(&r, reply->data, reply->len);
        if (reply_status(store, &r, what, error) == RT_WIRE_OK) {
            int64_t value = (int64_t)rt_wire_u64(&r);
            if (r.bad) {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store at %s: %s: malformed reply",
                            store->address, what);
                mark_broken(store, *error);
            } else {
                ok = TRUE;
                if (result)
                    *result = value;
            }
        }
        g_byte_array_unref(reply);
    }
    g_mutex_unlock(&store->lock);
    g_free(what);
    return ok;
}

/* A request whose OK reply is one byte, 0 or 1: CHECK and DELETE. */
static int flag_request(rt_store *store, GByteArray *request, const char *what, GError **error)
{
    g_mutex_lock(&store->lock);
    GByteArray *reply = exchange(store, request, reply_limit(0), what, error);
    int result = -1;
    if (reply) {
        rt_wire_reader r;
        rt_wire_reader_init(&r, reply->data, reply->len);
        if (reply_status(store, &r, what, error) == RT_WIRE_OK) {
            uint8_t flag = rt_wire_u8(&r);
            if (r.bad || flag > 1) {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store at %s: %s: malformed reply",
                            store->address, what);
                mark_broken(store, *error);
            } else {
                result = flag;
            }
        }
        g_byte_array_unref(reply);
    }
    g_mutex_unlock(&store->lock);
    return result;
}

int rt_store_check(rt_store *store, const char *const *keys, size_t n_keys, GError **error)
{
    g_return_val_if_fail(store != NULL, -1);
    GByteArray *request = keys_request(store, RT_WIRE_CHECK, keys, n_keys, 0, error);
    if (!request)
        return -1;
    char *what = g_strdup_printf("check of key '%s'%s", keys[0], n_keys > 1 ? " and others" : "");
    int result = flag_request(store, request, what, error);
    g_free(what);
    return result;
}

int rt_store_delete(rt_store *store, const char *key, GError **error)
{
    g_return_val_if_fail(store != NULL, -1);
    if (!check_key(store, key, error))
        return -1;
    GByteArray *request = rt_wire_begin(RT_WIRE_DELETE);
    rt_wire_put_str(request, key);
    char *what = g_strdup_printf("delete of key '%s'", key);
    int result = flag_request(store, request, what, error);
    g_free(what);
    return result;
}
