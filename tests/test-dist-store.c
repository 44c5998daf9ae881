/* tests/test-dist-store.c: the rendezvous store on loopback: set/get/wait/add/check/delete,
 * between threads and between processes (this program re-executed as a client), deadlines
 * (wait and get time out with a message naming the store, the key and the timeout; connecting
 * to a port with nothing behind it fails within the timeout), size bounds on both sides, the
 * hello's run id and version, and a server that goes away under a waiting client. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/store.h>

#include "dist/store-protocol.h"
#include "testing.h"

#define RUN "test-run"

static double now_s(void)
{
    return g_get_monotonic_time() / 1e6;
}

/* A port nothing listens on (bound, then released: good enough on loopback). */
static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return 0;
    close(fd);
    return ntohs(a.sin_port);
}

static gboolean bytes_equal(GBytes *b, const char *text)
{
    gsize n = 0;
    const void *data = b ? g_bytes_get_data(b, &n) : NULL;
    return b && n == strlen(text) && (n == 0 || memcmp(data, text, n) == 0);
}

DEF_TEST(set_get_wait_add_check_delete)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    EXPECT_NO_ERROR(error);
    uint16_t port = rt_store_server_get_port(server);
    OK1(port != 0, "port 0 picks a free port and reports it");
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 2000, &error);
    EXPECT_NO_ERROR(error);
    char *address = g_strdup_printf("127.0.0.1:%u", port);
    EXPECT_EQ_STR(address, rt_store_get_address(store));
    g_free(address);
    EXPECT_EQ_INT(2000, rt_store_get_timeout(store));

    OK(rt_store_set(store, "alpha", "one", 3, &error));
    GBytes *v = rt_store_get(store, "alpha", 0, &error);
    EXPECT_NO_ERROR(error);
    OK(bytes_equal(v, "one"));
    g_bytes_unref(v);
    /* Binary values with NULs, an empty value, replacement. */
    static const uint8_t binary[] = { 0, 1, 0, 255, 0 };
    OK(rt_store_set(store, "bin", binary, sizeof binary, &error));
    v = rt_store_get(store, "bin", 100, &error);
    OK(v && g_bytes_get_size(v) == sizeof binary && memcmp(g_bytes_get_data(v, NULL), binary, sizeof binary) == 0);
    g_bytes_unref(v);
    OK(rt_store_set(store, "empty", NULL, 0, &error));
    v = rt_store_get(store, "empty", 0, &error);
    OK(bytes_equal(v, ""));
    g_bytes_unref(v);
    OK(rt_store_set(store, "alpha", "uno", 3, &error));
    v = rt_store_get(store, "alpha", 0, &error);
    OK(bytes_equal(v, "uno"));
    g_bytes_unref(v);

    /* Counters: a missing key counts as 0; the value is decimal text. */
    int64_t sum = 0;
    OK(rt_store_add(store, "counter", 5, &sum, &error));
    EXPECT_EQ_INT(5, sum);
    OK(rt_store_add(store, "counter", -7, &sum, &error));
    EXPECT_EQ_INT(-2, sum);
    v = rt_store_get(store, "counter", 0, &error);
    OK(bytes_equal(v, "-2"));
    g_bytes_unref(v);
    OK(!rt_store_add(store, "alpha", 1, NULL, &error));
    EXPECT_ERROR(error, "key 'alpha' holds a value that is not a decimal counter");
    OK(rt_store_set(store, "big", "9223372036854775807", 19, &error));
    OK(!rt_store_add(store, "big", 1, NULL, &error));
    EXPECT_ERROR(error, "adding 1 to key 'big' (9223372036854775807) overflows");
    /* A refused request leaves the connection usable. */
    OK(rt_store_add(store, "counter", 2, &sum, &error));
    EXPECT_EQ_INT(0, sum);

    const char *present[] = { "alpha", "bin", "empty" };
    const char *mixed[] = { "alpha", "nope" };
    EXPECT_EQ_INT(1, rt_store_check(store, present, 3, &error));
    EXPECT_EQ_INT(0, rt_store_check(store, mixed, 2, &error));
    OK(rt_store_wait(store, present, 3, 1000, &error));
    EXPECT_NO_ERROR(error);

    EXPECT_EQ_INT(1, rt_store_delete(store, "alpha", &error));
    EXPECT_EQ_INT(0, rt_store_delete(store, "alpha", &error));
    OK(rt_store_get(store, "alpha", 0, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "key 'alpha' is not set");

    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

/* ---- threads */

typedef struct {
    uint16_t port;
    int id;
    int adds;
    gboolean ok;
    char *message;
} worker_args;

static gpointer adder(gpointer data)
{
    worker_args *a = data;
    GError *error = NULL;
    rt_store *store = rt_store_connect("127.0.0.1", a->port, RUN, 5000, &error);
    a->ok = store != NULL;
    for (int i = 0; a->ok && i < a->adds; i++)
        a->ok = rt_store_add(store, "shared", 1, NULL, &error);
    char key[32];
    g_snprintf(key, sizeof key, "adder/%d", a->id);
    a->ok = a->ok && rt_store_set(store, key, "done", 4, &error);
    if (error)
        a->message = g_strdup(error->message);
    g_clear_error(&error);
    rt_store_free(store);
    return NULL;
}

static gpointer late_setter(gpointer data)
{
    worker_args *a = data;
    GError *error = NULL;
    rt_store *store = rt_store_connect("127.0.0.1", a->port, RUN, 5000, &error);
    g_usleep(300000);
    a->ok = store && rt_store_set(store, "late", "here", 4, &error);
    g_clear_error(&error);
    rt_store_free(store);
    return NULL;
}

DEF_TEST(many_threads_one_server)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    EXPECT_NO_ERROR(error);
    uint16_t port = rt_store_server_get_port(server);
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 5000, &error);
    EXPECT_NO_ERROR(error);

    /* get and wait block until another client sets the key. */
    worker_args late = { port, 0, 0, FALSE, NULL };
    GThread *t = g_thread_new("late", late_setter, &late);
    double t0 = now_s();
    GBytes *v = rt_store_get(store, "late", 5000, &error);
    double waited = now_s() - t0;
    EXPECT_NO_ERROR(error);
    OK(bytes_equal(v, "here"));
    g_bytes_unref(v);
    g_thread_join(t);
    OK(late.ok);
    printf("# get blocked %.3f s for a key set after 0.3 s\n", waited);
    OK1(waited >= 0.25 && waited < 4.0, "get waited for the key, then returned at once");

    enum { N = 8, ADDS = 50 };
    worker_args args[N];
    GThread *threads[N];
    for (int i = 0; i < N; i++) {
        args[i] = (worker_args){ port, i, ADDS, FALSE, NULL };
        threads[i] = g_thread_new("adder", adder, &args[i]);
    }
    char *keys[N];
    for (int i = 0; i < N; i++)
        keys[i] = g_strdup_printf("adder/%d", i);
    OK(rt_store_wait(store, (const char *const *)keys, N, 10000, &error));
    EXPECT_NO_ERROR(error);
    for (int i = 0; i < N; i++) {
        g_thread_join(threads[i]);
        if (args[i].message)
            printf("# adder %d: %s\n", i, args[i].message);
        OK(args[i].ok);
        g_free(args[i].message);
        g_free(keys[i]);
    }
    int64_t total = 0;
    OK(rt_store_add(store, "shared", 0, &total, &error));
    EXPECT_EQ_INT(N * ADDS, total);
    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

