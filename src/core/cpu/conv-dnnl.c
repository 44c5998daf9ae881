/* src/core/cpu/conv-dnnl.c: convolutions through oneDNN (C API of oneDNN 2.x).
 *
 * One plan per (shape, pass, bias or not, format policy), created on first use (the memory
 * planner's rt_cpu_conv2d_workspace_size call creates them all) and kept for the life of the
 * process: a step never creates a primitive. A plan holds the convolution primitive, the
 * reorders between our NCHW/OIHW tensors and the layouts the primitive picked, and the
 * offsets of its buffers in the caller's workspace (oneDNN's scratchpad is user-managed, so
 * oneDNN allocates nothing either). Outputs that must be accumulated are computed into the
 * workspace and added by a reorder with a sum post-op, since oneDNN's backward primitives
 * take no post-ops. */
#include "config.h"

#include <glib.h>
#include <string.h>

#include "core/cpu/conv-internal.h"
#include "core/cpu/cpu-internal.h"

#ifdef CPU_CONV_WITH_DNNL

#include <oneapi/dnnl/dnnl.h>

#define ALIGN 64
#define MAX_ARGS 4

enum { PASS_FORWARD, PASS_BACKWARD_DATA, PASS_BACKWARD_WEIGHT };

/* What a plan is cached by; compared as bytes, so always built from a zeroed struct. */
typedef struct plan_key {
    int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw;
    int32_t pass, with_bias, formats, unused;
} plan_key;

/* One tensor argument of the primitive: the caller's pointer `user` (an index into the
 * call's pointer list) in plain layout, and the primitive's layout when that differs. */
typedef struct plan_arg {
    int arg;                    /* DNNL_ARG_* */
    int user;                   /* index into the call's pointers */
    bool output;
    bool direct;                /* the primitive reads/writes the caller's memory itself */
    size_t offset;              /* of the buffer in the workspace (when not direct) */
    dnnl_memory_t user_mem;     /* the caller's tensor */
    dnnl_memory_t buf_mem;      /* the primitive's buffer in the workspace */
    dnnl_primitive_t reorder;   /* in: user -> buf; out: buf -> user */
    dnnl_primitive_t reorder_sum; /* out only: user += buf */
} plan_arg;

typedef struct plan {
    plan_key key;
    bool usable;                /* false: oneDNN does not take the shape, im2col does it */
    dnnl_primitive_t prim;
    dnnl_memory_t scratch_mem;
    size_t scratch_offset;
    int n_args;
    plan_arg args[MAX_ARGS];
    size_t workspace;           /* bytes, including ALIGN slack */
    char impl[64];
} plan;

static GMutex lock;
static GHashTable *plans; /* plan_key -> plan */
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static bool dnnl_broken; /* the engine could not be created: im2col does everything */
static int format_policy = CPU_DNNL_FORMATS_DEFAULT;

static guint key_hash(gconstpointer p)
{
    const unsigned char *b = p;
    guint h = 2166136261u;
    for (size_t i = 0; i < sizeof(plan_key); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(plan_key)) == 0;
}

static void plan_free(gpointer data)
{
    plan *p = data;
    for (int i = 0; i < p->n_args; i++) {
        plan_arg *a = &p->args[i];
        if (a->reorder)
            dnnl_primitive_destroy(a->reorder);
        if (a->reorder_sum)
            dnnl_primitive_destroy(a->reorder_sum);
        if (a->buf_mem)
            dnnl_memory_destroy(a->buf_mem);
        if (a->user_mem)
            dnnl_memory_destroy(a->user_mem);
    }
    if (p->scratch_mem)
        dnnl_memory_destroy(p->scratch_mem);
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    g_free(p);
}

static bool ensure_engine(void)
{
    if (engine || dnnl_broken)
        return !dnnl_broken;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        g_warning("oneDNN could not create a CPU engine: convolutions use im2col + GEMM");
        dnnl_broken = true;
        return false;
    }
    plans = g_hash_table_new_full(key_hash, key_equal, NULL, plan_free);
    return true;
}

