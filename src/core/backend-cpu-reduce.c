/* CPU kernels of the reductions, normalisations, losses and optimizer ops (the per-type bodies
 * are in backend-cpu-reduce-tmpl.h). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/backend-cpu.h"
#include "core/loss-scale-private.h"
#include "core/ops-decl.h"

#define RT_PASTE2(a, b) a##_##b
#define RT_PASTE(a, b) RT_PASTE2(a, b)

/* blocks of a full reduction; fixed, so partial sums do not depend on the thread count */
#define RED_BLOCK 16384
#define SUM_COL_BLOCK 256

typedef struct sum_job {
    const void *x;
    void *y;
    double scale;
    /* general case */
    int n_kept, n_red;
    int64_t kept_size[RT_MAX_DIMS], kept_stride[RT_MAX_DIMS];
    int64_t red_size[RT_MAX_DIMS], red_stride[RT_MAX_DIMS];
    /* leading rows case */
    int64_t rows, cols;
} sum_job;

typedef struct row_job {
    const void *a, *b;  /* the row inputs */
    void *y;
    const void *w, *bias;
    void *stats;
    void *dw, *db;
    int64_t d, rows;
    double eps;
} row_job;

typedef struct loss_job {
    const void *a, *b;
    void *y;
    const uint8_t *mask;
    int64_t n, inner;
    double scale;
    double *partial;
} loss_job;

typedef struct adamw_job {
    void *p, *m, *v;
    const void *g;
    double decay, w1, beta2, w2, bc2_sqrt, eps, step_size;
} adamw_job;

#define T float
#define SFX f32
#define SQRT sqrtf
#define EXP expf
#define FABS fabsf
#include "core/backend-cpu-reduce-tmpl.h"
#undef T
#undef SFX
#undef SQRT
#undef EXP
#undef FABS

#define T double
#define SFX f64
#define SQRT sqrt
#define EXP exp
#define FABS fabs
#include "core/backend-cpu-reduce-tmpl.h"
#undef T
#undef SFX
#undef SQRT
#undef EXP
#undef FABS

#define PICK(dtype, name) ((dtype) == RT_F32 ? name##_f32 : name##_f64)

/* ---- sum */

bool cpu_sum(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0], *y = node->out[0];
    uint32_t axes = (uint32_t)node->ip[0];
    sum_job j = {.x = cpu_ptr(ctx, x), .y = cpu_ptr(ctx, y), .scale = node->fp[0]};
    /* merge runs of adjacent axes of the same kind (x is contiguous) */
    int64_t size[RT_MAX_DIMS], stride[RT_MAX_DIMS];
    bool red[RT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        bool r = (axes & (1u << i)) != 0;
        if (x->shape[i] == 1)
            continue;
        if (n > 0 && red[n - 1] == r) {
            size[n - 1] *= x->shape[i];
            stride[n - 1] = x->stride[i];
            continue;
        }
        size[n] = x->shape[i];
        stride[n] = x->stride[i];
        red[n] = r;
        n++;
    }
    int64_t n_out = rt_tensor_numel(y);
    if (n == 2 && red[0] && !red[1]) {
        j.rows = size[0];
        j.cols = size[1];
        int64_t blocks = (j.cols + SUM_COL_BLOCK - 1) / SUM_COL_BLOCK;
        cpu_parallel(ctx, blocks, CPU_GRAIN / (j.rows * SUM_COL_BLOCK) + 1,
                     PICK(x->dtype, sum_rows), &j);
        return true;
    }
    for (int i = 0; i < n; i++) {
        if (red[i]) {
            j.red_size[j.n_red] = size[i];
            j.red_stride[j.n_red++] = stride[i];
        } else {
            j.kept_size[j.n_kept] = size[i];
            j.kept_stride[j.n_kept++] = stride[i];
        }
    }
    if (j.n_red == 0) {
        j.red_size[0] = 1;
        j.red_stride[0] = 1;
        j.n_red = 1;
    }
    int64_t per_out = rt_tensor_numel(x) / (n_out ? n_out : 1);
    cpu_parallel(ctx, n_out, CPU_GRAIN / (per_out + 1) + 1, PICK(x->dtype, sum_general), &j);
    return true;
}

