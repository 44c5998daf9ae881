/* src/core/cpu/cpu-internal.h: helpers shared by the CPU kernel files (not exported: the
 * library exports only rt_* symbols, these are cpu_*). */
#ifndef ROBOTRAIN_CPU_INTERNAL_H
#define ROBOTRAIN_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An OpenMP directive, or nothing when the compiler has no OpenMP (then all runs on the
 * calling thread): CPU_OMP("omp parallel for ..."). */
#ifdef _OPENMP
#define CPU_OMP(directive) _Pragma(directive)
#else
#define CPU_OMP(directive)
#endif

/* The thread count the kernels use now (initialises it to the default on first use); 1
 * without OpenMP. */
int cpu_threads(void);

/* OpenBLAS's own thread count: 1, except around a call in benchmark mode
 * (cpu_gemm_set_blas_threads). Returns the previous value. */
int cpu_blas_threads_set(int n);

/* Makes the calling thread's OpenMP default match cpu_threads() (oneDNN reads it per call). */
void cpu_omp_sync(void);

/* The part of [0, n) that worker `part` of `parts` owns (contiguous, sizes differ by <= 1). */
static inline void cpu_split(int64_t n, int parts, int part, int64_t *begin, int64_t *end)
{
    int64_t base = n / parts, extra = n % parts;
    *begin = part * base + (part < extra ? part : extra);
    *end = *begin + base + (part < extra ? 1 : 0);
}

/* f32 GEMM (row-major, as rt_cpu_gemm_f32) of one matrix on the calling thread only. */
void cpu_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
               int64_t ldc);

/* The same on all of cpu_threads() threads (arguments already checked). */
void cpu_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
              int64_t ldc);

/* Benchmarks: let OpenBLAS thread each GEMM itself instead of splitting it ourselves. */
void cpu_gemm_set_blas_threads(bool on);

#endif
