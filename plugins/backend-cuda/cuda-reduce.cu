/* plugins/backend-cuda/cuda-reduce.cu: sums over axes, softmax and layer norm (forward and
 * backward), f32 and f64. Twins: src/core/backend-cpu-reduce.c and backend-cpu-reduce-tmpl.h.
 * As there, sums accumulate in double and each output is the work of one warp or block in a
 * fixed order (column sums: fixed row chunks, added in chunk order), so results do not depend
 * on scheduling; the order differs from the CPU's, which only moves the last bits. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

/* offset of index r decoded over n dims (last fastest) */
__device__ __forceinline__ int64_t decode(int64_t r, int n, const int64_t *size, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (r % size[d]) * stride[d];
        r /= size[d];
    }
    return off;
}

/* one warp per output */
template <typename T> __global__ void sum_warp_kernel(rt_cuda_sum p, const T *x, T *y)
{
    const unsigned lane = threadIdx.x & 31u, warps = blockDim.x >> 5;
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps + (threadIdx.x >> 5); o < p.n_out;
         o += static_cast<int64_t>(gridDim.x) * warps) {
        const T *base = x + decode(o, p.n_kept, p.kept_size, p.kept_stride);
        double acc = 0;
        for (int64_t r = lane; r < p.n_red_total; r += 32)
            acc += static_cast<double>(base[decode(r, p.n_red, p.red_size, p.red_stride)]);
        acc = warp_sum(acc);
        if (lane == 0)
            y[o] = static_cast<T>(acc * p.scale);
    }
}

/* one block per output, for long reductions */
template <typename T> __global__ void sum_block_kernel(rt_cuda_sum p, const T *x, T *y)
{
    for (int64_t o = blockIdx.x; o < p.n_out; o += gridDim.x) {
        const T *base = x + decode(o, p.n_kept, p.kept_size, p.kept_stride);
        double acc = 0;
        for (int64_t r = threadIdx.x; r < p.n_red_total; r += blockDim.x)
            acc += static_cast<double>(base[decode(r, p.n_red, p.red_size, p.red_stride)]);
        acc = block_sum(acc);
        if (threadIdx.x == 0)
            y[o] = static_cast<T>(acc * p.scale);
    }
}

/* Column sums of [rows, cols] in two passes: chunk k of rows_per_chunk rows -> partial[k][c],
 * then the chunks in order. */
struct chunking {
    int64_t n_chunks, rows_per_chunk;
};

inline chunking chunks_of(int64_t rows)
{
    int64_t n = (rows + 63) / 64;
    if (n > 512)
        n = 512;
    if (n < 1)
        n = 1;
    chunking c = {n, (rows + n - 1) / n};
    return c;
}

template <typename T>
__global__ void column_partials_kernel(int64_t rows, int64_t cols, int64_t rows_per_chunk, const T *x,
                                       double *partial)
{
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
    double acc = 0;
    for (int64_t r = r0; r < r1; r++)
        acc += static_cast<double>(x[r * cols + c]);
    partial[blockIdx.y * cols + c] = acc;
}

template <typename T>
__global__ void column_finish_kernel(int64_t cols, int64_t n_chunks, double scale, const double *partial,
                                     T *y)
{
    RT_GRID_STRIDE(c, cols)
    {
        double acc = 0;
        for (int64_t k = 0; k < n_chunks; k++)
            acc += partial[k * cols + c];
        y[c] = static_cast<T>(acc * scale);
    }
}

template <typename T> __global__ void softmax_kernel(int64_t rows, int64_t d, const T *x_, T *y_)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = x_ + r * d;
        T *y = y_ + r * d;
        T m = -INFINITY;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            m = x[i] > m ? x[i] : m;
        m = block_max(m, T(-INFINITY));
        double s = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            s += static_cast<double>(dexp(x[i] - m));
        s = block_sum(s);
        const T inv = static_cast<T>(1.0 / s);
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            y[i] = dexp(x[i] - m) * inv;
    }
}

template <typename T>
__global__ void softmax_backward_kernel(int64_t rows, int64_t d, const T *dy_, const T *y_, T *dx_)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *dy = dy_ + r * d, *y = y_ + r * d;
        T *dx = dx_ + r * d;
        double s = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            s += static_cast<double>(dy[i]) * y[i];
        const T st = static_cast<T>(block_sum(s));
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            dx[i] = y[i] * (dy[i] - st);
    }
}