/* ---- softmax, layer norm */

static int64_t last_dim(const rt_tensor *t)
{
    return t->ndim ? t->shape[t->ndim - 1] : 1;
}

bool cpu_softmax(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0];
    row_job j = {.a = cpu_ptr(ctx, x), .y = cpu_ptr(ctx, node->out[0]), .d = last_dim(x)};
    j.rows = rt_tensor_numel(x) / j.d;
    cpu_parallel(ctx, j.rows, CPU_GRAIN / j.d + 1, PICK(x->dtype, softmax_rows), &j);
    return true;
}

bool cpu_softmax_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *y = node->src[1];
    row_job j = {.a = cpu_ptr(ctx, node->src[0]), .b = cpu_ptr(ctx, y),
                 .y = cpu_ptr(ctx, node->out[0]), .d = last_dim(y)};
    j.rows = rt_tensor_numel(y) / j.d;
    cpu_parallel(ctx, j.rows, CPU_GRAIN / j.d + 1, PICK(y->dtype, softmax_backward_rows), &j);
    return true;
}

bool cpu_layer_norm(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0];
    row_job j = {.a = cpu_ptr(ctx, x), .y = cpu_ptr(ctx, node->out[0]),
                 .w = node->src[1] ? cpu_ptr(ctx, node->src[1]) : NULL,
                 .bias = node->src[2] ? cpu_ptr(ctx, node->src[2]) : NULL,
                 .stats = cpu_ptr(ctx, node->out[1]), .d = last_dim(x), .eps = node->fp[0]};
    j.rows = rt_tensor_numel(x) / j.d;
    cpu_parallel(ctx, j.rows, CPU_GRAIN / j.d + 1, PICK(x->dtype, layer_norm_rows), &j);
    return true;
}

bool cpu_layer_norm_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[1];
    row_job j = {.a = cpu_ptr(ctx, node->src[0]), .b = cpu_ptr(ctx, x),
                 .y = cpu_ptr(ctx, node->out[0]),
                 .w = node->src[2] ? cpu_ptr(ctx, node->src[2]) : NULL,
                 .stats = cpu_ptr(ctx, node->src[3]),
                 .dw = node->out[1] ? cpu_ptr(ctx, node->out[1]) : NULL,
                 .db = node->out[2] ? cpu_ptr(ctx, node->out[2]) : NULL, .d = last_dim(x)};
    j.rows = rt_tensor_numel(x) / j.d;
    cpu_parallel(ctx, j.rows, CPU_GRAIN / j.d + 1, PICK(x->dtype, layer_norm_backward_rows), &j);
    if (j.dw || j.db) {
        int64_t blocks = (j.d + SUM_COL_BLOCK - 1) / SUM_COL_BLOCK;
        cpu_parallel(ctx, blocks, 1, PICK(x->dtype, layer_norm_backward_params), &j);
    }
    return true;
}

/* ---- losses */

static int64_t n_blocks(int64_t n)
{
    return (n + RED_BLOCK - 1) / RED_BLOCK;
}

static double sum_partials(const double *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += p[i];
    return s;
}

size_t cpu_ws_l1_loss(const rt_node *node)
{
    return (size_t)n_blocks(rt_tensor_numel(node->src[0])) * sizeof(double);
}

/* fills the mask pointer and returns the denominator of the reduction */
static double l1_setup(rt_cpu_ctx *ctx, const rt_tensor *pred, const rt_tensor *mask,
                       int64_t reduction, loss_job *j)
{
    j->n = rt_tensor_numel(pred);
    j->mask = mask ? cpu_ptr(ctx, mask) : NULL;
    j->inner = mask ? j->n / rt_tensor_numel(mask) : 1;
    if (reduction == RT_L1_MEAN_ALL)
        return (double)j->n;
    int64_t valid = j->n;
    if (mask) {
        int64_t nm = rt_tensor_numel(mask), kept = 0;
        for (int64_t i = 0; i < nm; i++)
            kept += j->mask[i] == 0;
        valid = kept * j->inner;
    }
    return valid > 1 ? (double)valid : 1.0;
}