/* ---- processes: this program, re-executed with --child PORT ID */

static int child_main(uint16_t port, int id)
{
    GError *error = NULL;
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 5000, &error);
    if (!store) {
        fprintf(stderr, "child %d: %s\n", id, error->message);
        return 10;
    }
    char key[32], value[32];
    g_snprintf(key, sizeof key, "child/%d", id);
    g_snprintf(value, sizeof value, "%d", id * 7);
    const char *go[] = { "go" };
    int rc = 0;
    if (!rt_store_add(store, "children", 1, NULL, &error) || !rt_store_set(store, key, value, strlen(value), &error))
        rc = 11;
    else if (!rt_store_wait(store, go, 1, 5000, &error))
        rc = 12;
    else {
        GBytes *v = rt_store_get(store, "go", 0, &error);
        char expect[32];
        g_snprintf(expect, sizeof expect, "now-%d", 3);
        if (!bytes_equal(v, expect))
            rc = 13;
        g_clear_pointer(&v, g_bytes_unref);
        g_snprintf(key, sizeof key, "done/%d", id);
        if (rc == 0 && !rt_store_set(store, key, "", 0, &error))
            rc = 14;
    }
    if (error)
        fprintf(stderr, "child %d: %s\n", id, error->message);
    g_clear_error(&error);
    rt_store_free(store);
    return rc;
}

