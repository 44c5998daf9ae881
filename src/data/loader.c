/* Loader threads: batch n of the sequence goes into slot n % depth; workers claim batches in
 * sequence order when their slot is free, fill them in parallel, and the caller takes them in
 * order. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "data/loader.h"

typedef enum {
    SLOT_FREE,    /* may be claimed for the next batch that maps to it */
    SLOT_FILLING, /* a worker is filling it */
    SLOT_READY,   /* filled (or failed), waiting for the caller */
    SLOT_HELD,    /* handed out by rt_loader_next() */
} slot_state;

typedef struct {
    rt_batch *batch;
    slot_state state;
    int64_t seq;
    GError *error;
} slot;

struct rt_loader {
    rt_dataset *ds;
    rt_sampler *sampler;
    rt_loader_options o;
    rt_batch_layout *layout;
    int depth;
    slot *slots;
    GMutex lock;
    GCond cond;
    int64_t next_fill; /* the next sequence number a worker claims */
    int64_t next_take; /* the next one the caller gets */
    gboolean stop;
    GError *failure; /* set once the caller has met an error */
    GThread **threads;
    rt_dataset_reader **readers; /* one per worker; one for the caller when num_workers is 0 */
    rt_loader_stats stats;
};

void rt_loader_options_init(rt_loader_options *options)
{
    memset(options, 0, sizeof *options);
    options->num_workers = 4;
}

const rt_batch_layout *rt_loader_layout(const rt_loader *loader)
{
    return loader->layout;
}

/* Fills slot s with batch `seq` of the sequence. Called and returns with the lock held; drops it
 * while decoding. */
static void fill_slot(rt_loader *l, rt_dataset_reader *reader, slot *s, int64_t seq)
{
    int64_t bpe = rt_sampler_batches_per_epoch(l->sampler);
    int64_t pos = l->o.start_batch + seq;
    rt_batch *b = s->batch;
    b->epoch = l->o.start_epoch + pos / bpe;
    b->batch = pos % bpe;
    b->size = rt_sampler_batch(l->sampler, b->epoch, b->batch, b->items);
    g_mutex_unlock(&l->lock);

    gint64 t0 = g_get_monotonic_time();
    GError *error = NULL;
    /* (rt_dataset_reader_fill writes items[i] back, unchanged) */
    for (int64_t i = 0; i < b->size && !error; i++)
        rt_dataset_reader_fill(reader, b->items[i], b, i, &error);
    if (!error && l->o.normalizer)
        rt_normalizer_apply_batch(l->o.normalizer, b);
    /* a short batch: zeros after its samples, not what the block held before, so a batch's
     * bytes do not depend on the thread count */
    for (int i = 0; !error && b->size < b->capacity && i < rt_batch_layout_num_fields(l->layout); i++) {
        const rt_batch_field *f = rt_batch_layout_field(l->layout, i);
        memset((char *)rt_batch_field_data(b, i) + (size_t)b->size * f->sample_bytes, 0,
               (size_t)(b->capacity - b->size) * f->sample_bytes);
    }
    for (int64_t i = b->size; i < b->capacity; i++) {
        b->items[i] = -1;
        b->tasks[i] = NULL;
    }
    gint64 t1 = g_get_monotonic_time();

    g_mutex_lock(&l->lock);
    l->stats.fill_s += (double)(t1 - t0) / 1e6;
    s->error = error;
    s->state = SLOT_READY;
    if (error)
        l->stop = TRUE; /* the sequence cannot go past a batch that failed */
    g_cond_broadcast(&l->cond);
}

typedef struct {
    rt_loader *loader;
    int index;
} worker_arg;

static gpointer worker_main(gpointer data)
{
    worker_arg *arg = data;
    rt_loader *l = arg->loader;
    rt_dataset_reader *reader = l->readers[arg->index];
    g_free(arg);
    g_mutex_lock(&l->lock);
    while (!l->stop) {
        int64_t seq = l->next_fill;
        slot *s = &l->slots[seq % l->depth];
        if (s->state != SLOT_FREE) {
            g_cond_wait(&l->cond, &l->lock);
            continue;
        }
        s->state = SLOT_FILLING;
        s->seq = seq;
        l->next_fill++;
        fill_slot(l, reader, s, seq);
    }
    g_mutex_unlock(&l->lock);
    return NULL;
}

