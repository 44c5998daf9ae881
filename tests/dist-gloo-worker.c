/* tests/dist-gloo-worker.c: one worker of tests/test-dist-gloo, started with the variables a
 * launcher sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ROBOTRAIN_STORE_HOSTED=1, ...).
 * It joins the run's store and a Gloo communicator and plays one scenario:
 *
 *   collectives  allreduce (sum, avg; f32, bf16, f16; small and multi-segment sizes), broadcast
 *                from rank 1, barrier, argument errors, a second communicator of the same name;
 *                every result is compared with values computed here by hand.
 *   early-exit   the last rank leaves right after joining; the others' allreduce must fail
 *                within the timeout.
 *   missing-peer joins a world in which one rank never starts; init must fail in time.
 *
 * Exit status 0 when the scenario went as expected. What went wrong (or the expected error's
 * text) is written to the store as "report/<rank>", for the driver to check. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/store.h>
#include <robotrain/world.h>

#define TIMEOUT_MS 3000u

static rt_world world;
static rt_store *store;

/* Puts text into the store as this rank's report. */
static void report(const char *text)
{
    char key[32];
    g_snprintf(key, sizeof key, "report/%d", world.rank);
    GError *error = NULL;
    if (!rt_store_set(store, key, text, strlen(text), &error)) {
        fprintf(stderr, "rank %d: cannot report: %s\n", world.rank, error->message);
        g_clear_error(&error);
    }
}

static int fail(const char *format, ...) G_GNUC_PRINTF(1, 2);
static int fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *text = g_strdup_vprintf(format, args);
    va_end(args);
    fprintf(stderr, "# rank %d: %s\n", world.rank, text);
    report(text);
    g_free(text);
    return 1;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return fail(__VA_ARGS__);                                                              \
    } while (0)

static rt_comm *join(const char *name, unsigned timeout_ms, GError **error)
{
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.timeout_ms = timeout_ms;
    config.name = name;
    return rt_comm_new(NULL, "gloo", &world, store, &config, error);
}

/* bf16 and f16 bit patterns of small exact values, written out by hand. */
static uint16_t bf16_of_int(int v)
{
    /* v in 1..15: exponent 127 + floor(log2 v), top mantissa bits of v. */
    int e = 0;
    while ((v >> (e + 1)) != 0)
        e++;
    return (uint16_t)(((127 + e) << 7) | ((v << (7 - e)) & 0x7f));
}

