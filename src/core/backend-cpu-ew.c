/* CPU kernels of the element-wise ops: one strided N-d iterator (dims merged where the memory
 * allows, so most loops run over long unit-stride rows the compiler vectorises) feeding small
 * per-op row functions, for f32 and f64. Also fill, cast, pad, concat and the random ops. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/backend-cpu.h"
#include "core/cpu/kernels.h"
#include "core/ops-decl.h"
#include "core/philox.h"

typedef struct ew_job ew_job;
/* Processes n elements of one row; e0 is the row-major index (in the iteration shape) of its
 * first element; strides are in elements. */
typedef void (*ew_row_fn)(const ew_job *job, int64_t e0, int64_t n, char *y, int64_t sy,
                          const char *a, int64_t sa, const char *b, int64_t sb);

struct ew_job {
    ew_row_fn row;
    int nd;
    int64_t shape[RT_MAX_DIMS];
    int64_t st[3][RT_MAX_DIMS]; /* element strides of y, a, b */
    char *ptr[3];
    size_t esize[3];
    int64_t inner, rows;
    /* parameters of the row functions */
    double s, c;
    rt_dtype from, to;
    uint32_t threshold;          /* dropout */
    rt_rng_stream rng;
    int64_t batch_axis_stride;   /* elements after the batch axis (post), 0: no batch axis */
    int64_t batch_size;
    int64_t sample_offset;
};

/* Sets up the iteration over shape for y (and optional a, b) with the given strides, merging
 * adjacent axes that are contiguous in every operand. */
static void ew_setup(ew_job *job, int ndim, const int64_t *shape, int n_ops,
                     int64_t (*strides)[RT_MAX_DIMS])
{
    int nd = 0;
    int64_t sh[RT_MAX_DIMS], st[3][RT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue;
        bool merge = nd > 0;
        for (int k = 0; merge && k < n_ops; k++)
            merge = st[k][nd - 1] == strides[k][i] * shape[i];
        if (merge) {
            sh[nd - 1] *= shape[i];
            for (int k = 0; k < n_ops; k++)
                st[k][nd - 1] = strides[k][i];
            continue;
        }
        sh[nd] = shape[i];
        for (int k = 0; k < n_ops; k++)
            st[k][nd] = strides[k][i];
        nd++;
    }
    if (nd == 0) {
        sh[0] = 1;
        for (int k = 0; k < 3; k++)
            st[k][0] = 1;
        nd = 1;
    }
    job->nd = nd;
    for (int i = 0; i < nd; i++) {
        job->shape[i] = sh[i];
        for (int k = 0; k < 3; k++)
            job->st[k][i] = k < n_ops ? st[k][i] : 0;
    }
    job->inner = sh[nd - 1];
    job->rows = rt_shape_numel(nd - 1, sh);
}

/* Long rows are cut into blocks so that a fully merged (one-row) loop still spreads over the
 * threads; a task is one block of one row. */
#define EW_BLOCK 8192

static void ew_range(void *arg, int64_t begin, int64_t end)
{
    const ew_job *job = arg;
    int nd = job->nd;
    int64_t blk = job->inner < EW_BLOCK ? job->inner : EW_BLOCK;
    int64_t nblk = (job->inner + blk - 1) / blk;
    for (int64_t task = begin; task < end; task++) {
        int64_t r = task / nblk, start = (task % nblk) * blk;
        int64_t n = MIN(blk, job->inner - start);
        int64_t off[3] = {0, 0, 0}, rem = r;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t c = rem % job->shape[d];
            rem /= job->shape[d];
            for (int k = 0; k < 3; k++)
                off[k] += c * job->st[k][d];
        }
        for (int k = 0; k < 3; k++)
            off[k] += start * job->st[k][nd - 1];
        job->row(job, r * job->inner + start, n, job->ptr[0] + off[0] * (int64_t)job->esize[0],
                 job->st[0][nd - 1], job->ptr[1] ? job->ptr[1] + off[1] * (int64_t)job->esize[1] : NULL,
                 job->st[1][nd - 1], job->ptr[2] ? job->ptr[2] + off[2] * (int64_t)job->esize[2] : NULL,
                 job->st[2][nd - 1]);
    }
}

