/* src/core/cpu/kernels.h: the CPU backend's dense kernels (internal to librobotrain).
 *
 * The graph executor (src/core/) calls these for the heavy ops; everything is f32, row-major,
 * with explicit leading dimensions, and never allocates: scratch memory comes from the caller
 * through a workspace sized by the *_workspace_size functions (the memory planner reserves it
 * once). Mixed precision is emulated by the caller rounding the inputs to bf16/f16 with
 * rt_cpu_round_*: the product of two bf16 or f16 values is exact in f32, so an f32 GEMM on
 * rounded inputs is "bf16 inputs, f32 accumulation". Threads: rt_cpu_set_num_threads. */
#ifndef ROBOTRAIN_CPU_KERNELS_H
#define ROBOTRAIN_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Number of threads the kernels may use (>= 1); 0 = the default (OMP_NUM_THREADS, else the
 * number of online CPUs). Applies to BLAS as well. Not thread-safe: call before executing.
 * All kernels run on one OpenMP pool of that size (OpenBLAS itself is kept single-threaded
 * and the GEMMs are split by the caller's pool), so nothing else should thread around them. */
void rt_cpu_set_num_threads(int n);
int rt_cpu_get_num_threads(void);

/* C[M,N] = alpha * op(A) @ op(B) + beta * C, op(X) = X or X^T. A is M x K (or K x M when
 * trans_a), B is K x N (or N x K when trans_b). beta = 0 ignores C's old contents (NaN too). */
void rt_cpu_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                     int64_t ldc);

/* batch independent GEMMs; matrix i starts at A + i*stride_a, B + i*stride_b, C + i*stride_c
 * (strides in elements; a stride of 0 broadcasts that operand). */
void rt_cpu_gemm_batched_f32(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                             int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                             const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                             int64_t ldc, int64_t stride_c);

/* 2-D convolution, NCHW activations, OIHW weights (groups = 1), PyTorch semantics:
 * h_out = (h + 2*pad_h - dil_h*(kh-1) - 1) / stride_h + 1 (same for w). */
typedef struct rt_conv2d_shape {
    int64_t n, c_in, h, w;          /* input */
    int64_t c_out, kh, kw;          /* weight [c_out, c_in, kh, kw] */
    int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int64_t h_out, w_out;           /* filled by rt_cpu_conv2d_shape_init */
} rt_conv2d_shape;

/* Computes h_out/w_out; false when the shape is impossible (non-positive output). */
bool rt_cpu_conv2d_shape_init(rt_conv2d_shape *s);

/* Scratch bytes the three conv functions need for shape s (the max over all three). With
 * oneDNN this also creates (once per shape, kept for the process) the primitives the conv
 * functions will use, so call it at planning time, not in the step. The conv functions may
 * be called from several threads: calls through oneDNN are serialised. */
size_t rt_cpu_conv2d_workspace_size(const rt_conv2d_shape *s);

/* y[n, c_out, h_out, w_out] = conv(x, w) + bias (bias may be NULL). */
void rt_cpu_conv2d_forward_f32(const rt_conv2d_shape *s, const float *x, const float *w,
                               const float *bias, float *y, void *workspace);
/* dx = conv_transpose(dy, w); overwrites dx (accumulate = false) or adds to it (true). */
void rt_cpu_conv2d_backward_data_f32(const rt_conv2d_shape *s, const float *dy, const float *w,
                                     float *dx, bool accumulate, void *workspace);
/* dw (and dbias when not NULL) from x and dy; overwrite or accumulate as above. */
void rt_cpu_conv2d_backward_weight_f32(const rt_conv2d_shape *s, const float *x, const float *dy,
                                       float *dw, float *dbias, bool accumulate, void *workspace);

/* Max-pool 2-D (NCHW), PyTorch semantics with -inf padding; argmax (flat index into the
 * input plane h*w) is stored for the backward pass. */
void rt_cpu_maxpool2d_forward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                  int64_t stride, int64_t pad, int64_t h_out, int64_t w_out,
                                  const float *x, float *y, int32_t *argmax);
void rt_cpu_maxpool2d_backward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                   int64_t w_out, const float *dy, const int32_t *argmax, float *dx,
                                   bool accumulate);

/* Round f32 values in place to the nearest bf16 / f16 value (round-to-nearest-even; f16
 * overflow becomes +-inf, NaN stays NaN), keeping them stored as f32. */
void rt_cpu_round_bf16(float *x, size_t n);
void rt_cpu_round_f16(float *x, size_t n);
/* Conversions to and from the 16-bit storage formats (same rounding). */
void rt_cpu_f32_to_bf16(const float *x, uint16_t *y, size_t n);
void rt_cpu_bf16_to_f32(const uint16_t *x, float *y, size_t n);
void rt_cpu_f32_to_f16(const float *x, uint16_t *y, size_t n);
void rt_cpu_f16_to_f32(const uint16_t *x, float *y, size_t n);

#endif
