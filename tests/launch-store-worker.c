/* tests/launch-store-worker.c: a worker for tests/launch-store.sh. It reads its place in the
 * run from the environment robotrain launch gives it (robotrain/world.h), joins the
 * rendezvous store the launcher hosts, sets "rank.R", waits for the key of every rank, and
 * writes DIR/store.R: "rank R of N, store hosted by the launcher: yes, saw N ranks". Any failure
 * is printed on stderr with exit status 1.
 *
 *   launch-store-worker DIR */
#include "config.h"

#include <stdio.h>

#include <robotrain/store.h>
#include <robotrain/world.h>

static int fail(const char *what, GError *error)
{
    fprintf(stderr, "launch-store-worker: %s: %s\n", what, error ? error->message : "failed");
    g_clear_error(&error);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fail("usage: launch-store-worker DIR", NULL);
    GError *error = NULL;
    rt_world world;
    if (!rt_world_from_env(&world, &error))
        return fail("world", error);
    rt_store *store = rt_store_open(&world, 20000, &error);
    if (!store)
        return fail("store", error);
    char key[32];
    g_snprintf(key, sizeof key, "rank.%d", world.rank);
    gboolean ok = rt_store_set(store, key, "x", 1, &error);
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    for (int r = 0; r < world.world_size; r++)
        g_ptr_array_add(keys, g_strdup_printf("rank.%d", r));
    ok = ok &&
         rt_store_wait(store, (const char *const *)keys->pdata, keys->len, RT_STORE_DEFAULT_TIMEOUT, &error);
    int seen = ok ? world.world_size : 0;
    g_ptr_array_unref(keys);
    rt_store_free(store);
    if (!ok)
        return fail("wait", error);
    char *path = g_strdup_printf("%s/store.%d", argv[1], world.rank);
    char *text = g_strdup_printf("rank %d of %d, store hosted by the launcher: %s, saw %d ranks\n",
                                 world.rank, world.world_size, world.store_hosted ? "yes" : "no", seen);
    ok = g_file_set_contents(path, text, -1, &error);
    g_free(path);
    g_free(text);
    return ok ? 0 : fail("write", error);
}