DEF_TEST(many_processes_one_server)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    EXPECT_NO_ERROR(error);
    uint16_t port = rt_store_server_get_port(server);
    char *self = g_file_read_link("/proc/self/exe", &error);
    EXPECT_NO_ERROR(error);
    enum { N = 3 };
    GPid pids[N];
    char port_text[8];
    g_snprintf(port_text, sizeof port_text, "%u", port);
    for (int i = 0; i < N; i++) {
        char id[8];
        g_snprintf(id, sizeof id, "%d", i);
        char *argv[] = { self, (char *)"--child", port_text, id, NULL };
        OK(g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pids[i], &error));
        EXPECT_NO_ERROR(error);
    }
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 5000, &error);
    EXPECT_NO_ERROR(error);
    const char *children[] = { "child/0", "child/1", "child/2" };
    OK(rt_store_wait(store, children, N, 10000, &error));
    EXPECT_NO_ERROR(error);
    for (int i = 0; i < N; i++) {
        GBytes *v = rt_store_get(store, children[i], 0, &error);
        char expect[8];
        g_snprintf(expect, sizeof expect, "%d", i * 7);
        OK(bytes_equal(v, expect));
        g_bytes_unref(v);
    }
    int64_t count = 0;
    OK(rt_store_add(store, "children", 0, &count, &error));
    EXPECT_EQ_INT(N, count);
    OK(rt_store_set(store, "go", "now-3", 5, &error));
    const char *done[] = { "done/0", "done/1", "done/2" };
    OK(rt_store_wait(store, done, N, 10000, &error));
    EXPECT_NO_ERROR(error);
    for (int i = 0; i < N; i++) {
        int status = 0;
        OK(waitpid(pids[i], &status, 0) == pids[i]);
        OK(WIFEXITED(status));
        EXPECT_EQ_INT(0, WEXITSTATUS(status));
        g_spawn_close_pid(pids[i]);
    }
    g_free(self);
    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

/* ---- deadlines */

DEF_TEST(wait_and_get_time_out_naming_the_key)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    uint16_t port = rt_store_server_get_port(server);
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 2000, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_store_set(store, "here", "x", 1, &error));
    const char *keys[] = { "here", "never", "neither" };
    double t0 = now_s();
    OK(!rt_store_wait(store, keys, 3, 300, &error));
    double waited = now_s() - t0;
    char *expect = g_strdup_printf("rendezvous store at 127.0.0.1:%u: timed out after 0.3 s waiting for key "
                                   "'never' (2 of 3 keys missing): the rank that sets it has not got this far",
                                   port);
    OK(error && error->code == RT_ERROR_NETWORK);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    printf("# wait gave up after %.3f s\n", waited);
    OK1(waited >= 0.28 && waited < 3.0, "the wait lasted about its timeout");

    t0 = now_s();
    OK(rt_store_get(store, "never", 250, &error) == NULL);
    waited = now_s() - t0;
    EXPECT_ERROR(error, "timed out after 0.2 s waiting for key 'never'");
    OK1(waited >= 0.23 && waited < 3.0, "the get lasted about its timeout");

    /* RT_STORE_DEFAULT_TIMEOUT stands for the connection's timeout (2 s). */
    t0 = now_s();
    OK(!rt_store_wait(store, keys + 1, 1, RT_STORE_DEFAULT_TIMEOUT, &error));
    waited = now_s() - t0;
    EXPECT_ERROR(error, "timed out after 2.0 s waiting for key 'never' (1 of 1 keys missing)");
    OK1(waited >= 1.9 && waited < 5.0, "the default timeout applies");

    /* A timeout is an answer, not a failure: the connection stays usable. */
    OK(rt_store_set(store, "never", "now", 3, &error));
    OK(rt_store_wait(store, keys, 2, 300, &error));
    EXPECT_NO_ERROR(error);
    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