static void ew_run(rt_cpu_ctx *ctx, ew_job *job)
{
    int64_t blk = job->inner < EW_BLOCK ? job->inner : EW_BLOCK;
    if (blk < 1)
        return;
    int64_t tasks = job->rows * ((job->inner + blk - 1) / blk);
    cpu_parallel(ctx, tasks, CPU_GRAIN / blk + 1, ew_range, job);
}

/* y (contiguous, written) = f(x[, b]) with x, b read through broadcast strides onto y */
static void ew_prepare(rt_cpu_ctx *ctx, ew_job *job, const rt_tensor *y, const rt_tensor *a,
                       const rt_tensor *b)
{
    int64_t st[3][RT_MAX_DIMS];
    memcpy(st[0], y->stride, sizeof st[0]);
    int n = 1;
    job->ptr[0] = cpu_ptr(ctx, y);
    job->esize[0] = rt_dtype_size(y->dtype);
    job->ptr[1] = job->ptr[2] = NULL;
    if (a) {
        rt_broadcast_strides(a, y->ndim, y->shape, st[1]);
        job->ptr[1] = cpu_ptr(ctx, a);
        job->esize[1] = rt_dtype_size(a->dtype);
        n = 2;
    }
    if (b) {
        rt_broadcast_strides(b, y->ndim, y->shape, st[2]);
        job->ptr[2] = cpu_ptr(ctx, b);
        job->esize[2] = rt_dtype_size(b->dtype);
        n = 3;
    }
    /* broadcast strides of a same-shape operand are its own strides (0 only on size 1) */
    ew_setup(job, y->ndim, y->shape, n, st);
}

/* ---- binary */

#define BINARY_ROW(NAME, T, EXPR)                                                              \
    static void NAME(const ew_job *job, int64_t e0, int64_t n, char *y_, int64_t sy,           \
                     const char *a_, int64_t sa, const char *b_, int64_t sb)                   \
    {                                                                                          \
        (void)job; (void)e0; (void)sy;                                                         \
        T *restrict y = (T *)y_;                                                               \
        const T *a = (const T *)a_, *b = (const T *)b_;                                        \
        if (sa == 1 && sb == 1)                                                                \
            for (int64_t i = 0; i < n; i++) { T x = a[i], z = b[i]; y[i] = (EXPR); }           \
        else if (sa == 1 && sb == 0) {                                                         \
            T z = b[0];                                                                        \
            for (int64_t i = 0; i < n; i++) { T x = a[i]; y[i] = (EXPR); }                     \
        } else if (sa == 0 && sb == 1) {                                                       \
            T x = a[0];                                                                        \
            for (int64_t i = 0; i < n; i++) { T z = b[i]; y[i] = (EXPR); }                     \
        } else                                                                                 \
            for (int64_t i = 0; i < n; i++) { T x = a[i * sa], z = b[i * sb]; y[i] = (EXPR); } \
    }

BINARY_ROW(add_f32, float, x + z)
BINARY_ROW(add_f64, double, x + z)
BINARY_ROW(sub_f32, float, x - z)
BINARY_ROW(sub_f64, double, x - z)
BINARY_ROW(mul_f32, float, x * z)
BINARY_ROW(mul_f64, double, x * z)
BINARY_ROW(div_f32, float, x / z)
BINARY_ROW(div_f64, double, x / z)
/* (dy = x, saved = z) */
BINARY_ROW(relu_bw_f32, float, z > 0 ? x : 0.0f)
BINARY_ROW(relu_bw_f64, double, z > 0 ? x : 0.0)
BINARY_ROW(gelu_bw_f32, float,
           x * (0.5f * (1.0f + erff(z * (float)M_SQRT1_2)) +
                z * expf(-0.5f * z * z) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2)))
BINARY_ROW(gelu_bw_f64, double,
           x * (0.5 * (1.0 + erf(z * M_SQRT1_2)) + z * exp(-0.5 * z * z) * (0.5 * M_2_SQRTPI * M_SQRT1_2)))