static int scenario_collectives(void)
{
    GError *error = NULL;
    const int n = world.world_size, r = world.rank;
    rt_comm *comm = join("main", TIMEOUT_MS, &error);
    CHECK(comm, "join: %s", error->message);
    CHECK(rt_comm_get_size(comm) == n && rt_comm_get_rank(comm) == r, "rank/size");
    CHECK(strcmp(rt_comm_get_memory(comm), "host") == 0, "memory is %s", rt_comm_get_memory(comm));

    /* f32 sum: rank r holds (r + 1) * (i + 1); the sum is (i + 1) * n(n+1)/2, exact. Sizes: one
     * element, an odd size, and more than Gloo's 1 MiB segment. */
    const size_t sizes[] = { 1, 1001, 300007 };
    const int s = n * (n + 1) / 2;
    for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        size_t count = sizes[k];
        float *v = g_new(float, count);
        for (size_t i = 0; i < count; i++)
            v[i] = (float)((r + 1) * (double)(i + 1));
        CHECK(rt_comm_allreduce(comm, v, count, RT_COMM_F32, RT_COMM_SUM, &error), "allreduce sum: %s",
              error->message);
        for (size_t i = 0; i < count; i++)
            CHECK(v[i] == (float)((double)(i + 1) * s), "sum of %zu: [%zu] = %.9g, expected %d", count, i, v[i],
                  (int)((i + 1) * s));
        g_free(v);
    }

    /* f32 average: rank r holds 3r + (i mod 7); the average is 3(n-1)/2 + (i mod 7), exact for
     * n = 2 and 3. */
    float avg[64];
    for (int i = 0; i < 64; i++)
        avg[i] = (float)(3 * r + i % 7);
    CHECK(rt_comm_allreduce(comm, avg, 64, RT_COMM_F32, RT_COMM_AVG, &error), "allreduce avg: %s", error->message);
    for (int i = 0; i < 64; i++)
        CHECK(avg[i] == 1.5f * (n - 1) + i % 7, "avg[%d] = %.9g", i, avg[i]);

    /* bf16 sum of small integers: r + 1 + (i mod 4), summing to s + n (i mod 4) <= 15. */
    uint16_t b[16];
    for (int i = 0; i < 16; i++)
        b[i] = bf16_of_int(r + 1 + i % 4);
    CHECK(rt_comm_allreduce(comm, b, 16, RT_COMM_BF16, RT_COMM_SUM, &error), "bf16 sum: %s", error->message);
    for (int i = 0; i < 16; i++)
        CHECK(b[i] == bf16_of_int(s + n * (i % 4)), "bf16 sum[%d] = 0x%04x, expected 0x%04x", i, b[i],
              bf16_of_int(s + n * (i % 4)));

    /* f16 average of (r + 1) / 2: (n + 1) / 4 = 0.75 (0x3a00) for n = 2, 1.0 (0x3c00) for n = 3. */
    uint16_t h[8];
    for (int i = 0; i < 8; i++)
        h[i] = r == 0 ? 0x3800 : r == 1 ? 0x3c00 : 0x3e00; /* 0.5, 1.0, 1.5 */
    CHECK(rt_comm_allreduce(comm, h, 8, RT_COMM_F16, RT_COMM_AVG, &error), "f16 avg: %s", error->message);
    for (int i = 0; i < 8; i++)
        CHECK(h[i] == (n == 2 ? 0x3a00 : 0x3c00), "f16 avg[%d] = 0x%04x", i, h[i]);

    /* f16 edges, summed: subnormals (n x 2^-24 = 0x000n), a sum past 65504 (infinity), a
     * negative value (-1.5 n: 0xc200 for n = 2, 0xc480 for n = 3); bf16: a NaN stays NaN. */
    uint16_t e16[3] = { 0x0001, 0x7bff, 0xbe00 };
    CHECK(rt_comm_allreduce(comm, e16, 3, RT_COMM_F16, RT_COMM_SUM, &error), "f16 edges: %s", error->message);
    CHECK(e16[0] == n && e16[1] == 0x7c00 && e16[2] == (n == 2 ? 0xc200 : 0xc480), "f16 edges: %04x %04x %04x",
          e16[0], e16[1], e16[2]);
    uint16_t nan16[2] = { (uint16_t)(r == 0 ? 0x7fc0 : 0x3f80), 0x3f80 };
    CHECK(rt_comm_allreduce(comm, nan16, 2, RT_COMM_BF16, RT_COMM_SUM, &error), "bf16 NaN: %s", error->message);
    CHECK((nan16[0] & 0x7f80) == 0x7f80 && (nan16[0] & 0x7f) != 0 && nan16[1] == bf16_of_int(n),
          "bf16 NaN: %04x %04x", nan16[0], nan16[1]);

    if (n == 2) {
        /* Averages that fall exactly between two 16-bit values round to the even one:
         * bf16 (1.0, 1.0078125) -> 1.00390625 -> 1.0 (0x3f80); (0x3f81, 0x3f82) -> 0x3f82;
         * f16 (1.0, 1 + 2^-10) -> 1.0 (0x3c00); (0x3c01, 0x3c02) -> 0x3c02. */
        uint16_t tb[2] = { (uint16_t)(r ? 0x3f81 : 0x3f80), (uint16_t)(r ? 0x3f82 : 0x3f81) };
        CHECK(rt_comm_allreduce(comm, tb, 2, RT_COMM_BF16, RT_COMM_AVG, &error), "bf16 avg: %s", error->message);
        CHECK(tb[0] == 0x3f80 && tb[1] == 0x3f82, "bf16 ties: 0x%04x 0x%04x", tb[0], tb[1]);
        uint16_t th[2] = { (uint16_t)(r ? 0x3c01 : 0x3c00), (uint16_t)(r ? 0x3c02 : 0x3c01) };
        CHECK(rt_comm_allreduce(comm, th, 2, RT_COMM_F16, RT_COMM_AVG, &error), "f16 avg: %s", error->message);
        CHECK(th[0] == 0x3c00 && th[1] == 0x3c02, "f16 ties: 0x%04x 0x%04x", th[0], th[1]);
    }

    /* Broadcast from rank 1: f32 values, and 16-bit patterns copied bit for bit (a NaN with a
     * payload, a subnormal). */
    float f[1000];
    for (int i = 0; i < 1000; i++)
        f[i] = (float)(r * 1000 + i);
    CHECK(rt_comm_broadcast(comm, f, 1000, RT_COMM_F32, 1, &error), "broadcast: %s", error->message);
    for (int i = 0; i < 1000; i++)
        CHECK(f[i] == (float)(1000 + i), "broadcast[%d] = %.9g", i, f[i]);
    uint16_t bits[3] = { 0, 0, 0 };
    if (r == 1) {
        bits[0] = 0x7fc1;
        bits[1] = 0x0001;
        bits[2] = 0x8000;
    }
    CHECK(rt_comm_broadcast(comm, bits, 3, RT_COMM_BF16, 1, &error), "broadcast bf16: %s", error->message);
    CHECK(bits[0] == 0x7fc1 && bits[1] == 0x0001 && bits[2] == 0x8000, "broadcast bits: %04x %04x %04x", bits[0],
          bits[1], bits[2]);

    /* Barrier: rank r arrives after r x 300 ms and says so first; past the barrier, every
     * rank must see every arrival. */
    g_usleep((gulong)r * 300000);
    char key[32];
    g_snprintf(key, sizeof key, "arrived/%d", r);
    CHECK(rt_store_set(store, key, "", 0, &error), "set: %s", error->message);
    CHECK(rt_comm_barrier(comm, &error), "barrier: %s", error->message);
    for (int i = 0; i < n; i++) {
        g_snprintf(key, sizeof key, "arrived/%d", i);
        const char *keys[] = { key };
        CHECK(rt_store_check(store, keys, 1, &error) == 1, "rank %d passed the barrier before rank %d arrived", r, i);
    }

    /* Arguments are checked before Gloo sees them; the communicator stays usable. */
    CHECK(rt_comm_allreduce(comm, NULL, 0, RT_COMM_F32, RT_COMM_SUM, &error), "empty allreduce failed");
    CHECK(!rt_comm_broadcast(comm, f, 1, RT_COMM_F32, n, &error), "bad root accepted");
    char *expect = g_strdup_printf("broadcast: root %d is not a rank of this world (0..%d)", n, n - 1);
    CHECK(strstr(error->message, expect), "bad root: %s", error->message);
    g_free(expect);
    g_clear_error(&error);
    CHECK(!rt_comm_allreduce(comm, f, 1, (rt_comm_dtype)7, RT_COMM_SUM, &error), "bad dtype accepted");
    CHECK(strstr(error->message, "allreduce: 7 is not a comm dtype (f32, bf16 or f16)"), "bad dtype: %s",
          error->message);
    g_clear_error(&error);
    CHECK(!rt_comm_allreduce(comm, NULL, 4, RT_COMM_F16, RT_COMM_SUM, &error), "NULL buffer accepted");
    CHECK(strstr(error->message, "allreduce: the buffer of 4 f16 elements is NULL"), "NULL: %s", error->message);
    g_clear_error(&error);
    float one = (float)r;
    CHECK(rt_comm_allreduce(comm, &one, 1, RT_COMM_F32, RT_COMM_SUM, &error), "after errors: %s", error->message);
    CHECK(one == (float)(s - n), "after errors: %g", one);
    rt_comm_free(comm);

    /* A second communicator of the same name gets fresh keys in the store. */
    comm = join("main", TIMEOUT_MS, &error);
    CHECK(comm, "second join: %s", error->message);
    one = 1.0f;
    CHECK(rt_comm_allreduce(comm, &one, 1, RT_COMM_F32, RT_COMM_SUM, &error), "second: %s", error->message);
    CHECK(one == (float)n, "second communicator: %g", one);
    CHECK(rt_comm_barrier(comm, &error), "last barrier: %s", error->message);
    rt_comm_free(comm);
    report("ok");
    return 0;
}