DEF_TEST(connect_to_nothing_fails_within_the_timeout)
{
    GError *error = NULL;
    uint16_t port = free_port();
    OK(port != 0);
    double t0 = now_s();
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 600, &error);
    double waited = now_s() - t0;
    OK(store == NULL);
    OK(error && error->code == RT_ERROR_NETWORK);
    char *expect = g_strdup_printf("cannot reach the rendezvous store at 127.0.0.1:%u within 0.6 s", port);
    printf("# gave up after %.3f s: %s\n", waited, error ? error->message : "");
    OK(error && strstr(error->message, "Connection refused") != NULL);
    OK(error && strstr(error->message, "check that rank 0 (or robotrain launch) runs and that MASTER_ADDR and "
                                       "MASTER_PORT point to it") != NULL);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    OK1(waited >= 0.5 && waited < 3.0, "it retried until about its timeout, and no longer");

    /* A host name that does not resolve (retried only while the resolver says "try again"). */
    t0 = now_s();
    OK(rt_store_connect("no-such-host.invalid", port, RUN, 1000, &error) == NULL);
    EXPECT_ERROR(error, "last: cannot resolve 'no-such-host.invalid'");
    OK1(now_s() - t0 < 4.0, "an unknown host ends within the timeout");
    return 0;
}

typedef struct {
    uint16_t port;
    rt_world world;
    rt_store *store;
    char *message;
} rank_args;

static gpointer open_rank(gpointer data)
{
    rank_args *a = data;
    GError *error = NULL;
    a->store = rt_store_open(&a->world, 5000, &error);
    if (a->store) {
        char key[16], other[16];
        g_snprintf(key, sizeof key, "rank/%d", a->world.rank);
        g_snprintf(other, sizeof other, "rank/%d", 1 - a->world.rank);
        const char *keys[] = { other };
        if (!rt_store_set(a->store, key, "up", 2, &error) || !rt_store_wait(a->store, keys, 1, 5000, &error) ||
            !rt_store_add(a->store, "both", 1, NULL, &error)) {
        }
    }
    if (error)
        a->message = g_strdup(error->message);
    g_clear_error(&error);
    return NULL;
}

DEF_TEST(open_for_a_world_retries_until_rank_0_serves)
{
    GError *error = NULL;
    rt_world single;
    rt_world_init_single(&single);
    rt_store *alone = rt_store_open(&single, 1000, &error);
    EXPECT_NO_ERROR(error);
    OK1(rt_store_get_server(alone) != NULL, "a single process hosts a private store");
    OK(rt_store_set(alone, "k", "v", 1, &error));
    rt_store_free(alone);

    uint16_t port = free_port();
    rank_args r0 = { port, { 0 }, NULL, NULL }, r1 = { port, { 0 }, NULL, NULL };
    rt_world_init_single(&r0.world);
    r0.world.world_size = 2;
    r0.world.local_world_size = 2;
    r0.world.store_port = port;
    g_strlcpy(r0.world.run_id, RUN, sizeof r0.world.run_id);
    r1.world = r0.world;
    r1.world.rank = 1;
    r1.world.local_rank = 1;
    /* Rank 1 starts first: it must keep trying until rank 0's server is up. */
    GThread *t1 = g_thread_new("rank1", open_rank, &r1);
    g_usleep(300000);
    GThread *t0 = g_thread_new("rank0", open_rank, &r0);
    g_thread_join(t1);
    g_thread_join(t0);
    if (r0.message)
        printf("# rank 0: %s\n", r0.message);
    if (r1.message)
        printf("# rank 1: %s\n", r1.message);
    OK(r0.store && r1.store && !r0.message && !r1.message);
    OK1(rt_store_get_server(r0.store) != NULL && rt_store_get_server(r1.store) == NULL,
        "rank 0 hosts the store, rank 1 does not");
    int64_t both = 0;
    OK(rt_store_add(r1.store, "both", 0, &both, &error));
    EXPECT_EQ_INT(2, both);
    rt_store_free(r1.store);
    rt_store_free(r0.store);

    /* A launcher-hosted store: rank 0 only connects. */
    r0.world.store_hosted = TRUE;
    r0.world.store_port = free_port();
    OK(rt_store_open(&r0.world, 300, &error) == NULL);
    EXPECT_ERROR(error, "cannot reach the rendezvous store at 127.0.0.1:");
    return 0;
}

/* ---- the server goes away */

