/* The rendezvous store's server: one thread, poll(2) over the listening socket, a wake-up pipe
 * and every client connection. Sockets are non-blocking; each client has an input buffer (a
 * frame is handled once it is complete) and an output buffer (flushed as the socket accepts
 * it). A GET or WAIT whose keys are missing parks its client until a SET or ADD provides them
 * or its deadline passes; the poll timeout is the nearest deadline. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/store.h>

#include "dist/store-protocol.h"

#define MAX_CLIENTS 65536
#define READ_CHUNK 65536

typedef struct {
    int fd;
    GByteArray *in;  /* bytes received, not yet handled */
    GByteArray *out; /* bytes to send */
    size_t out_sent; /* of out */
    gboolean greeted; /* its HELLO was accepted */
    gboolean closing; /* close once out is flushed */
    /* A parked GET or WAIT. */
    uint8_t wait_op;  /* 0: none */
    char **wait_keys; /* NULL-terminated */
    gint64 deadline;  /* g_get_monotonic_time() */
} client;

struct rt_store_server {
    int listen_fd;
    int wake[2]; /* a byte on wake[1] makes the thread look at stop */
    uint16_t port;
    char *run_id;
    GThread *thread;
    gint stop;

    /* Only the server thread touches what follows. Memory is bounded: a client's input holds
     * less than one frame past what was handled, since frames are handled as they complete. */
    GHashTable *table; /* char * -> GBytes * */
    size_t total_bytes;
    GPtrArray *clients; /* client * */
};

/* ---------------------------------------------------------------- clients */

static void client_free(client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    g_byte_array_unref(c->in);
    g_byte_array_unref(c->out);
    g_strfreev(c->wait_keys);
    g_free(c);
}

/* Queues a finished reply frame (transfer full) to c. */
static void send_reply(client *c, GByteArray *reply)
{
    rt_wire_finish(reply);
    g_byte_array_append(c->out, reply->data, reply->len);
    g_byte_array_unref(reply);
}

static void send_status(client *c, uint8_t status)
{
    send_reply(c, rt_wire_begin(status));
}

/* An ERROR reply; with fatal, the connection closes after it. */
static void send_error(client *c, gboolean fatal, const char *format, ...) G_GNUC_PRINTF(3, 4);
static void send_error(client *c, gboolean fatal, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *text = g_strdup_vprintf(format, args);
    va_end(args);
    GByteArray *reply = rt_wire_begin(RT_WIRE_ERROR);
    rt_wire_put_str(reply, text);
    send_reply(c, reply);
    g_free(text);
    if (fatal)
        c->closing = TRUE;
}

/* ---------------------------------------------------------------- the table */

static size_t entry_bytes(const char *key, GBytes *value)
{
    return strlen(key) + g_bytes_get_size(value) + 64; /* + bookkeeping, roughly */
}

/* Stores value (transfer full) at key; FALSE when it would pass RT_STORE_MAX_TOTAL. */
static gboolean table_put(rt_store_server *s, const char *key, GBytes *value)
{
    GBytes *old = g_hash_table_lookup(s->table, key);
    size_t old_bytes = old ? entry_bytes(key, old) : 0;
    size_t new_bytes = entry_bytes(key, value);
    if (s->total_bytes - old_bytes + new_bytes > RT_STORE_MAX_TOTAL) {
        g_bytes_unref(value);
        return FALSE;
    }
    s->total_bytes = s->total_bytes - old_bytes + new_bytes;
    g_hash_table_replace(s->table, g_strdup(key), value);
    return TRUE;
}

/* The first key of keys that is not set, and how many are not. */
static const char *first_missing(rt_store_server *s, char **keys, guint *n_missing)
{
    const char *first = NULL;
    guint n = 0;
    for (char **k = keys; *k; k++) {
        if (!g_hash_table_contains(s->table, *k)) {
            if (!first)
                first = *k;
            n++;
        }
    }
    if (n_missing)
        *n_missing = n;
    return first;
}

static void reply_value(client *c, GBytes *value)
{
    GByteArray *reply = rt_wire_begin(RT_WIRE_OK);
    gsize n = 0;
    const void *data = g_bytes_get_data(value, &n);
    rt_wire_put_bytes(reply, data, n);
    send_reply(c, reply);
}