static int scenario_early_exit(void)
{
    GError *error = NULL;
    rt_comm *comm = join("early", TIMEOUT_MS, &error);
    CHECK(comm, "join: %s", error->message);
    /* Everyone is connected before one leaves. */
    CHECK(rt_comm_barrier(comm, &error), "barrier: %s", error->message);
    if (world.rank == world.world_size - 1) {
        report("left");
        _exit(3); /* no goodbye: the process just ends */
    }
    float v[4096];
    memset(v, 0, sizeof v);
    gint64 t0 = g_get_monotonic_time();
    gboolean ok = TRUE;
    /* Several rounds: the first may complete with ranks that have not noticed yet. */
    for (int round = 0; ok && round < 20; round++)
        ok = rt_comm_allreduce(comm, v, 4096, RT_COMM_F32, RT_COMM_SUM, &error);
    double waited = (g_get_monotonic_time() - t0) / 1e6;
    CHECK(!ok, "the allreduce succeeded without the last rank");
    char *text = g_strdup_printf("failed after %.1f s: %s", waited, error->message);
    g_clear_error(&error);
    /* The communicator refuses to be used again. */
    ok = rt_comm_barrier(comm, &error);
    CHECK(!ok && strstr(error->message, "failed earlier and cannot be used again"), "reuse after failure: %s",
          ok ? "succeeded" : error->message);
    g_clear_error(&error);
    rt_comm_free(comm);
    report(text);
    g_free(text);
    return 0;
}

static int scenario_missing_peer(void)
{
    GError *error = NULL;
    gint64 t0 = g_get_monotonic_time();
    rt_comm *comm = join("missing", 1500, &error);
    double waited = (g_get_monotonic_time() - t0) / 1e6;
    CHECK(!comm, "joined a world whose last rank never started");
    char *text = g_strdup_printf("failed after %.1f s: %s", waited, error->message);
    g_clear_error(&error);
    report(text);
    g_free(text);
    return 0;
}

int main(int argc, char **argv)
{
    GError *error = NULL;
    if (argc != 2) {
        fprintf(stderr, "usage: %s collectives|early-exit|missing-peer\n", argv[0]);
        return 2;
    }
    if (!rt_world_from_env(&world, &error)) {
        fprintf(stderr, "world: %s\n", error->message);
        return 2;
    }
    store = rt_store_open(&world, 5000, &error);
    if (!store) {
        fprintf(stderr, "rank %d: store: %s\n", world.rank, error->message);
        return 2;
    }
    int rc = 2;
    if (strcmp(argv[1], "collectives") == 0)
        rc = scenario_collectives();
    else if (strcmp(argv[1], "early-exit") == 0)
        rc = scenario_early_exit();
    else if (strcmp(argv[1], "missing-peer") == 0)
        rc = scenario_missing_peer();
    rt_store_free(store);
    return rc;
}