rt_loader *rt_loader_new(rt_dataset *ds, rt_sampler *sampler, const rt_loader_options *options,
                         GError **error)
{
    rt_loader_options defaults;
    if (!options) {
        rt_loader_options_init(&defaults);
        options = &defaults;
    }
    const rt_sampler_options *so = rt_sampler_get_options(sampler);
    if (so->num_items != rt_dataset_num_frames(ds)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the sampler draws from %" G_GINT64_FORMAT " items but the dataset has %" G_GINT64_FORMAT,
                    so->num_items, rt_dataset_num_frames(ds));
        return NULL;
    }
    if (options->num_workers < 0 || options->num_workers > 256 || options->depth < 0 ||
        options->depth > 1024 || options->start_epoch < 0 || options->start_batch < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "loader options out of range: num_workers %d (0 to 256), depth %d (0 to 1024), start "
                    "epoch %" G_GINT64_FORMAT " and batch %" G_GINT64_FORMAT " (>= 0)",
                    options->num_workers, options->depth, options->start_epoch, options->start_batch);
        return NULL;
    }
    rt_loader *l = g_new0(rt_loader, 1);
    l->ds = ds;
    l->sampler = sampler;
    l->o = *options;
    l->layout = rt_batch_layout_new(ds, so->batch_size);
    l->depth = options->depth ? options->depth : MAX(2, 2 * options->num_workers);
    g_mutex_init(&l->lock);
    g_cond_init(&l->cond);
    l->slots = g_new0(slot, l->depth);
    for (int i = 0; i < l->depth; i++) {
        /* without an allocator, rt_batch_new allocates page-aligned memory */
        void *block =
            options->alloc ? options->alloc(rt_batch_layout_bytes(l->layout), options->alloc_user) : NULL;
        if (options->alloc && !block) {
            g_set_error(error, RT_ERROR, RT_ERROR_FAILED,
                        "the allocator gave no memory for a batch of %zu bytes",
                        rt_batch_layout_bytes(l->layout));
            rt_loader_free(l);
            return NULL;
        }
        if (block)
            memset(block, 0, rt_batch_layout_bytes(l->layout));
        l->slots[i].batch = rt_batch_new(l->layout, block);
    }
    int n_readers = MAX(1, options->num_workers);
    l->readers = g_new0(rt_dataset_reader *, n_readers);
    for (int i = 0; i < n_readers; i++)
        l->readers[i] = rt_dataset_reader_new(ds, options->decoder_threads);
    l->threads = g_new0(GThread *, n_readers);
    for (int i = 0; i < options->num_workers; i++) {
        worker_arg *arg = g_new(worker_arg, 1);
        arg->loader = l;
        arg->index = i;
        g_autofree char *name = g_strdup_printf("rt-loader-%d", i);
        GError *local = NULL;
        l->threads[i] = g_thread_try_new(name, worker_main, arg, &local);
        if (!l->threads[i]) {
            g_free(arg);
            g_propagate_prefixed_error(error, local, "cannot start loader thread %d: ", i);
            rt_loader_free(l);
            return NULL;
        }
    }
    return l;
}

void rt_loader_free(rt_loader *l)
{
    if (!l)
        return;
    g_mutex_lock(&l->lock);
    l->stop = TRUE;
    g_cond_broadcast(&l->cond);
    g_mutex_unlock(&l->lock);
    int n_readers = MAX(1, l->o.num_workers);
    for (int i = 0; l->threads && i < l->o.num_workers; i++)
        if (l->threads[i])
            g_thread_join(l->threads[i]);
    for (int i = 0; l->readers && i < n_readers; i++)
        rt_dataset_reader_free(l->readers[i]);
    for (int i = 0; i < l->depth; i++) {
        slot *s = &l->slots[i];
        if (!s->batch)
            continue;
        if (l->o.alloc && l->o.free)
            l->o.free(s->batch->data, l->o.alloc_user);
        rt_batch_free(s->batch);
        g_clear_error(&s->error);
    }
    g_clear_error(&l->failure);
    g_free(l->slots);
    g_free(l->threads);
    g_free(l->readers);
    rt_batch_layout_free(l->layout);
    g_mutex_clear(&l->lock);
    g_cond_clear(&l->cond);
    g_free(l);
}

rt_batch *rt_loader_next(rt_loader *l, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    g_mutex_lock(&l->lock);
    rt_batch *out = NULL;
    if (l->failure) {
        g_propagate_error(error, g_error_copy(l->failure));
        goto done;
    }
    int64_t seq = l->next_take;
    slot *s = &l->slots[seq % l->depth];
    if (s->state == SLOT_HELD) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "all %d batches of the loader are held; release one before asking for the next",
                    l->depth);
        goto done;
    }
    if (l->o.num_workers == 0) {
        s->state = SLOT_FILLING;
        s->seq = seq;
        l->next_fill = seq + 1;
        fill_slot(l, l->readers[0], s, seq);
    }
    while (!(s->state == SLOT_READY && s->seq == seq))
        g_cond_wait(&l->cond, &l->lock);
    if (s->error) {
        l->failure = s->error;
        s->error = NULL;
        s->state = SLOT_FREE;
        g_propagate_error(error, g_error_copy(l->failure));
        goto done;
    }
    s->state = SLOT_HELD;
    l->next_take++;
    out = s->batch;
done:;
    double waited = (double)(g_get_monotonic_time() - t0) / 1e6;
    l->stats.last_wait_s = waited;
    l->stats.wait_s += waited;
    if (out)
        l->stats.batches++;
    g_mutex_unlock(&l->lock);
    return out;
}

void rt_loader_release(rt_loader *l, rt_batch *batch)
{
    g_mutex_lock(&l->lock);
    for (int i = 0; i < l->depth; i++)
        if (l->slots[i].batch == batch) {
            g_warn_if_fail(l->slots[i].state == SLOT_HELD);
            l->slots[i].state = SLOT_FREE;
            g_cond_broadcast(&l->cond);
            break;
        }
    g_mutex_unlock(&l->lock);
}

void rt_loader_get_stats(rt_loader *l, rt_loader_stats *stats)
{
    g_mutex_lock(&l->lock);
    *stats = l->stats;
    g_mutex_unlock(&l->lock);
}