bool cpu_l1_loss(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *pred = node->src[0];
    loss_job j = {.a = cpu_ptr(ctx, pred), .b = cpu_ptr(ctx, node->src[1]),
                  .partial = cpu_workspace(ctx, node)};
    double denom = l1_setup(ctx, pred, node->src[2], node->ip[0], &j);
    int64_t nb = n_blocks(j.n);
    cpu_parallel(ctx, nb, 1, PICK(pred->dtype, l1_blocks), &j);
    double loss = sum_partials(j.partial, nb) / denom;
    if (pred->dtype == RT_F32)
        *(float *)cpu_ptr(ctx, node->out[0]) = (float)loss;
    else
        *(double *)cpu_ptr(ctx, node->out[0]) = loss;
    return true;
}

bool cpu_l1_loss_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *pred = node->src[1];
    loss_job j = {.a = cpu_ptr(ctx, pred), .b = cpu_ptr(ctx, node->src[2]),
                  .y = cpu_ptr(ctx, node->out[0])};
    double denom = l1_setup(ctx, pred, node->src[3], node->ip[0], &j);
    double g = pred->dtype == RT_F32 ? *(const float *)cpu_ptr(ctx, node->src[0])
                                     : *(const double *)cpu_ptr(ctx, node->src[0]);
    j.scale = g / denom;
    cpu_parallel(ctx, j.n, CPU_GRAIN, PICK(pred->dtype, l1_backward), &j);
    return true;
}

#define KL_KERNELS(T, SFX, EXP)                                                                \
    static double kl_sum_##SFX(const T *mu, const T *lv, int64_t n)                             \
    {                                                                                          \
        double s = 0;                                                                          \
        for (int64_t i = 0; i < n; i++)                                                        \
            s += -0.5 * (double)((T)1 + lv[i] - mu[i] * mu[i] - EXP(lv[i]));                   \
        return s;                                                                              \
    }                                                                                          \
    static void kl_backward_##SFX(const T *mu, const T *lv, T *dmu, T *dlv, int64_t n, T s)    \
    {                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                      \
            dmu[i] = s * mu[i];                                                                \
            dlv[i] = s * (T)0.5 * (EXP(lv[i]) - (T)1);                                         \
        }                                                                                      \
    }

KL_KERNELS(float, f32, expf)
KL_KERNELS(double, f64, exp)

bool cpu_kl_loss(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *mu = node->src[0];
    int64_t n = rt_tensor_numel(mu), batch = mu->shape[0];
    if (mu->dtype == RT_F32)
        *(float *)cpu_ptr(ctx, node->out[0]) =
            (float)(kl_sum_f32(cpu_ptr(ctx, mu), cpu_ptr(ctx, node->src[1]), n) / (double)batch);
    else
        *(double *)cpu_ptr(ctx, node->out[0]) =
            kl_sum_f64(cpu_ptr(ctx, mu), cpu_ptr(ctx, node->src[1]), n) / (double)batch;
    return true;
}

bool cpu_kl_loss_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *mu = node->src[1];
    int64_t n = rt_tensor_numel(mu), batch = mu->shape[0];
    if (mu->dtype == RT_F32) {
        float g = *(const float *)cpu_ptr(ctx, node->src[0]);
        kl_backward_f32(cpu_ptr(ctx, mu), cpu_ptr(ctx, node->src[2]), cpu_ptr(ctx, node->out[0]),
                        cpu_ptr(ctx, node->out[1]), n, g / (float)batch);
    } else {
        double g = *(const double *)cpu_ptr(ctx, node->src[0]);
        kl_backward_f64(cpu_ptr(ctx, mu), cpu_ptr(ctx, node->src[2]), cpu_ptr(ctx, node->out[0]),
                        cpu_ptr(ctx, node->out[1]), n, g / (double)batch);
    }
    return true;
}