static bool run_binary(rt_cpu_ctx *ctx, const rt_node *node, ew_row_fn f32, ew_row_fn f64)
{
    ew_job job = {0};
    const rt_tensor *y = node->out[0];
    job.row = y->dtype == RT_F32 ? f32 : f64;
    ew_prepare(ctx, &job, y, node->src[0], node->src[1]);
    ew_run(ctx, &job);
    return true;
}

bool cpu_binary(rt_cpu_ctx *ctx, const rt_node *node)
{
    switch ((rt_op)node->op) {
    case RT_OP_ADD: return run_binary(ctx, node, add_f32, add_f64);
    case RT_OP_SUB: return run_binary(ctx, node, sub_f32, sub_f64);
    case RT_OP_MUL: return run_binary(ctx, node, mul_f32, mul_f64);
    case RT_OP_DIV: return run_binary(ctx, node, div_f32, div_f64);
    default: return CPU_FAIL(ctx, "not a binary op");
    }
}

bool cpu_relu_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    return run_binary(ctx, node, relu_bw_f32, relu_bw_f64);
}

bool cpu_gelu_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    return run_binary(ctx, node, gelu_bw_f32, gelu_bw_f64);
}

/* ---- unary */

#define UNARY_ROW(NAME, T, EXPR)                                                               \
    static void NAME(const ew_job *job, int64_t e0, int64_t n, char *y_, int64_t sy,           \
                     const char *a_, int64_t sa, const char *b_, int64_t sb)                   \
    {                                                                                          \
        (void)e0; (void)sy; (void)b_; (void)sb;                                                \
        const T s = (T)job->s, c = (T)job->c;                                                  \
        (void)s; (void)c;                                                                      \
        T *restrict y = (T *)y_;                                                               \
        const T *a = (const T *)a_;                                                            \
        if (sa == 1)                                                                           \
            for (int64_t i = 0; i < n; i++) { T x = a[i]; y[i] = (EXPR); }                     \
        else                                                                                   \
            for (int64_t i = 0; i < n; i++) { T x = a[i * sa]; y[i] = (EXPR); }                \
    }

UNARY_ROW(scale_f32, float, s * x + c)
UNARY_ROW(scale_f64, double, s * x + c)
UNARY_ROW(relu_f32, float, x > 0 ? x : 0.0f)
UNARY_ROW(relu_f64, double, x > 0 ? x : 0.0)
UNARY_ROW(gelu_f32, float, 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)))
UNARY_ROW(gelu_f64, double, 0.5 * x * (1.0 + erf(x * M_SQRT1_2)))
UNARY_ROW(exp_f32, float, expf(x))
UNARY_ROW(exp_f64, double, exp(x))

static bool run_unary(rt_cpu_ctx *ctx, const rt_node *node, ew_row_fn f32, ew_row_fn f64)
{
    ew_job job = {0};
    const rt_tensor *y = node->out[0];
    job.row = y->dtype == RT_F32 ? f32 : f64;
    job.s = node->fp[0];
    job.c = node->fp[1];
    ew_prepare(ctx, &job, y, node->src[0], NULL);
    ew_run(ctx, &job);
    return true;
}

bool cpu_scale(rt_cpu_ctx *ctx, const rt_node *node) { return run_unary(ctx, node, scale_f32, scale_f64); }
bool cpu_relu(rt_cpu_ctx *ctx, const rt_node *node) { return run_unary(ctx, node, relu_f32, relu_f64); }
bool cpu_gelu(rt_cpu_ctx *ctx, const rt_node *node) { return run_unary(ctx, node, gelu_f32, gelu_f64); }
bool cpu_exp(rt_cpu_ctx *ctx, const rt_node *node) { return run_unary(ctx, node, exp_f32, exp_f64); }

/* ---- copies: contiguous, pad, concat (any dtype, by element size) */