typedef struct {
    rt_store *store;
    double waited;
    char *message;
} waiter_args;

static gpointer long_wait(gpointer data)
{
    waiter_args *a = data;
    GError *error = NULL;
    const char *keys[] = { "forever" };
    double t0 = now_s();
    rt_store_wait(a->store, keys, 1, 15000, &error);
    a->waited = now_s() - t0;
    a->message = error ? g_strdup(error->message) : NULL;
    g_clear_error(&error);
    return NULL;
}

DEF_TEST(server_gone_fails_a_waiting_client_at_once)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    uint16_t port = rt_store_server_get_port(server);
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 2000, &error);
    EXPECT_NO_ERROR(error);
    waiter_args a = { store, 0, NULL };
    GThread *t = g_thread_new("waiter", long_wait, &a);
    g_usleep(200000);
    rt_store_server_free(server);
    g_thread_join(t);
    printf("# the wait ended after %.3f s: %s\n", a.waited, a.message ? a.message : "(no error)");
    OK(a.message && strstr(a.message, "wait for key 'forever': connection lost: the server closed the "
                                      "connection (has rank 0 or the launcher exited?)"));
    OK1(a.waited < 5.0, "the client noticed the closed connection, not its timeout");
    g_free(a.message);
    OK(!rt_store_set(store, "k", "v", 1, &error));
    EXPECT_ERROR(error, "set of key 'k': not sent, the connection failed earlier: rendezvous store at");
    rt_store_free(store);
    return 0;
}

/* ---- bounds, hello */

DEF_TEST(client_refuses_oversized_requests)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    rt_store *store = rt_store_connect("127.0.0.1", rt_store_server_get_port(server), RUN, 2000, &error);
    EXPECT_NO_ERROR(error);
    size_t big = RT_STORE_MAX_VALUE + 1;
    char *value = g_malloc0(big);
    OK(!rt_store_set(store, "huge", value, big, &error));
    EXPECT_ERROR(error, "the value of key 'huge' has 4194305 bytes, more than the 4194304 bytes a value may hold");
    OK(rt_store_set(store, "largest", value, RT_STORE_MAX_VALUE, &error));
    EXPECT_NO_ERROR(error);
    GBytes *v = rt_store_get(store, "largest", 0, &error);
    OK(v && g_bytes_get_size(v) == RT_STORE_MAX_VALUE);
    g_bytes_unref(v);
    g_free(value);

    char *long_key = g_strnfill(RT_STORE_MAX_KEY + 1, 'k');
    OK(!rt_store_set(store, long_key, "v", 1, &error));
    EXPECT_ERROR(error, "a key must have 1 to 1024 bytes, not 1025 ('kkkk");
    g_free(long_key);
    OK(!rt_store_set(store, "", "v", 1, &error));
    EXPECT_ERROR(error, "a key must have 1 to 1024 bytes, not 0");
    const char *none[] = { NULL };
    OK(!rt_store_wait(store, none, 0, 100, &error));
    EXPECT_ERROR(error, "a wait or check takes 1 to 1024 keys, not 0");
    const char **many = g_new0(const char *, RT_STORE_MAX_KEYS + 1);
    for (int i = 0; i <= RT_STORE_MAX_KEYS; i++)
        many[i] = "k";
    EXPECT_EQ_INT(-1, rt_store_check(store, many, RT_STORE_MAX_KEYS + 1, &error));
    EXPECT_ERROR(error, "not 1025");
    g_free(many);
    /* None of this reached the server: the connection still works. */
    OK(rt_store_set(store, "k", "v", 1, &error));
    EXPECT_NO_ERROR(error);
    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

/* Sends raw bytes to the server and reads its reply frame. Returns the reply's ERROR text (or
 * "OK"), "closed" when the server closed without a reply. Returns (transfer full). */