template <typename T>
__global__ void layer_norm_kernel(int64_t rows, int64_t d, double eps, const T *x_, const T *w, const T *b,
                                  T *y_, T *stats)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = x_ + r * d;
        T *y = y_ + r * d;
        double s = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            s += static_cast<double>(x[i]);
        const double mean = block_sum(s) / static_cast<double>(d);
        double v = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double c = static_cast<double>(x[i]) - mean;
            v += c * c;
        }
        const double rstd = 1.0 / sqrt(block_sum(v) / static_cast<double>(d) + eps);
        const T tm = static_cast<T>(mean), tr = static_cast<T>(rstd);
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            T h = (x[i] - tm) * tr;
            y[i] = (w ? h * w[i] : h) + (b ? b[i] : T(0));
        }
        if (threadIdx.x == 0) {
            stats[2 * r] = tm;
            stats[2 * r + 1] = tr;
        }
    }
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w */
template <typename T>
__global__ void layer_norm_backward_kernel(int64_t rows, int64_t d, const T *dy_, const T *x_, const T *w,
                                           const T *stats, T *dx_)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *dy = dy_ + r * d, *x = x_ + r * d;
        T *dx = dx_ + r * d;
        const T mean = stats[2 * r], rstd = stats[2 * r + 1];
        double sg = 0, sgh = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            T g = w ? dy[i] * w[i] : dy[i];
            sg += static_cast<double>(g);
            sgh += static_cast<double>(g) * static_cast<double>((x[i] - mean) * rstd);
        }
        const T mg = static_cast<T>(block_sum(sg) / static_cast<double>(d));
        const T mgh = static_cast<T>(block_sum(sgh) / static_cast<double>(d));
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            T g = w ? dy[i] * w[i] : dy[i];
            T h = (x[i] - mean) * rstd;
            dx[i] = rstd * (g - mg - h * mgh);
        }
    }
}

/* partials of dw = sum dy * xhat and db = sum dy over a chunk of rows */
template <typename T>
__global__ void layer_norm_params_kernel(int64_t rows, int64_t d, int64_t rows_per_chunk, const T *dy,
                                         const T *x, const T *stats, double *pw, double *pb)
{
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= d)
        return;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
    double aw = 0, ab = 0;
    for (int64_t r = r0; r < r1; r++) {
        const T g = dy[r * d + c];
        aw += static_cast<double>(g) * static_cast<double>((x[r * d + c] - stats[2 * r]) * stats[2 * r + 1]);
        ab += static_cast<double>(g);
    }
    pw[blockIdx.y * d + c] = aw;
    pb[blockIdx.y * d + c] = ab;
}

template <typename T>
cudaError_t sum_rows_typed(int64_t rows, int64_t cols, double scale, const T *x, T *y, double *partial,
                           cudaStream_t stream)
{
    const chunking ch = chunks_of(rows);
    dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads), static_cast<unsigned>(ch.n_chunks));
    column_partials_kernel<T><<<grid, kThreads, 0, stream>>>(rows, cols, ch.rows_per_chunk, x, partial);
    column_finish_kernel<T><<<blocks_for(cols), kThreads, 0, stream>>>(cols, ch.n_chunks, scale, partial, y);
    return launched();
}

inline unsigned row_blocks(int64_t rows)
{
    return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

} // namespace

extern "C" cudaError_t rt_cuda_sum_general(int dtype, const rt_cuda_sum *p, const void *x, void *y,
                                           cudaStream_t stream)
{
    if (p->n_out < 1 || p->n_red_total < 1 || p->n_kept < 0 || p->n_kept > RT_CUDA_MAX_DIMS || p->n_red < 1 ||
        p->n_red > RT_CUDA_MAX_DIMS)
        return cudaErrorInvalidValue;
    const bool long_rows = p->n_red_total >= 2048 && p->n_out < 4096;
    RT_FLOAT_DISPATCH(dtype, T, {
        if (long_rows)
            sum_block_kernel<T><<<row_blocks(p->n_out), kThreads, 0, stream>>>(*p, static_cast<const T *>(x),
                                                                               static_cast<T *>(y));
        else
            sum_warp_kernel<T><<<blocks_for(p->n_out * 32), kThreads, 0, stream>>>(
                *p, static_cast<const T *>(x), static_cast<T *>(y));
        return launched();
    });
}