/* Answers c's parked request if its keys are now all set (or, with expired, as a timeout). */
static void resolve_wait(rt_store_server *s, client *c, gboolean expired)
{
    guint n_missing = 0;
    const char *missing = first_missing(s, c->wait_keys, &n_missing);
    if (missing && !expired)
        return;
    if (c->wait_op == RT_WIRE_GET) {
        if (missing)
            send_status(c, RT_WIRE_TIMEOUT);
        else
            reply_value(c, g_hash_table_lookup(s->table, c->wait_keys[0]));
    } else if (missing) {
        GByteArray *reply = rt_wire_begin(RT_WIRE_TIMEOUT);
        rt_wire_put_str(reply, missing);
        rt_wire_put_u32(reply, n_missing);
        send_reply(c, reply);
    } else {
        send_status(c, RT_WIRE_OK);
    }
    c->wait_op = 0;
    g_strfreev(c->wait_keys);
    c->wait_keys = NULL;
}

static void wake_waiters(rt_store_server *s)
{
    for (guint i = 0; i < s->clients->len; i++) {
        client *c = g_ptr_array_index(s->clients, i);
        if (c->wait_op)
            resolve_wait(s, c, FALSE);
    }
}

/* Parks c until keys (transfer full) are set or timeout_ms passes; answers at once when they
 * already are. */
static void park(rt_store_server *s, client *c, uint8_t op, char **keys, uint32_t timeout_ms)
{
    c->wait_op = op;
    c->wait_keys = keys;
    c->deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    resolve_wait(s, c, timeout_ms == 0);
}

/* ---------------------------------------------------------------- requests */

/* Reads n keys; NULL (and r->bad) when the list is malformed or too long.
 * Returns (transfer full) a NULL-terminated list. */
static char **read_keys(rt_wire_reader *r, uint32_t n)
{
    if (n > RT_STORE_MAX_KEYS) {
        r->bad = TRUE;
        return NULL;
    }
    char **keys = g_new0(char *, n + 1);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = rt_wire_strdup(r, RT_STORE_MAX_KEY);
        if (!keys[i] || !*keys[i]) {
            r->bad = TRUE;
            g_strfreev(keys);
            return NULL;
        }
    }
    return keys;
}

static void handle_hello(rt_store_server *s, client *c, rt_wire_reader *r)
{
    uint32_t magic = rt_wire_u32(r);
    uint32_t version = rt_wire_u32(r);
    char *run_id = rt_wire_strdup(r, RT_WORLD_RUN_ID_MAX);
    if (r->bad || magic != RT_WIRE_MAGIC)
        send_error(c, TRUE, "not a robotrain store hello");
    else if (version != RT_WIRE_VERSION)
        send_error(c, TRUE,
                   "the store speaks protocol version %u and the client version %u: run the same robotrain "
                   "version on every node",
                   RT_WIRE_VERSION, version);
    else if (strcmp(run_id, s->run_id) != 0)
        send_error(c, TRUE, "this store belongs to run '%s', not to run '%s'", s->run_id, run_id);
    else {
        c->greeted = TRUE;
        GByteArray *reply = rt_wire_begin(RT_WIRE_OK);
        rt_wire_put_u32(reply, RT_WIRE_VERSION);
        rt_wire_put_str(reply, s->run_id);
        send_reply(c, reply);
    }
    g_free(run_id);
}

static void handle_add(rt_store_server *s, client *c, const char *key, int64_t delta)
{
    int64_t value = 0;
    GBytes *old = g_hash_table_lookup(s->table, key);
    if (old) {
        gsize n = 0;
        const char *data = g_bytes_get_data(old, &n);
        char text[32];
        gint64 parsed = 0;
        gboolean ok = n > 0 && n < sizeof text;
        if (ok) {
            memcpy(text, data, n);
            text[n] = '\0';
            ok = g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, &parsed, NULL);
        }
        if (!ok) {
            send_error(c, FALSE, "key '%s' holds a value that is not a decimal counter", key);
            return;
        }
        value = parsed;
    }
    if ((delta > 0 && value > G_MAXINT64 - delta) || (delta < 0 && value < G_MININT64 - delta)) {
        send_error(c, FALSE, "adding %" G_GINT64_FORMAT " to key '%s' (%" G_GINT64_FORMAT ") overflows", delta,
                   key, value);
        return;
    }
    value += delta;
    char *text = g_strdup_printf("%" G_GINT64_FORMAT, value);
    if (!table_put(s, key, g_bytes_new_take(text, strlen(text)))) {
        send_error(c, FALSE, "the store is full (%u MiB)", RT_STORE_MAX_TOTAL >> 20);
        return;
    }
    GByteArray *reply = rt_wire_begin(RT_WIRE_OK);
    rt_wire_put_u64(reply, (uint64_t)value);
    send_reply(c, reply);
    wake_waiters(s);
}

