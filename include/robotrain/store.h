/* robotrain/store.h: the rendezvous key-value store of a distributed run.
 *
 * Before the comm backends can talk, the processes of a run exchange a few small values:
 * NCCL's unique id, Gloo's socket addresses, "rank 3 is ready". One process serves a TCP
 * key-value store (like PyTorch's TCPStore): the launcher (robotrain launch) or rank 0, in a
 * background thread that serves every client of the run. Every process, rank 0 included,
 * talks to it through a client.
 *
 * Guarantees: a client retries its connection with backoff until its timeout; every call that
 * waits (connect, get, wait, and every reply) has a deadline and fails with a message naming
 * the store's address, the key and the timeout, never hanging. Sizes are bounded (keys
 * RT_STORE_MAX_KEY bytes, values RT_STORE_MAX_VALUE bytes, RT_STORE_MAX_KEYS keys per call)
 * and the server checks them as well, so a stray or hostile client cannot make it allocate
 * without bound. The wire protocol is binary with length-prefixed fields; a versioned hello
 * carries the run id, and a server refuses clients of another run, so a store left over from an
 * earlier run on the same port is reported instead of being used.
 *
 * Errors are RT_ERROR_NETWORK (cannot connect, timed out, connection lost) or
 * RT_ERROR_INVALID_ARG (a key or value out of bounds, a counter that is not a number). */
#ifndef ROBOTRAIN_STORE_H
#define ROBOTRAIN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <robotrain/world.h>

G_BEGIN_DECLS

#define RT_STORE_MAX_KEY 1024            /* bytes of a key */
#define RT_STORE_MAX_VALUE (4u << 20)    /* bytes of a value */
#define RT_STORE_MAX_KEYS 1024           /* keys in one wait or check */
#define RT_STORE_MAX_TOTAL (256u << 20)  /* bytes of keys and values one server holds */
#define RT_STORE_DEFAULT_TIMEOUT_MS 300000u

/* ---------------------------------------------------------------- server */

typedef struct rt_store_server rt_store_server;

/* Starts a server thread listening on host:port. host NULL listens on every interface; port 0
 * picks a free port (rt_store_server_get_port() says which). Only clients that present run_id
 * (NULL: "default") in their hello are served.
 * Returns (transfer full) a running server to stop with rt_store_server_free(), or NULL with
 * error (RT_ERROR_NETWORK naming the address, e.g. when the port is taken). */
rt_store_server *rt_store_server_new(const char *host, uint16_t port, const char *run_id, GError **error);

/* The port the server listens on. */
uint16_t rt_store_server_get_port(const rt_store_server *server);

/* Stops the thread, closes every connection (their clients then fail with "connection lost")
 * and frees the server. NULL is a no-op. */
void rt_store_server_free(rt_store_server *server);

/* ---------------------------------------------------------------- client */

typedef struct rt_store rt_store;

/* Connects to the server at host:port, retrying with backoff (10 ms doubling to 1 s) until
 * timeout_ms has passed, and checks the protocol version and run id (NULL: "default").
 * timeout_ms (0: RT_STORE_DEFAULT_TIMEOUT_MS) is also the timeout of later replies and of
 * waits given RT_STORE_DEFAULT_TIMEOUT.
 * Returns (transfer full) a client to free with rt_store_free(), or NULL with error. A client
 * may be used from several threads; calls are serialised. */
rt_store *rt_store_connect(const char *host, uint16_t port, const char *run_id, unsigned timeout_ms,
                           GError **error);

/* The store of a run: on rank 0 (unless world->store_hosted) it first starts the server on
 * world->store_port (on the loopback interface when master_addr is a loopback address, else on
 * every interface); every rank then connects to master_addr:store_port. A world of one
 * process gets a private server on a free loopback port. The server, when there is one, belongs
 * to the returned client and stops with it: rank 0 must free its store last (after a barrier).
 * Returns (transfer full) a client to free with rt_store_free(), or NULL with error. */
rt_store *rt_store_open(const rt_world *world, unsigned timeout_ms, GError **error);

/* The server this client owns (rt_store_open() on rank 0), or NULL. Transfer none. */
rt_store_server *rt_store_get_server(const rt_store *store);

/* "host:port" of the server, for messages. Transfer none: valid while store lives. */
const char *rt_store_get_address(const rt_store *store);

/* The default timeout given at connection, in milliseconds. */
unsigned rt_store_get_timeout(const rt_store *store);

/* Closes the connection (and stops an owned server). NULL is a no-op. */
void rt_store_free(rt_store *store);

/* Stands for the client's default timeout in the calls below. */
#define RT_STORE_DEFAULT_TIMEOUT UINT32_MAX

/* Sets key to the size bytes at value (size may be 0), replacing an old value, and wakes the
 * clients waiting for it. */
gboolean rt_store_set(rt_store *store, const char *key, const void *value, size_t size, GError **error);

/* The value of key, waiting up to timeout_ms (0: not at all) for another process to set it.
 * Returns (transfer full) the value to free with g_bytes_unref(), or NULL with error: a key
 * still missing after the timeout is RT_ERROR_NETWORK ("timed out after ... waiting for key"),
 * or RT_ERROR_NOT_FOUND with timeout_ms 0. */
GBytes *rt_store_get(rt_store *store, const char *key, unsigned timeout_ms, GError **error);

/* Waits until every one of the n_keys keys is set, up to timeout_ms. The error on timeout names
 * a missing key and how many are missing. */
gboolean rt_store_wait(rt_store *store, const char *const *keys, size_t n_keys, unsigned timeout_ms,
                       GError **error);

/* Adds delta to the counter at key (a missing key counts as 0) and stores the sum, atomically
 * for all clients. The counter's value is its decimal text, so rt_store_get() reads "3".
 * *result (may be NULL) receives the new value. */
gboolean rt_store_add(rt_store *store, const char *key, int64_t delta, int64_t *result, GError **error);

/* Whether every one of the n_keys keys is set, without waiting: 1 yes, 0 no, -1 with error. */
int rt_store_check(rt_store *store, const char *const *keys, size_t n_keys, GError **error);

/* Removes key: 1 when it existed, 0 when it did not, -1 with error. */
int rt_store_delete(rt_store *store, const char *key, GError **error);

G_END_DECLS

#endif