/* ---- optimizer */

/* the optional scaler state of step_inc and adamw: the step's gradients overflowed */
static bool skipped(const rt_cpu_ctx *ctx, const rt_node *node, int i)
{
    return node->n_src > i && node->src[i] && rt_loss_scale_skips(cpu_ptr(ctx, node->src[i]));
}

bool cpu_step_inc(rt_cpu_ctx *ctx, const rt_node *node)
{
    if (skipped(ctx, node, 1))
        return true;
    double *step = cpu_ptr(ctx, node->src[0]);
    step[0] += 1.0;
    return true;
}

size_t cpu_ws_grad_norm(const rt_node *node)
{
    return (size_t)n_blocks(rt_tensor_numel(node->src[0])) * sizeof(double);
}

bool cpu_grad_norm(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *g = node->src[0];
    loss_job j = {.a = cpu_ptr(ctx, g), .n = rt_tensor_numel(g), .partial = cpu_workspace(ctx, node)};
    int64_t nb = n_blocks(j.n);
    cpu_parallel(ctx, nb, 1, PICK(g->dtype, square_blocks), &j);
    double norm = sqrt(sum_partials(j.partial, nb));
    if (g->dtype == RT_F32)
        *(float *)cpu_ptr(ctx, node->out[0]) = (float)norm;
    else
        *(double *)cpu_ptr(ctx, node->out[0]) = norm;
    return true;
}

/* clip_grad_norm_: coef = max / (norm + 1e-6), computed in the gradients' dtype as PyTorch's
 * tensors do, applied only when below 1 */
bool cpu_clip_grad(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *g = node->src[0];
    const double *hyper = cpu_ptr(ctx, node->src[2]);
    double max_norm = hyper[rt_tensor_numel(node->src[2]) - 1];
    if (!(max_norm > 0) || isinf(max_norm))
        return true;
    double coef;
    if (g->dtype == RT_F32)
        coef = (float)max_norm / (*(const float *)cpu_ptr(ctx, node->src[1]) + 1e-6f);
    else
        coef = max_norm / (*(const double *)cpu_ptr(ctx, node->src[1]) + 1e-6);
    if (!(coef < 1.0))
        return true;
    loss_job j = {.y = cpu_ptr(ctx, g), .n = rt_tensor_numel(g), .scale = coef};
    cpu_parallel(ctx, j.n, CPU_GRAIN, PICK(g->dtype, scale_inplace), &j);
    return true;
}

bool cpu_adamw(rt_cpu_ctx *ctx, const rt_node *node)
{
    if (skipped(ctx, node, 6))
        return true;
    const rt_tensor *p = node->src[0];
    const double *hyper = (const double *)cpu_ptr(ctx, node->src[4]) + node->ip[0] * RT_HYPER_PER_GROUP;
    double t = *(const double *)cpu_ptr(ctx, node->src[5]);
    double lr = hyper[RT_HYPER_LR], beta1 = hyper[RT_HYPER_BETA1], beta2 = hyper[RT_HYPER_BETA2];
    double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    adamw_job j = {
        .p = cpu_ptr(ctx, p), .g = cpu_ptr(ctx, node->src[1]), .m = cpu_ptr(ctx, node->src[2]),
        .v = cpu_ptr(ctx, node->src[3]), .decay = 1.0 - lr * hyper[RT_HYPER_WD],
        .w1 = 1.0 - beta1, .beta2 = beta2, .w2 = 1.0 - beta2, .bc2_sqrt = sqrt(bc2),
        .eps = hyper[RT_HYPER_EPS], .step_size = lr / bc1,
    };
    cpu_parallel(ctx, rt_tensor_numel(p), CPU_GRAIN, PICK(p->dtype, adamw_range), &j);
    return true;
}