/* Handles one complete request payload. */
static void handle_request(rt_store_server *s, client *c, const uint8_t *payload, size_t n)
{
    rt_wire_reader r;
    rt_wire_reader_init(&r, payload, n);
    uint8_t op = rt_wire_u8(&r);
    if (!c->greeted) {
        if (op == RT_WIRE_HELLO)
            handle_hello(s, c, &r);
        else
            send_error(c, TRUE, "the first request must be a hello");
        return;
    }
    char *key = NULL;
    switch (op) {
    case RT_WIRE_SET: {
        key = rt_wire_strdup(&r, RT_STORE_MAX_KEY);
        const uint8_t *value = NULL;
        size_t size = 0;
        rt_wire_bytes(&r, RT_STORE_MAX_VALUE, &value, &size);
        if (r.bad || !*key || r.left)
            break;
        if (!table_put(s, key, g_bytes_new(value, size)))
            send_error(c, FALSE, "the store is full (%u MiB)", RT_STORE_MAX_TOTAL >> 20);
        else {
            send_status(c, RT_WIRE_OK);
            wake_waiters(s);
        }
        g_free(key);
        return;
    }
    case RT_WIRE_GET: {
        key = rt_wire_strdup(&r, RT_STORE_MAX_KEY);
        uint32_t timeout_ms = rt_wire_u32(&r);
        if (r.bad || !*key || r.left)
            break;
        char **keys = g_new0(char *, 2);
        keys[0] = key;
        park(s, c, RT_WIRE_GET, keys, timeout_ms);
        return;
    }
    case RT_WIRE_ADD: {
        key = rt_wire_strdup(&r, RT_STORE_MAX_KEY);
        int64_t delta = (int64_t)rt_wire_u64(&r);
        if (r.bad || !*key || r.left)
            break;
        handle_add(s, c, key, delta);
        g_free(key);
        return;
    }
    case RT_WIRE_WAIT:
    case RT_WIRE_CHECK: {
        uint32_t timeout_ms = op == RT_WIRE_WAIT ? rt_wire_u32(&r) : 0;
        char **keys = read_keys(&r, rt_wire_u32(&r));
        if (r.bad || r.left) {
            g_strfreev(keys);
            break;
        }
        if (op == RT_WIRE_WAIT) {
            park(s, c, RT_WIRE_WAIT, keys, timeout_ms);
        } else {
            GByteArray *reply = rt_wire_begin(RT_WIRE_OK);
            rt_wire_put_u8(reply, first_missing(s, keys, NULL) == NULL);
            send_reply(c, reply);
            g_strfreev(keys);
        }
        return;
    }
    case RT_WIRE_DELETE: {
        key = rt_wire_strdup(&r, RT_STORE_MAX_KEY);
        if (r.bad || !*key || r.left)
            break;
        GBytes *old = g_hash_table_lookup(s->table, key);
        if (old)
            s->total_bytes -= entry_bytes(key, old);
        GByteArray *reply = rt_wire_begin(RT_WIRE_OK);
        rt_wire_put_u8(reply, g_hash_table_remove(s->table, key));
        send_reply(c, reply);
        g_free(key);
        return;
    }
    default:
        send_error(c, TRUE, "unknown store operation %u", op);
        return;
    }
    g_free(key);
    send_error(c, TRUE, "malformed store request (operation %u, %zu bytes)", op, n);
}