static char *raw_exchange(int fd, const void *data, size_t n)
{
    if (send(fd, data, n, MSG_NOSIGNAL) != (ssize_t)n)
        return g_strdup("send failed");
    uint8_t head[4];
    size_t got = 0;
    while (got < 4) {
        ssize_t r = recv(fd, head + got, 4 - got, 0);
        if (r <= 0)
            return g_strdup("closed");
        got += (size_t)r;
    }
    uint32_t len = rt_wire_get_le32(head);
    if (len == 0 || len > 4096)
        return g_strdup("bad reply length");
    uint8_t *body = g_malloc(len);
    got = 0;
    while (got < len) {
        ssize_t r = recv(fd, body + got, len - got, 0);
        if (r <= 0) {
            g_free(body);
            return g_strdup("closed mid-reply");
        }
        got += (size_t)r;
    }
    rt_wire_reader rd;
    rt_wire_reader_init(&rd, body, len);
    uint8_t status = rt_wire_u8(&rd);
    char *text = status == RT_WIRE_ERROR ? rt_wire_strdup(&rd, 4096) : g_strdup("OK");
    g_free(body);
    return text ? text : g_strdup("malformed");
}

static int raw_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* After an error the server closes: the next read sees end of file. */
static gboolean closed_by_server(int fd)
{
    uint8_t b;
    return recv(fd, &b, 1, 0) == 0;
}

static GByteArray *hello_frame(uint32_t magic, uint32_t version, const char *run_id)
{
    GByteArray *f = rt_wire_begin(RT_WIRE_HELLO);
    rt_wire_put_u32(f, magic);
    rt_wire_put_u32(f, version);
    rt_wire_put_str(f, run_id);
    rt_wire_finish(f);
    return f;
}

DEF_TEST(server_refuses_oversized_and_malformed_frames)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, RUN, &error);
    uint16_t port = rt_store_server_get_port(server);

    /* A frame announcing 2 GiB is refused before anything is allocated for it. */
    int fd = raw_connect(port);
    OK(fd >= 0);
    GByteArray *hello = hello_frame(RT_WIRE_MAGIC, RT_WIRE_VERSION, RUN);
    char *reply = raw_exchange(fd, hello->data, hello->len);
    EXPECT_EQ_STR("OK", reply);
    g_free(reply);
    static const uint8_t huge[] = { 0, 0, 0, 0x80, RT_WIRE_SET };
    reply = raw_exchange(fd, huge, sizeof huge);
    char *expect = g_strdup_printf("a store request of 2147483648 bytes is outside the limit of 1 to %u bytes",
                                   (unsigned)RT_WIRE_MAX_FRAME);
    EXPECT_EQ_STR(expect, reply);
    g_free(expect);
    g_free(reply);
    OK(closed_by_server(fd));
    close(fd);

    /* A SET whose value field claims more than the frame holds. */
    fd = raw_connect(port);
    reply = raw_exchange(fd, hello->data, hello->len);
    g_free(reply);
    GByteArray *f = rt_wire_begin(RT_WIRE_SET);
    rt_wire_put_str(f, "key");
    rt_wire_put_u32(f, 1000);
    rt_wire_put_u8(f, 'x');
    rt_wire_finish(f);
    reply = raw_exchange(fd, f->data, f->len);
    OK(g_str_has_prefix(reply, "malformed store request (operation 2"));
    g_free(reply);
    g_byte_array_unref(f);
    OK(closed_by_server(fd));
    close(fd);

    /* A request before the hello; a wrong magic; another version. */
    fd = raw_connect(port);
    f = rt_wire_begin(RT_WIRE_SET);
    rt_wire_put_str(f, "key");
    rt_wire_put_str(f, "v");
    rt_wire_finish(f);
    reply = raw_exchange(fd, f->data, f->len);
    EXPECT_EQ_STR("the first request must be a hello", reply);
    g_free(reply);
    g_byte_array_unref(f);
    close(fd);

    fd = raw_connect(port);
    f = hello_frame(0x12345678u, RT_WIRE_VERSION, RUN);
    reply = raw_exchange(fd, f->data, f->len);
    EXPECT_EQ_STR("not a robotrain store hello", reply);
    g_free(reply);
    g_byte_array_unref(f);
    close(fd);

    fd = raw_connect(port);
    f = hello_frame(RT_WIRE_MAGIC, 99, RUN);
    reply = raw_exchange(fd, f->data, f->len);
    EXPECT_EQ_STR("the store speaks protocol version 1 and the client version 99: run the same robotrain version "
                  "on every node",
                  reply);
    g_free(reply);
    g_byte_array_unref(f);
    close(fd);

    fd = raw_connect(port);
    reply = raw_exchange(fd, hello->data, hello->len);
    g_free(reply);
    f = rt_wire_begin(77);
    rt_wire_finish(f);
    reply = raw_exchange(fd, f->data, f->len);
    EXPECT_EQ_STR("unknown store operation 77", reply);
    g_free(reply);
    g_byte_array_unref(f);
    OK(closed_by_server(fd));
    close(fd);

    /* The server still serves well-behaved clients. */
    g_byte_array_unref(hello);
    rt_store *store = rt_store_connect("127.0.0.1", port, RUN, 2000, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_store_set(store, "after", "ok", 2, &error));
    rt_store_free(store);
    rt_store_server_free(server);
    return 0;
}