static size_t align_up(size_t v)
{
    return (v + ALIGN - 1) / ALIGN * ALIGN;
}

static dnnl_primitive_t make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                     bool sum)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success)
        return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_library);
    if (sum && (dnnl_post_ops_create(&ops) != dnnl_success ||
                dnnl_post_ops_append_sum(ops, 1.0f) != dnnl_success ||
                dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success))
        goto out;
    if (dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr) != dnnl_success)
        goto out;
    if (dnnl_primitive_create(&prim, pd) != dnnl_success)
        prim = NULL;
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (ops)
        dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    return prim;
}

/* Wires one argument of primitive descriptor pd: user layout `user_md` (plain) against the
 * layout pd chose. `may_accumulate`: an output that the caller may ask to be added. */
static bool plan_add_arg(plan *p, const_dnnl_primitive_desc_t pd, int arg, int user, bool output,
                         const dnnl_memory_desc_t *user_md, bool may_accumulate, size_t *cursor)
{
    const dnnl_memory_desc_t *prim_md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (!prim_md)
        return false;
    plan_arg *a = &p->args[p->n_args++];
    memset(a, 0, sizeof *a);
    a->arg = arg;
    a->user = user;
    a->output = output;
    bool same = dnnl_memory_desc_equal(prim_md, user_md) != 0;
    a->direct = same && !(output && may_accumulate);
    if (dnnl_memory_create(&a->user_mem, user_md, engine, DNNL_MEMORY_NONE) != dnnl_success)
        return false;
    if (a->direct)
        return true;
    a->offset = *cursor;
    *cursor = align_up(*cursor + dnnl_memory_desc_get_size(prim_md));
    if (dnnl_memory_create(&a->buf_mem, prim_md, engine, DNNL_MEMORY_NONE) != dnnl_success)
        return false;
    if (!output) {
        a->reorder = make_reorder(user_md, prim_md, false);
        return a->reorder != NULL;
    }
    a->reorder = make_reorder(prim_md, user_md, false);
    if (may_accumulate)
        a->reorder_sum = make_reorder(prim_md, user_md, true);
    return a->reorder != NULL && (!may_accumulate || a->reorder_sum != NULL);
}