extern "C" size_t rt_cuda_sum_rows_workspace(int64_t rows, int64_t cols)
{
    return static_cast<size_t>(chunks_of(rows).n_chunks * cols) * sizeof(double);
}

extern "C" cudaError_t rt_cuda_sum_rows(int dtype, int64_t rows, int64_t cols, double scale, const void *x,
                                        void *y, void *workspace, cudaStream_t stream)
{
    if (rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      return sum_rows_typed<T>(rows, cols, scale, static_cast<const T *>(x),
                                               static_cast<T *>(y), static_cast<double *>(workspace),
                                               stream));
}

extern "C" cudaError_t rt_cuda_softmax(int dtype, int64_t rows, int64_t d, const void *x, void *y,
                                       cudaStream_t stream)
{
    if (rows < 1 || d < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      softmax_kernel<T><<<row_blocks(rows), row_threads(d), 0, stream>>>(
                          rows, d, static_cast<const T *>(x), static_cast<T *>(y));
                      return launched());
}

extern "C" cudaError_t rt_cuda_softmax_backward(int dtype, int64_t rows, int64_t d, const void *dy,
                                                const void *y, void *dx, cudaStream_t stream)
{
    if (rows < 1 || d < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(
        dtype, T,
        softmax_backward_kernel<T><<<row_blocks(rows), row_threads(d), 0, stream>>>(
            rows, d, static_cast<const T *>(dy), static_cast<const T *>(y), static_cast<T *>(dx));
        return launched());
}

extern "C" cudaError_t rt_cuda_layer_norm(int dtype, int64_t rows, int64_t d, double eps, const void *x,
                                          const void *w, const void *b, void *y, void *stats,
                                          cudaStream_t stream)
{
    if (rows < 1 || d < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      layer_norm_kernel<T><<<row_blocks(rows), row_threads(d), 0, stream>>>(
                          rows, d, eps, static_cast<const T *>(x), static_cast<const T *>(w),
                          static_cast<const T *>(b), static_cast<T *>(y), static_cast<T *>(stats));
                      return launched());
}

extern "C" size_t rt_cuda_layer_norm_backward_workspace(int64_t rows, int64_t d)
{
    return 2 * static_cast<size_t>(chunks_of(rows).n_chunks * d) * sizeof(double);
}

extern "C" cudaError_t rt_cuda_layer_norm_backward(int dtype, int64_t rows, int64_t d, const void *dy,
                                                   const void *x, const void *w, const void *stats, void *dx,
                                                   void *dw, void *db, void *workspace, cudaStream_t stream)
{
    if (rows < 1 || d < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T, {
        const T *DY = static_cast<const T *>(dy), *X = static_cast<const T *>(x);
        const T *ST = static_cast<const T *>(stats);
        layer_norm_backward_kernel<T><<<row_blocks(rows), row_threads(d), 0, stream>>>(
            rows, d, DY, X, static_cast<const T *>(w), ST, static_cast<T *>(dx));
        if (dw || db) {
            const chunking ch = chunks_of(rows);
            double *pw = static_cast<double *>(workspace), *pb = pw + ch.n_chunks * d;
            dim3 grid(static_cast<unsigned>((d + kThreads - 1) / kThreads),
                      static_cast<unsigned>(ch.n_chunks));
            layer_norm_params_kernel<T>
                <<<grid, kThreads, 0, stream>>>(rows, d, ch.rows_per_chunk, DY, X, ST, pw, pb);
            if (dw)
                column_finish_kernel<T>
                    <<<blocks_for(d), kThreads, 0, stream>>>(d, ch.n_chunks, 1.0, pw, static_cast<T *>(dw));
            if (db)
                column_finish_kernel<T>
                    <<<blocks_for(d), kThreads, 0, stream>>>(d, ch.n_chunks, 1.0, pb, static_cast<T *>(db));
        }
        return launched();
    });
}