#define COPY_ROW(NAME, T)                                                                      \
    static void NAME(const ew_job *job, int64_t e0, int64_t n, char *y_, int64_t sy,           \
                     const char *a_, int64_t sa, const char *b_, int64_t sb)                   \
    {                                                                                          \
        (void)job; (void)e0; (void)b_; (void)sb;                                               \
        T *restrict y = (T *)y_;                                                               \
        const T *a = (const T *)a_;                                                            \
        if (sa == 1 && sy == 1)                                                                \
            memcpy(y, a, (size_t)n * sizeof(T));                                               \
        else                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                    \
                y[i * sy] = a[i * sa];                                                         \
    }

COPY_ROW(copy_1, uint8_t)
COPY_ROW(copy_2, uint16_t)
COPY_ROW(copy_4, uint32_t)
COPY_ROW(copy_8, uint64_t)

static ew_row_fn copy_row(size_t esize)
{
    switch (esize) {
    case 1: return copy_1;
    case 2: return copy_2;
    case 4: return copy_4;
    default: return copy_8;
    }
}

/* Copies x (any strides) into the region of y that starts at element y_offset and has y's
 * strides and x's shape. */
static void copy_into(rt_cpu_ctx *ctx, const rt_tensor *x, const rt_tensor *y, int64_t y_offset)
{
    ew_job job = {0};
    int64_t st[3][RT_MAX_DIMS];
    memcpy(st[0], y->stride, sizeof st[0]);
    memcpy(st[1], x->stride, sizeof st[1]);
    size_t es = rt_dtype_size(x->dtype);
    job.row = copy_row(es);
    job.ptr[0] = (char *)cpu_ptr(ctx, y) + y_offset * (int64_t)es;
    job.ptr[1] = cpu_ptr(ctx, x);
    job.esize[0] = job.esize[1] = es;
    ew_setup(&job, x->ndim, x->shape, 2, st);
    ew_run(ctx, &job);
}

bool cpu_copy(rt_cpu_ctx *ctx, const rt_node *node)
{
    copy_into(ctx, node->src[0], node->out[0], 0);
    return true;
}

bool cpu_pad(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *y = node->out[0];
    memset(cpu_ptr(ctx, y), 0, rt_tensor_nbytes(y));
    int axis = (int)node->ip[0];
    copy_into(ctx, node->src[0], y, node->ip[1] * y->stride[axis]);
    return true;
}

bool cpu_concat(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *y = node->out[0];
    int axis = (int)node->ip[0];
    int64_t at = 0;
    for (int i = 0; i < node->n_src; i++) {
        copy_into(ctx, node->src[i], y, at * y->stride[axis]);
        at += node->src[i]->shape[axis];
    }
    return true;
}

/* ---- cast (any dtype to any dtype) */

static double load_any(rt_dtype d, const char *p)
{
    switch (d) {
    case RT_F32: return *(const float *)p;
    case RT_F64: return *(const double *)p;
    case RT_BF16: { float f; rt_cpu_bf16_to_f32((const uint16_t *)p, &f, 1); return f; }
    case RT_F16: { float f; rt_cpu_f16_to_f32((const uint16_t *)p, &f, 1); return f; }
    case RT_I64: return (double)*(const int64_t *)p;
    case RT_I32: return *(const int32_t *)p;
    case RT_U8: return *(const uint8_t *)p;
    case RT_BOOL: return *(const uint8_t *)p != 0;
    default: return 0;
    }
}

static void store_any(rt_dtype d, char *p, double v, const char *src, rt_dtype from)
{
    switch (d) {
    case RT_F32: *(float *)p = (float)v; break;
    case RT_F64: *(double *)p = v; break;
    case RT_BF16: { float f = (float)v; rt_cpu_f32_to_bf16(&f, (uint16_t *)p, 1); break; }
    case RT_F16: { float f = (float)v; rt_cpu_f32_to_f16(&f, (uint16_t *)p, 1); break; }
    case RT_I64: /* keep every bit of an integer source */
        *(int64_t *)p = from == RT_I64 ? *(const int64_t *)src : (int64_t)v;
        break;
    case RT_I32: *(int32_t *)p = (int32_t)v; break;
    case RT_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
    case RT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
    }
}