/* Builds the primitive of p->key; leaves p->usable false when oneDNN declines. */
static void plan_build(plan *p)
{
    const plan_key *k = &p->key;
    dnnl_memory_desc_t x_md, w_md, y_md, b_md, x_any, w_any, y_any;
    dnnl_dims_t x_dims = {k->n, k->c_in, k->h, k->w}, w_dims = {k->c_out, k->c_in, k->kh, k->kw};
    rt_conv2d_shape s = {.n = k->n, .c_in = k->c_in, .h = k->h, .w = k->w, .c_out = k->c_out,
                         .kh = k->kh, .kw = k->kw, .stride_h = k->sh, .stride_w = k->sw,
                         .pad_h = k->ph, .pad_w = k->pw, .dil_h = k->dh, .dil_w = k->dw};
    if (!rt_cpu_conv2d_shape_init(&s))
        return;
    dnnl_dims_t y_dims = {k->n, k->c_out, s.h_out, s.w_out}, b_dims = {k->c_out};
    dnnl_dims_t strides = {k->sh, k->sw}, dilates = {k->dh - 1, k->dw - 1};
    dnnl_dims_t pad_l = {k->ph, k->pw};
    /* PyTorch drops the rows a stride does not reach; oneDNN wants the padding on the far
     * side to match the output size exactly (it may be less than pad_l, even negative) */
    dnnl_dims_t pad_r = {(s.h_out - 1) * k->sh + (k->kh - 1) * k->dh + 1 - k->h - k->ph,
                         (s.w_out - 1) * k->sw + (k->kw - 1) * k->dw + 1 - k->w - k->pw};
    dnnl_format_tag_t act_tag = k->formats == CPU_DNNL_FORMATS_PLAIN ? dnnl_nchw : dnnl_format_tag_any;
    if (dnnl_memory_desc_init_by_tag(&x_md, 4, x_dims, dnnl_f32, dnnl_nchw) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&w_md, 4, w_dims, dnnl_f32, dnnl_oihw) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&y_md, 4, y_dims, dnnl_f32, dnnl_nchw) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&b_md, 1, b_dims, dnnl_f32, dnnl_x) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&x_any, 4, x_dims, dnnl_f32, act_tag) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&w_any, 4, w_dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&y_any, 4, y_dims, dnnl_f32, act_tag) != dnnl_success)
        return;

    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd_pd = NULL, pd = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success)
        return;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    dnnl_convolution_desc_t fwd, bwd;
    /* forward (training), also the hint the backward passes need */
    if (dnnl_dilated_convolution_forward_desc_init(
            &fwd, dnnl_forward_training, dnnl_convolution_direct, &x_any, &w_any,
            (k->pass == PASS_FORWARD && k->with_bias) ? &b_md : NULL, &y_any, strides, dilates,
            pad_l, pad_r) != dnnl_success ||
        dnnl_primitive_desc_create(&fwd_pd, &fwd, attr, engine, NULL) != dnnl_success)
        goto out;
    if (k->pass == PASS_FORWARD) {
        pd = fwd_pd;
        fwd_pd = NULL;
    } else if (k->pass == PASS_BACKWARD_DATA) {
        if (dnnl_dilated_convolution_backward_data_desc_init(&bwd, dnnl_convolution_direct, &x_any,
                                                             &w_any, &y_any, strides, dilates,
                                                             pad_l, pad_r) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bwd, attr, engine, fwd_pd) != dnnl_success)
            goto out;
    } else {
        if (dnnl_dilated_convolution_backward_weights_desc_init(
                &bwd, dnnl_convolution_direct, &x_any, &w_any, k->with_bias ? &b_md : NULL, &y_any,
                strides, dilates, pad_l, pad_r) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bwd, attr, engine, fwd_pd) != dnnl_success)
            goto out;
    }

    size_t cursor = 0;
    const dnnl_memory_desc_t *scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratch_offset = 0;
    if (scratch_md && dnnl_memory_desc_get_size(scratch_md) > 0) {
        cursor = align_up(dnnl_memory_desc_get_size(scratch_md));
        if (dnnl_memory_create(&p->scratch_mem, scratch_md, engine, DNNL_MEMORY_NONE) != dnnl_success)
            goto out;
    }
    /* user pointer indices: forward (x, w, bias, y), backward data (dy, w, dx),
     * backward weight (x, dy, dw, dbias) */
    bool ok;
    if (k->pass == PASS_FORWARD) {
        ok = plan_add_arg(p, pd, DNNL_ARG_SRC, 0, false, &x_md, false, &cursor) &&
             plan_add_arg(p, pd, DNNL_ARG_WEIGHTS, 1, false, &w_md, false, &cursor) &&
             (!k->with_bias || plan_add_arg(p, pd, DNNL_ARG_BIAS, 2, false, &b_md, false, &cursor)) &&
             plan_add_arg(p, pd, DNNL_ARG_DST, 3, true, &y_md, false, &cursor);
    } else if (k->pass == PASS_BACKWARD_DATA) {
        ok = plan_add_arg(p, pd, DNNL_ARG_DIFF_DST, 0, false, &y_md, false, &cursor) &&
             plan_add_arg(p, pd, DNNL_ARG_WEIGHTS, 1, false, &w_md, false, &cursor) &&
             plan_add_arg(p, pd, DNNL_ARG_DIFF_SRC, 2, true, &x_md, true, &cursor);
    } else {
        ok = plan_add_arg(p, pd, DNNL_ARG_SRC, 0, false, &x_md, false, &cursor) &&
             plan_add_arg(p, pd, DNNL_ARG_DIFF_DST, 1, false, &y_md, false, &cursor) &&
             plan_add_arg(p, pd, DNNL_ARG_DIFF_WEIGHTS, 2, true, &w_md, true, &cursor) &&
             (!k->with_bias ||
              plan_add_arg(p, pd, DNNL_ARG_DIFF_BIAS, 3, true, &b_md, true, &cursor));
    }
    if (!ok || dnnl_primitive_create(&p->prim, pd) != dnnl_success)
        goto out;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        g_strlcpy(p->impl, impl, sizeof p->impl);
    p->workspace = cursor + ALIGN;
    p->usable = true;
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (fwd_pd)
        dnnl_primitive_desc_destroy(fwd_pd);
    dnnl_primitive_attr_destroy(attr);
}

