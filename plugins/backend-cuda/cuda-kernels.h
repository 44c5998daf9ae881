/* plugins/backend-cuda/cuda-kernels.h: the module's own kernels (cuda-*.cu), callable from C.
 *
 * Each launcher queues its kernels on stream and returns the launch status (cudaGetLastError):
 * a bad configuration is reported here, a fault at the next synchronisation. Launchers check
 * their sizes and return cudaErrorInvalidValue for impossible ones rather than launch. Every
 * kernel has a CPU twin in src/core/backend-cpu-*.c and computes the same formula in the same
 * precision; the comments name the differences that remain (accumulation order, libm ulps).
 * dtype arguments are rt_dtype values; float kernels take RT_F32 or RT_F64. Sizes and strides
 * are in elements. Nothing here allocates: scratch memory comes from the caller, sized by the
 * *_workspace functions. */
#ifndef RT_CUDA_KERNELS_H
#define RT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_CUDA_MAX_DIMS 5 /* RT_MAX_DIMS */

/* The rt_dtype values (robotrain/tensor.h, which the .cu files do not include: it needs GLib's
 * flags); cuda-exec.c checks that they agree. */
enum {
    RT_CUDA_F32 = 0,
    RT_CUDA_F64 = 1,
    RT_CUDA_BF16 = 2,
    RT_CUDA_F16 = 3,
    RT_CUDA_I64 = 4,
    RT_CUDA_I32 = 5,
    RT_CUDA_U8 = 6,
    RT_CUDA_BOOL = 7,
};
/* rt_l1_reduction */
enum { RT_CUDA_L1_MEAN_ALL = 0, RT_CUDA_L1_MEAN_VALID = 1 };

/* A strided walk over a shape for up to three operands: st[0] the output's strides, st[1] and
 * st[2] the inputs' (0 on broadcast axes). Element i of the walk is the row-major index i in
 * shape. Built by rt_cuda_iter_init, which merges axes that are contiguous in every operand. */
typedef struct rt_cuda_iter {
    int nd;
    int64_t n;
    int64_t shape[RT_CUDA_MAX_DIMS];
    int64_t st[3][RT_CUDA_MAX_DIMS];
} rt_cuda_iter;

/* strides may be NULL for operands n_ops..2. */
void rt_cuda_iter_init(rt_cuda_iter *it, int ndim, const int64_t *shape, int n_ops,
                       const int64_t *const *strides);

/* Data errors a kernel finds (an index out of range), in host memory the device writes; the
 * first one wins. code 0: none. */
enum { RT_CUDA_STATUS_OK = 0, RT_CUDA_STATUS_BAD_INDEX = 1 };
typedef struct rt_cuda_status {
    int32_t code;
    int32_t node;    /* the node that found it */
    int64_t value;   /* the bad index */
    int64_t element; /* where it is among the indices */
    int64_t limit;   /* the largest valid index */
} rt_cuda_status;

/* ---- element-wise (cuda-ew.cu) */
enum { RT_CUDA_ADD, RT_CUDA_SUB, RT_CUDA_MUL, RT_CUDA_DIV, RT_CUDA_RELU_BW, RT_CUDA_GELU_BW };
enum { RT_CUDA_SCALE, RT_CUDA_RELU, RT_CUDA_GELU, RT_CUDA_EXP };

/* y = a op b over it (st 0 = y, 1 = a, 2 = b); RELU_BW/GELU_BW: a = dy, b = the saved input */
cudaError_t rt_cuda_binary(int op, int dtype, const rt_cuda_iter *it, void *y, const void *a, const void *b,
                           cudaStream_t stream);
/* y = f(x) (SCALE: s * x + c) */
cudaError_t rt_cuda_unary(int op, int dtype, const rt_cuda_iter *it, void *y, const void *x, double s,
                          double c, cudaStream_t stream);
/* x [pre, 2h, post] -> y [pre, h, post] = first half * sigmoid(second half); backward dx */
cudaError_t rt_cuda_glu(int dtype, int64_t pre, int64_t h, int64_t post, const void *x, void *y,
                        cudaStream_t stream);
cudaError_t rt_cuda_glu_backward(int dtype, int64_t pre, int64_t h, int64_t post, const void *dy,
                                 const void *x, void *dx, cudaStream_t stream);

/* ---- copies, casts, fills (cuda-copy.cu): any dtype */
/* y = x element by element of esize bytes (1, 2, 4 or 8) over it (st 0 = y, 1 = x) */
cudaError_t rt_cuda_copy(size_t esize, const rt_cuda_iter *it, void *y, const void *x, cudaStream_t stream);
/* y (dtype to) = x (dtype from) over it, with rt_cast's rounding */
cudaError_t rt_cuda_cast(int from, int to, const rt_cuda_iter *it, void *y, const void *x,
                         cudaStream_t stream);