/* Handles every complete frame in c's input, up to one that parks. */
static void handle_input(rt_store_server *s, client *c)
{
    size_t used = 0;
    while (!c->closing && !c->wait_op && c->in->len - used >= 4) {
        uint32_t n = rt_wire_get_le32(c->in->data + used);
        if (n == 0 || n > RT_WIRE_MAX_FRAME) {
            send_error(c, TRUE, "a store request of %u bytes is outside the limit of 1 to %u bytes", n,
                       (unsigned)RT_WIRE_MAX_FRAME);
            break;
        }
        if (c->in->len - used - 4 < n)
            break;
        handle_request(s, c, c->in->data + used + 4, n);
        used += 4 + (size_t)n;
    }
    if (used)
        g_byte_array_remove_range(c->in, 0, (guint)used);
    if (c->wait_op && c->in->len) {
        /* robotrain's client waits for each reply: this one broke the protocol. */
        c->wait_op = 0;
        g_strfreev(c->wait_keys);
        c->wait_keys = NULL;
        c->closing = TRUE;
    }
}

/* Reads what the socket has. FALSE: the connection is over. */
static gboolean read_client(rt_store_server *s, client *c)
{
    uint8_t buf[READ_CHUNK];
    for (;;) {
        ssize_t got = recv(c->fd, buf, sizeof buf, 0);
        if (got > 0 && c->wait_op) {
            /* robotrain's client waits for each reply: this one broke the protocol. */
            g_debug("rendezvous store: a client sent a request while its last one waited; closing it");
            return FALSE;
        }
        if (got > 0) {
            g_byte_array_append(c->in, buf, (guint)got);
            handle_input(s, c);
            if (c->closing)
                return TRUE;
            continue;
        }
        if (got == 0)
            return FALSE;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
    }
}

/* Sends what is queued. FALSE: the connection is over. */
static gboolean write_client(client *c)
{
    while (c->out_sent < c->out->len) {
        ssize_t put = send(c->fd, c->out->data + c->out_sent, c->out->len - c->out_sent, MSG_NOSIGNAL);
        if (put > 0) {
            c->out_sent += (size_t)put;
            continue;
        }
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return TRUE;
        return FALSE;
    }
    g_byte_array_set_size(c->out, 0);
    c->out_sent = 0;
    return !c->closing;
}

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void accept_clients(rt_store_server *s)
{
    for (;;) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: the connection stays queued; do not spin on it. */
                g_warning("rendezvous store on port %u: accept: %s", s->port, g_strerror(errno));
                g_usleep(50000);
            }
            return; /* EAGAIN, or a transient failure: poll tells again */
        }
        if (s->clients->len >= MAX_CLIENTS) {
            close(fd);
            continue;
        }
        set_nonblocking(fd);
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        client *c = g_new0(client, 1);
        c->fd = fd;
        c->in = g_byte_array_new();
        c->out = g_byte_array_new();
        g_ptr_array_add(s->clients, c);
    }
}

/* The poll timeout: until the nearest deadline of a parked request, or forever. */
static int poll_timeout(rt_store_server *s)
{
    gint64 nearest = G_MAXINT64;
    for (guint i = 0; i < s->clients->len; i++) {
        client *c = g_ptr_array_index(s->clients, i);
        if (c->wait_op && c->deadline < nearest)
            nearest = c->deadline;
    }
    if (nearest == G_MAXINT64)
        return -1;
    gint64 left = nearest - g_get_monotonic_time();
    if (left <= 0)
        return 0;
    return (int)MIN((left + 999) / 1000, G_MAXINT);
}