/* Something that is not a store behind the port: it accepts, reads, and then either answers
 * like a web server or says nothing at all. */
typedef struct {
    int listen_fd;
    gboolean silent;
} impostor_args;

static gpointer impostor(gpointer data)
{
    impostor_args *a = data;
    int fd = accept(a->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char buf[256];
    if (recv(fd, buf, sizeof buf, 0) > 0 && !a->silent) {
        static const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
        if (send(fd, http, sizeof http - 1, MSG_NOSIGNAL) < 0)
            perror("impostor: send");
    }
    /* Hold the connection until the client gives up. */
    while (recv(fd, buf, sizeof buf, 0) > 0) {
    }
    close(fd);
    return NULL;
}

static int impostor_listen(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

DEF_TEST(something_else_behind_the_port)
{
    GError *error = NULL;
    for (int silent = 0; silent <= 1; silent++) {
        impostor_args a = { -1, silent };
        uint16_t port = 0;
        a.listen_fd = impostor_listen(&port);
        OK(a.listen_fd >= 0);
        GThread *t = g_thread_new("impostor", impostor, &a);
        double t0 = now_s();
        OK(rt_store_connect("127.0.0.1", port, RUN, 1000, &error) == NULL);
        double waited = now_s() - t0;
        printf("# %s server: %.2f s: %s\n", silent ? "a silent" : "a web", waited, error ? error->message : "");
        char *expect = g_strdup_printf(
            silent ? "rendezvous store at 127.0.0.1:%u: hello: no reply within "
                   : "rendezvous store at 127.0.0.1:%u: hello: connection lost: the server sent a malformed reply "
                     "(is something else listening on that port?)",
            port);
        EXPECT_ERROR(error, expect);
        g_free(expect);
        OK1(waited < 3.0, "the client gave up within about its 1 s timeout");
        g_thread_join(t);
        close(a.listen_fd);
    }
    return 0;
}

DEF_TEST(a_store_of_another_run_is_refused)
{
    GError *error = NULL;
    rt_store_server *server = rt_store_server_new("127.0.0.1", 0, "old-run", &error);
    uint16_t port = rt_store_server_get_port(server);
    OK(rt_store_connect("127.0.0.1", port, "new-run", 2000, &error) == NULL);
    char *expect = g_strdup_printf("rendezvous store at 127.0.0.1:%u: hello: this store belongs to run 'old-run', "
                                   "not to run 'new-run'; a process of an earlier run may still hold the port",
                                   port);
    EXPECT_ERROR(error, expect);
    g_free(expect);

    /* The port is taken: a second server says so and what to do. */
    OK(rt_store_server_new("127.0.0.1", port, "new-run", &error) == NULL);
    expect = g_strdup_printf("rendezvous store: cannot listen on 127.0.0.1:%u: Address already in use (another "
                             "program, or a robotrain process of an earlier run, holds the port",
                             port);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    rt_store_server_free(server);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child_main((uint16_t)atoi(argv[2]), atoi(argv[3]));
    RUN_TEST(set_get_wait_add_check_delete);
    RUN_TEST(many_threads_one_server);
    RUN_TEST(many_processes_one_server);
    RUN_TEST(wait_and_get_time_out_naming_the_key);
    RUN_TEST(connect_to_nothing_fails_within_the_timeout);
    RUN_TEST(open_for_a_world_retries_until_rank_0_serves);
    RUN_TEST(server_gone_fails_a_waiting_client_at_once);
    RUN_TEST(client_refuses_oversized_requests);
    RUN_TEST(server_refuses_oversized_and_malformed_frames);
    RUN_TEST(something_else_behind_the_port);
    RUN_TEST(a_store_of_another_run_is_refused);
    END_TEST;
}