/* n contiguous f32 -> bf16/f16 storage (to = RT_BF16 or RT_F16), or rounded in f32 storage
 * (to = RT_F32 with round_to = RT_BF16/RT_F16) */
cudaError_t rt_cuda_round(int to, int round_to, int64_t n, const float *x, void *y, cudaStream_t stream);
/* n elements of dtype set to value, converted as rt_fill does */
cudaError_t rt_cuda_fill_value(int dtype, int64_t n, double value, void *y, cudaStream_t stream);
/* The bits value takes in dtype (host side; what rt_cuda_fill_value stores). */
uint64_t rt_cuda_value_bits(int dtype, double value);

/* ---- reductions and rows (cuda-reduce.cu) */
/* y[o] = scale * sum over the reduced axes, for contiguous x split into kept axes (the output's,
 * in order) and reduced ones */
typedef struct rt_cuda_sum {
    int n_kept, n_red;
    int64_t kept_size[RT_CUDA_MAX_DIMS], kept_stride[RT_CUDA_MAX_DIMS];
    int64_t red_size[RT_CUDA_MAX_DIMS], red_stride[RT_CUDA_MAX_DIMS];
    int64_t n_out, n_red_total;
    double scale;
} rt_cuda_sum;
cudaError_t rt_cuda_sum_general(int dtype, const rt_cuda_sum *p, const void *x, void *y, cudaStream_t stream);
/* y[c] = scale * sum over r of x[r, c]: column partial sums of fixed row chunks, then their sum */
size_t rt_cuda_sum_rows_workspace(int64_t rows, int64_t cols);
cudaError_t rt_cuda_sum_rows(int dtype, int64_t rows, int64_t cols, double scale, const void *x, void *y,
                             void *workspace, cudaStream_t stream);
/* softmax over rows of d */
cudaError_t rt_cuda_softmax(int dtype, int64_t rows, int64_t d, const void *x, void *y, cudaStream_t stream);
cudaError_t rt_cuda_softmax_backward(int dtype, int64_t rows, int64_t d, const void *dy, const void *y,
                                     void *dx, cudaStream_t stream);
/* layer norm over rows of d; w, b may be NULL; stats [rows, 2] = mean, 1/std */
cudaError_t rt_cuda_layer_norm(int dtype, int64_t rows, int64_t d, double eps, const void *x, const void *w,
                               const void *b, void *y, void *stats, cudaStream_t stream);
/* dx; and dw = sum dy * xhat, db = sum dy when not NULL */
size_t rt_cuda_layer_norm_backward_workspace(int64_t rows, int64_t d);
cudaError_t rt_cuda_layer_norm_backward(int dtype, int64_t rows, int64_t d, const void *dy, const void *x,
                                        const void *w, const void *stats, void *dx, void *dw, void *db,
                                        void *workspace, cudaStream_t stream);

/* ---- network ops (cuda-nn.cu) */
/* x [planes = N*C, inner] per channel c = plane % C */
cudaError_t rt_cuda_frozen_batch_norm(int dtype, int64_t planes, int64_t c, int64_t inner, double eps,
                                      const void *x, const void *w, const void *b, const void *mean,
                                      const void *var, void *y, cudaStream_t stream);
cudaError_t rt_cuda_max_pool2d(int dtype, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                               int64_t stride, int64_t pad, int64_t ho, int64_t wo, const void *x, void *y,
                               int32_t *argmax, cudaStream_t stream);
cudaError_t rt_cuda_max_pool2d_backward(int dtype, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                        int64_t stride, int64_t pad, int64_t ho, int64_t wo, const void *dy,
                                        const int32_t *argmax, void *dx, cudaStream_t stream);
/* Finds the first of n indices outside 0..rows-1 and records it in status (for node). */
cudaError_t rt_cuda_check_indices(const int64_t *idx, int64_t n, int64_t rows, int node,
                                  rt_cuda_status *status, cudaStream_t stream);
/* y[i, :] = w[idx[i], :] (zeros for a bad index); rows of d elements of esize bytes */
cudaError_t rt_cuda_embedding(size_t esize, int64_t n, int64_t d, int64_t rows, const int64_t *idx,
                              const void *w, void *y, cudaStream_t stream);