static void cast_row(const ew_job *job, int64_t e0, int64_t n, char *y, int64_t sy, const char *a,
                     int64_t sa, const char *b, int64_t sb)
{
    (void)e0; (void)b; (void)sb;
    if (job->from == RT_F32 && job->to == RT_BF16 && sa == 1 && sy == 1) {
        rt_cpu_f32_to_bf16((const float *)a, (uint16_t *)y, (size_t)n);
        return;
    }
    if (job->from == RT_F32 && job->to == RT_F16 && sa == 1 && sy == 1) {
        rt_cpu_f32_to_f16((const float *)a, (uint16_t *)y, (size_t)n);
        return;
    }
    if (job->from == RT_BF16 && job->to == RT_F32 && sa == 1 && sy == 1) {
        rt_cpu_bf16_to_f32((const uint16_t *)a, (float *)y, (size_t)n);
        return;
    }
    if (job->from == RT_F16 && job->to == RT_F32 && sa == 1 && sy == 1) {
        rt_cpu_f16_to_f32((const uint16_t *)a, (float *)y, (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *src = a + i * sa * (int64_t)job->esize[1];
        store_any(job->to, y + i * sy * (int64_t)job->esize[0], load_any(job->from, src), src,
                  job->from);
    }
}

bool cpu_cast(rt_cpu_ctx *ctx, const rt_node *node)
{
    ew_job job = {0};
    job.row = cast_row;
    job.from = node->src[0]->dtype;
    job.to = node->out[0]->dtype;
    ew_prepare(ctx, &job, node->out[0], node->src[0], NULL);
    ew_run(ctx, &job);
    return true;
}

/* ---- fill */

bool cpu_fill(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *y = node->out[0];
    int64_t n = rt_tensor_numel(y);
    char *p = cpu_ptr(ctx, y);
    double v = node->fp[0];
    if (y->dtype == RT_F32) {
        float f = (float)v, *q = (float *)p;
        for (int64_t i = 0; i < n; i++)
            q[i] = f;
    } else if (y->dtype == RT_F64) {
        double *q = (double *)p;
        for (int64_t i = 0; i < n; i++)
            q[i] = v;
    } else {
        size_t es = rt_dtype_size(y->dtype);
        store_any(y->dtype, p, v, p, RT_F64);
        for (int64_t i = 1; i < n; i++)
            memcpy(p + i * (int64_t)es, p, es);
    }
    return true;
}

/* ---- glu: x [pre, 2h, post] -> [pre, h, post] */

typedef struct glu_job {
    rt_cpu_ctx *ctx;
    const rt_node *node;
    int64_t pre, h, post;
} glu_job;

static void glu_dims(const rt_tensor *x, int axis, int64_t *pre, int64_t *h, int64_t *post)
{
    *pre = rt_shape_numel(axis, x->shape);
    *h = x->shape[axis] / 2;
    *post = rt_shape_numel(x->ndim - axis - 1, x->shape + axis + 1);
}

#define GLU_KERNELS(T, SFX, EXP)                                                               \
    static void glu_fwd_##SFX(void *arg, int64_t begin, int64_t end)                           \
    {                                                                                          \
        const glu_job *j = arg;                                                                \
        const T *x = cpu_ptr(j->ctx, j->node->src[0]);                                         \
        T *y = cpu_ptr(j->ctx, j->node->out[0]);                                               \
        for (int64_t r = begin; r < end; r++) { /* r = p * h + i */                            \
            int64_t p = r / j->h, i = r % j->h;                                                \
            const T *a = x + (p * 2 * j->h + i) * j->post, *b = a + j->h * j->post;            \
            T *out = y + r * j->post;                                                          \
            for (int64_t q = 0; q < j->post; q++)                                              \
                out[q] = a[q] / ((T)1 + EXP(-b[q]));                                           \
        }                                                                                      \
    }                                                                                          \
    static void glu_bwd_##SFX(void *arg, int64_t begin, int64_t end)                           \
    {                                                                                          \
        const glu_job *j = arg;                                                                \
        const T *dy = cpu_ptr(j->ctx, j->node->src[0]), *x = cpu_ptr(j->ctx, j->node->src[1]); \
        T *dx = cpu_ptr(j->ctx, j->node->out[0]);                                              \
        for (int64_t r = begin; r < end; r++) {                                                \
            int64_t p = r / j->h, i = r % j->h;                                                \
            int64_t ia = (p * 2 * j->h + i) * j->post, ib = ia + j->h * j->post;               \
            const T *g = dy + r * j->post;                                                     \
            for (int64_t q = 0; q < j->post; q++) {                                            \
                T a = x[ia + q], sg = (T)1 / ((T)1 + EXP(-x[ib + q]));                         \
                dx[ia + q] = g[q] * sg;                                                        \
                dx[ib + q] = g[q] * a * sg * ((T)1 - sg);                                      \
            }                                                                                  \
        }                                                                                      \
    }

GLU_KERNELS(float, f32, expf)
GLU_KERNELS(double, f64, exp)

bool cpu_glu(rt_cpu_ctx *ctx, const rt_node *node)
{
    glu_job j = {ctx, node, 0, 0, 0};
    glu_dims(node->src[0], (int)node->ip[0], &j.pre, &j.h, &j.post);
    cpu_parallel(ctx, j.pre * j.h, CPU_GRAIN / j.post + 1,
                 node->src[0]->dtype == RT_F32 ? glu_fwd_f32 : glu_fwd_f64, &j);
    return true;
}

bool cpu_glu_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    glu_job j = {ctx, node, 0, 0, 0};
    glu_dims(node->src[1], (int)node->ip[0], &j.pre, &j.h, &j.post);
    cpu_parallel(ctx, j.pre * j.h, CPU_GRAIN / j.post + 1,
                 node->src[1]->dtype == RT_F32 ? glu_bwd_f32 : glu_bwd_f64, &j);
    return true;
}

/* ---- randomness. Element e (row-major in the output) of a tensor with batch axis k and
 * post = elements after axis k: sample = (e / post) % B + offset, index within the sample =
 * (e / (post * B)) * post + e % post. Without a batch axis: sample 0, index e. */

static void rng_setup(ew_job *job, const rt_cpu_ctx *ctx, const rt_node *node, const rt_tensor *y,
                      int batch_axis, int64_t rng_id)
{
    const int64_t *state = cpu_ptr(ctx, node->src[node->op == RT_OP_DROPOUT ? 1 : 0]);
    job->rng = rt_rng_stream_make(state, rng_id);
    job->sample_offset = state[2];
    if (batch_axis >= 0 && batch_axis < y->ndim) {
        job->batch_size = y->shape[batch_axis];
        job->batch_axis_stride = rt_shape_numel(y->ndim - batch_axis - 1, y->shape + batch_axis + 1);
    } else {
        job->batch_size = 1;
        job->batch_axis_stride = 0;
    }
}

/* The sample and index within it of output element e, and how many elements from e on stay
 * in the same sample with consecutive indices (up to end). */
static inline int64_t rng_segment(const ew_job *job, int64_t e, int64_t end, uint64_t *sample,
                                  uint64_t *within)
{
    if (!job->batch_axis_stride) {
        *sample = 0;
        *within = (uint64_t)e;
        return end - e;
    }
    int64_t post = job->batch_axis_stride, B = job->batch_size;
    int64_t blk = e / post, in_blk = e % post;
    *sample = (uint64_t)(blk % B + job->sample_offset);
    *within = (uint64_t)((blk / B) * post + in_blk);
    return MIN(post - in_blk, end - e);
}

#define DROPOUT_ROW(NAME, T)                                                                   \
    static void NAME(const ew_job *job, int64_t e0, int64_t n, char *y_, int64_t sy,           \
                     const char *a_, int64_t sa, const char *b_, int64_t sb)                   \
    {                                                                                          \
        (void)sy; (void)b_; (void)sb;                                                          \
        T *y = (T *)y_;                                                                        \
        const T *a = (const T *)a_;                                                            \
        const T scale = (T)job->s;                                                             \
        const uint32_t thr = job->threshold;                                                   \
        uint32_t w[RT_RNG_CHUNK];                                                              \
        for (int64_t i = 0; i < n;) {                                                          \
            uint64_t sample, within;                                                           \
            int64_t seg = rng_segment(job, e0 + i, e0 + n, &sample, &within);                  \
            int c = rt_rng_chunk(within, seg);                                                 \
            rt_rng_fill(&job->rng, sample, within, c, w);                                      \
            if (sa == 1)                                                                       \
                for (int k = 0; k < c; k++)                                                    \
                    y[i + k] = w[k] >= thr ? a[i + k] * scale : (T)0;                          \
            else                                                                               \
                for (int k = 0; k < c; k++)                                                    \
                    y[i + k] = w[k] >= thr ? a[(i + k) * sa] * scale : (T)0;                   \
            i += c;                                                                            \
        }                                                                                      \
    }

DROPOUT_ROW(dropout_f32, float)
DROPOUT_ROW(dropout_f64, double)

bool cpu_dropout(rt_cpu_ctx *ctx, const rt_node *node)
{
    ew_job job = {0};
    const rt_tensor *y = node->out[0];
    job.row = y->dtype == RT_F32 ? dropout_f32 : dropout_f64;
    job.threshold = rt_rng_drop_threshold(node->fp[0]);
    job.s = 1.0 / (1.0 - node->fp[0]);
    rng_setup(&job, ctx, node, y, (int)node->ip[1], node->ip[0]);
    /* iterate in y's own shape so that e0 is the element's index in y */
    int64_t st[3][RT_MAX_DIMS];
    memcpy(st[0], y->stride, sizeof st[0]);
    rt_broadcast_strides(node->src[0], y->ndim, y->shape, st[1]);
    job.ptr[0] = cpu_ptr(ctx, y);
    job.ptr[1] = cpu_ptr(ctx, node->src[0]);
    job.esize[0] = job.esize[1] = rt_dtype_size(y->dtype);
    ew_setup(&job, y->ndim, y->shape, 2, st);
    ew_run(ctx, &job);
    return true;
}

typedef struct rand_job {
    ew_job ew;
    const rt_node *node;
    void *y;
    bool normal, f64;
    double a, b;
} rand_job;

static void rand_range(void *arg, int64_t begin, int64_t end)
{
    rand_job *j = arg;
    /* whole blocks of four, so a normal's Box-Muller partner word is always at hand */
    uint32_t w[RT_RNG_CHUNK + 4];
    for (int64_t e = begin; e < end;) {
        uint64_t sample, within;
        int64_t seg = rng_segment(&j->ew, e, end, &sample, &within);
        int c = rt_rng_chunk(within, seg);
        uint64_t first = within - within % 4;
        int span = (int)(within % 4) + c;
        rt_rng_fill(&j->ew.rng, sample, first, (span + 3) / 4 * 4, w);
        for (int k = 0; k < c; k++) {
            int at = (int)(within % 4) + k;
            double v;
            if (j->normal) {
                double z0, z1;
                rt_rng_normal2(w[at & ~1], w[at | 1], &z0, &z1);
                v = j->a + j->b * ((at & 1) ? z1 : z0);
            } else {
                v = j->a + (j->b - j->a) * rt_rng_unit(w[at]);
            }
            if (j->f64)
                ((double *)j->y)[e + k] = v;
            else
                ((float *)j->y)[e + k] = (float)v;
        }
        e += c;
    }
}

static bool run_random(rt_cpu_ctx *ctx, const rt_node *node, bool normal)
{
    rand_job j = {0};
    const rt_tensor *y = node->out[0];
    rng_setup(&j.ew, ctx, node, y, (int)node->ip[1], node->ip[0]);
    j.node = node;
    j.y = cpu_ptr(ctx, y);
    j.normal = normal;
    j.f64 = y->dtype == RT_F64;
    j.a = node->fp[0];
    j.b = node->fp[1];
    cpu_parallel(ctx, rt_tensor_numel(y), CPU_GRAIN / 8, rand_range, &j);
    return true;
}

bool cpu_rand_uniform(rt_cpu_ctx *ctx, const rt_node *node) { return run_random(ctx, node, false); }
bool cpu_rand_normal(rt_cpu_ctx *ctx, const rt_node *node) { return run_random(ctx, node, true); }