/* The layouts for (s, pass) under the AUTO policy. oneDNN's blocked layouts (nChw16c) are
 * its fast kernels, but the NCHW tensors must be reordered into and out of them; where the
 * convolution does little work per input element that reorder costs more than it saves
 * (measured with bench/bench-kernels at ResNet-18's shapes on 96x96 and 480x640 images):
 * 1x1 kernels forward (the stride-2 downsample reads its whole input for a quarter of the
 * products), and the backward data pass of a layer with few input channels (the stem). */
static int auto_formats(const rt_conv2d_shape *s, int pass)
{
    if (pass == PASS_FORWARD && s->kh == 1 && s->kw == 1)
        return CPU_DNNL_FORMATS_PLAIN;
    if (pass == PASS_BACKWARD_DATA && s->c_in < 16)
        return CPU_DNNL_FORMATS_PLAIN;
    return CPU_DNNL_FORMATS_BLOCKED;
}

/* The plan for (s, pass, bias), created on first use; NULL when oneDNN is unusable. Called
 * with the lock held. */
static plan *plan_get(const rt_conv2d_shape *s, int pass, bool with_bias)
{
    if (!ensure_engine())
        return NULL;
    plan_key key;
    memset(&key, 0, sizeof key);
    key.n = s->n, key.c_in = s->c_in, key.h = s->h, key.w = s->w, key.c_out = s->c_out;
    key.kh = s->kh, key.kw = s->kw, key.sh = s->stride_h, key.sw = s->stride_w;
    key.ph = s->pad_h, key.pw = s->pad_w, key.dh = s->dil_h, key.dw = s->dil_w;
    key.pass = pass, key.with_bias = with_bias;
    key.formats = format_policy == CPU_DNNL_FORMATS_AUTO ? auto_formats(s, pass) : format_policy;
    plan *p = g_hash_table_lookup(plans, &key);
    if (!p) {
        p = g_new0(plan, 1);
        p->key = key;
        plan_build(p);
        if (!p->usable) { /* keep the refusal cached, but release what was half built */
            plan *refused = g_new0(plan, 1);
            refused->key = key;
            plan_free(p);
            p = refused;
        }
        g_hash_table_insert(plans, &p->key, p);
    }
    return p->usable ? p : NULL;
}