/* dw [rows, d] = sum of dy[i, :] over i with idx[i] = row, in the order of i */
cudaError_t rt_cuda_embedding_backward(int dtype, int64_t n, int64_t d, int64_t rows, const int64_t *idx,
                                       const void *dy, void *dw, cudaStream_t stream);

/* ---- randomness (cuda-random.cu). state: the graph's RNG input, i64 [seed, step, sample
 * offset, 0] in device memory. batch: size of the batch axis; post: elements after it (0: the
 * tensor has no batch axis). */
typedef struct rt_cuda_rng {
    const int64_t *state;
    int64_t node;
    int64_t batch, post;
} rt_cuda_rng;
/* y = x * 1/(1-p) where the element's word >= threshold(p), else 0; over it (0 = y, 1 = x) */
cudaError_t rt_cuda_dropout(int dtype, const rt_cuda_iter *it, const rt_cuda_rng *rng, double p, void *y,
                            const void *x, cudaStream_t stream);
/* n elements: U(a, b) or N(a, b^2) */
cudaError_t rt_cuda_rand(int dtype, int normal, int64_t n, const rt_cuda_rng *rng, double a, double b,
                         void *y, cudaStream_t stream);

/* ---- losses (cuda-loss.cu). mask: u8/bool [n / inner] (TRUE = ignore) or NULL. */
size_t rt_cuda_loss_workspace(int64_t n);
/* reduction: rt_l1_reduction */
cudaError_t rt_cuda_l1_loss(int dtype, int64_t n, int64_t inner, const uint8_t *mask, int reduction,
                            const void *pred, const void *target, void *loss, void *workspace,
                            cudaStream_t stream);
cudaError_t rt_cuda_l1_loss_backward(int dtype, int64_t n, int64_t inner, const uint8_t *mask, int reduction,
                                     const void *dloss, const void *pred, const void *target, void *dpred,
                                     void *workspace, cudaStream_t stream);
cudaError_t rt_cuda_kl_loss(int dtype, int64_t n, int64_t batch, const void *mu, const void *logvar,
                            void *loss, void *workspace, cudaStream_t stream);
cudaError_t rt_cuda_kl_loss_backward(int dtype, int64_t n, int64_t batch, const void *dloss, const void *mu,
                                     const void *logvar, void *dmu, void *dlogvar, cudaStream_t stream);

/* ---- optimizer (cuda-optim.cu). hyper: f64 per group lr, beta1, beta2, eps, weight decay,
 * then max_grad_norm last (n_hyper values); step: f64 [1]. */
cudaError_t rt_cuda_step_inc(double *step, cudaStream_t stream);
size_t rt_cuda_grad_norm_workspace(int64_t n);
cudaError_t rt_cuda_grad_norm(int dtype, int64_t n, const void *g, void *norm, void *workspace,
                              cudaStream_t stream);
cudaError_t rt_cuda_clip_grad(int dtype, int64_t n, void *g, const void *norm, const double *hyper,
                              int64_t n_hyper, cudaStream_t stream);
size_t rt_cuda_adamw_workspace(void);
cudaError_t rt_cuda_adamw(int dtype, int64_t n, void *p, const void *g, void *m, void *v,
                          const double *group_hyper, const double *step, void *workspace,
                          cudaStream_t stream);

/* ---- attention rows (cuda-attention.cu): scores/probabilities [B, H, L, S] */
typedef struct rt_cuda_att {
    int64_t B, H, L, S;
    const uint8_t *mask; /* [B, S], TRUE = ignore that key; NULL: none */
    int dropout;         /* apply dropout with p below (training graphs) */
    double p;
    rt_cuda_rng rng; /* batch = B, post unused: sample = state[2] + b */
} rt_cuda_att;
/* probs: the scaled scores in, the probabilities out (dtype); pd: when not NULL, the
 * probabilities after dropout, stored as pd_dtype (dtype, or RT_BF16/RT_F16 for f32: rounded
 * for the next GEMM) */
cudaError_t rt_cuda_att_softmax(int dtype, const rt_cuda_att *a, void *probs, int pd_dtype, void *pd,
                                cudaStream_t stream);
/* pd from the saved probabilities (backward) */
cudaError_t rt_cuda_att_redrop(int dtype, const rt_cuda_att *a, const void *probs, int pd_dtype, void *pd,
                               cudaStream_t stream);
/* dp: the gradient of pd in, of the scores out (dropout mask, softmax backward); ds: when not
 * NULL, the result also stored as ds_dtype (rounded for the next GEMMs) */
cudaError_t rt_cuda_att_dscores(int dtype, const rt_cuda_att *a, const void *probs, void *dp, int ds_dtype,
                                void *ds, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