static gpointer server_thread(gpointer data)
{
    rt_store_server *s = data;
    GArray *fds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
    while (!g_atomic_int_get(&s->stop)) {
        g_array_set_size(fds, 0);
        struct pollfd p = { s->wake[0], POLLIN, 0 };
        g_array_append_val(fds, p);
        p.fd = s->listen_fd;
        g_array_append_val(fds, p);
        for (guint i = 0; i < s->clients->len; i++) {
            client *c = g_ptr_array_index(s->clients, i);
            p.fd = c->fd;
            p.events = (c->closing ? 0 : POLLIN) | (c->out->len > c->out_sent ? POLLOUT : 0);
            g_array_append_val(fds, p);
        }
        int n = poll((struct pollfd *)fds->data, fds->len, poll_timeout(s));
        if (n < 0 && errno != EINTR) {
            g_warning("rendezvous store on port %u: poll: %s", s->port, g_strerror(errno));
            g_usleep(10000);
            continue;
        }
        struct pollfd *pf = (struct pollfd *)fds->data;
        /* Clients first (their indices match the poll array), then new connections. */
        guint n_clients = s->clients->len;
        gboolean *gone = g_new0(gboolean, n_clients);
        for (guint i = 0; n > 0 && i < n_clients; i++) {
            client *c = g_ptr_array_index(s->clients, i);
            short ev = pf[2 + i].revents;
            if (ev & (POLLIN | POLLHUP | POLLERR))
                gone[i] = !read_client(s, c);
            if (!gone[i] && (c->out->len > c->out_sent || c->closing))
                gone[i] = !write_client(c);
        }
        gint64 now = g_get_monotonic_time();
        for (guint i = 0; i < n_clients; i++) {
            client *c = g_ptr_array_index(s->clients, i);
            if (!gone[i] && c->wait_op && c->deadline <= now) {
                resolve_wait(s, c, TRUE);
                gone[i] = !write_client(c);
            }
        }
        for (guint i = n_clients; i-- > 0;) {
            if (gone[i]) {
                client_free(g_ptr_array_index(s->clients, i));
                g_ptr_array_remove_index(s->clients, i);
            }
        }
        g_free(gone);
        if (pf[1].revents & POLLIN)
            accept_clients(s);
        if (pf[0].revents & POLLIN) {
            char drain[16];
            while (read(s->wake[0], drain, sizeof drain) > 0) {
            }
        }
    }
    g_array_unref(fds);
    return NULL;
}

/* ---------------------------------------------------------------- life cycle */

/* Opens a listening socket on host:port; the chosen port in *bound. -1 with error. */
static int listen_on(const char *host, uint16_t port, uint16_t *bound, GError **error)
{
    struct addrinfo hints = { 0 }, *list = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[8];
    g_snprintf(service, sizeof service, "%u", port);
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store: cannot resolve '%s' to listen on: %s",
                    host ? host : "*", gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved_errno = 0;
    for (struct addrinfo *a = list; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            saved_errno = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a->ai_family == AF_INET6) {
            int zero = 0; /* also accept IPv4 clients when listening on every interface */
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        }
        if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
            saved_errno = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(list);
    if (fd < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "rendezvous store: cannot listen on %s:%u: %s%s", host ? host : "*", port,
                    g_strerror(saved_errno),
                    saved_errno == EADDRINUSE
                        ? " (another program, or a robotrain process of an earlier run, holds the port: stop it, "
                          "or choose another MASTER_PORT; 0 picks a free one)"
                        : "");
        return -1;
    }
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    *bound = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                        : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    set_nonblocking(fd);
    return fd;
}

rt_store_server *rt_store_server_new(const char *host, uint16_t port, const char *run_id, GError **error)
{
    uint16_t bound = 0;
    int fd = listen_on(host, port, &bound, error);
    if (fd < 0)
        return NULL;
    rt_store_server *s = g_new0(rt_store_server, 1);
    s->listen_fd = fd;
    s->port = bound;
    s->run_id = g_strdup(run_id ? run_id : "default");
    s->table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_bytes_unref);
    s->clients = g_ptr_array_new();
    if (pipe(s->wake) < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rendezvous store: pipe: %s", g_strerror(errno));
        s->wake[0] = s->wake[1] = -1;
        rt_store_server_free(s);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        set_nonblocking(s->wake[i]);
        fcntl(s->wake[i], F_SETFD, FD_CLOEXEC);
    }
    s->thread = g_thread_try_new("rt-store", server_thread, s, error);
    if (!s->thread) {
        rt_store_server_free(s);
        return NULL;
    }
    g_debug("rendezvous store: listening on %s:%u for run %s", host ? host : "*", bound, s->run_id);
    return s;
}

uint16_t rt_store_server_get_port(const rt_store_server *server)
{
    g_return_val_if_fail(server != NULL, 0);
    return server->port;
}

void rt_store_server_free(rt_store_server *s)
{
    if (s == NULL)
        return;
    if (s->thread) {
        g_atomic_int_set(&s->stop, 1);
        ssize_t rc;
        do
            rc = write(s->wake[1], "x", 1);
        while (rc < 0 && errno == EINTR);
        g_thread_join(s->thread);
    }
    for (guint i = 0; i < s->clients->len; i++)
        client_free(g_ptr_array_index(s->clients, i));
    g_ptr_array_unref(s->clients);
    g_hash_table_unref(s->table);
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    close(s->listen_fd);
    g_free(s->run_id);
    g_free(s);
}