/* Runs plan p on the caller's pointers; accumulate adds the outputs to the caller's. */
static bool plan_run(plan *p, void *const *ptrs, bool accumulate, void *workspace)
{
    char *base = (char *)(((uintptr_t)workspace + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    dnnl_exec_arg_t exec[MAX_ARGS + 1];
    int n_exec = 0;
    cpu_omp_sync();
    for (int i = 0; i < p->n_args; i++) {
        plan_arg *a = &p->args[i];
        dnnl_memory_set_data_handle(a->user_mem, ptrs[a->user]);
        if (a->direct) {
            exec[n_exec++] = (dnnl_exec_arg_t){a->arg, a->user_mem};
            continue;
        }
        dnnl_memory_set_data_handle(a->buf_mem, base + a->offset);
        exec[n_exec++] = (dnnl_exec_arg_t){a->arg, a->buf_mem};
        if (!a->output) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->user_mem}, {DNNL_ARG_TO, a->buf_mem}};
            if (dnnl_primitive_execute(a->reorder, stream, 2, r) != dnnl_success)
                return false;
        }
    }
    if (p->scratch_mem) {
        dnnl_memory_set_data_handle(p->scratch_mem, base + p->scratch_offset);
        exec[n_exec++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scratch_mem};
    }
    if (dnnl_primitive_execute(p->prim, stream, n_exec, exec) != dnnl_success)
        return false;
    for (int i = 0; i < p->n_args; i++) {
        plan_arg *a = &p->args[i];
        if (!a->output || a->direct)
            continue;
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->buf_mem}, {DNNL_ARG_TO, a->user_mem}};
        if (dnnl_primitive_execute(accumulate ? a->reorder_sum : a->reorder, stream, 2, r) !=
            dnnl_success)
            return false;
    }
    return dnnl_stream_wait(stream) == dnnl_success;
}

void cpu_conv_dnnl_set_formats(int policy)
{
    g_mutex_lock(&lock);
    format_policy = policy;
    g_mutex_unlock(&lock);
}

const char *cpu_conv_dnnl_impl(const rt_conv2d_shape *s, int pass)
{
    g_mutex_lock(&lock);
    plan *p = plan_get(s, pass, false);
    const char *impl = p ? p->impl : NULL;
    g_mutex_unlock(&lock);
    return impl;
}

size_t cpu_conv_dnnl_workspace_size(const rt_conv2d_shape *s)
{
    size_t size = 0;
    g_mutex_lock(&lock);
    for (int pass = PASS_FORWARD; pass <= PASS_BACKWARD_WEIGHT; pass++)
        for (int bias = 0; bias < 2; bias++) {
            if (pass == PASS_BACKWARD_DATA && bias)
                continue;
            plan *p = plan_get(s, pass, bias);
            if (p && p->workspace > size)
                size = p->workspace;
        }
    g_mutex_unlock(&lock);
    return size;
}

/* Runs (s, pass, bias) if oneDNN takes it; false sends the caller to im2col. A failure of a
 * primitive that was created fine is a bug in this file or in oneDNN: it is loud. */
static bool dnnl_conv(const rt_conv2d_shape *s, int pass, bool with_bias, void *const *ptrs,
                      bool accumulate, void *workspace)
{
    g_mutex_lock(&lock);
    plan *p = plan_get(s, pass, with_bias);
    bool done = false;
    if (p) {
        done = plan_run(p, ptrs, accumulate, workspace);
        if (!done)
            g_critical("oneDNN convolution failed (%s): recomputing with im2col", p->impl);
    }
    g_mutex_unlock(&lock);
    return done;
}

bool cpu_conv_dnnl_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                           const float *bias, float *y, void *workspace)
{
    void *ptrs[4] = {(void *)x, (void *)w, (void *)bias, y};
    return dnnl_conv(s, PASS_FORWARD, bias != NULL, ptrs, false, workspace);
}

bool cpu_conv_dnnl_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                 float *dx, bool accumulate, void *workspace)
{
    void *ptrs[3] = {(void *)dy, (void *)w, dx};
    return dnnl_conv(s, PASS_BACKWARD_DATA, false, ptrs, accumulate, workspace);
}

bool cpu_conv_dnnl_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                   float *dw, float *dbias, bool accumulate, void *workspace)
{
    void *ptrs[4] = {(void *)x, (void *)dy, dw, dbias};
    return dnnl_conv(s, PASS_BACKWARD_WEIGHT, dbias != NULL, ptrs, accumulate, workspace);
}

#endif
