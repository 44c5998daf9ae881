/* src/core/cpu/threads.c: how many threads the CPU kernels use. They all run on one OpenMP
 * pool (our loops, our split of the GEMMs, oneDNN), sized here; OpenBLAS is kept
 * single-threaded (see gemm.c), so the process never runs more threads than asked. */
#include "config.h"

#include <cblas.h>
#include <glib.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

static int current_threads; /* 0 = not chosen yet */

/* OMP_NUM_THREADS may be a list ("4,2" for nested levels): the first entry is ours. */
static int default_threads(void)
{
    const char *env = g_getenv("OMP_NUM_THREADS");
    if (env && *env) {
        char *end = NULL;
        long n = strtol(env, &end, 10);
        if (end != env && n > 0 && n <= 4096)
            return (int)n;
    }
    int n = (int)g_get_num_processors();
    return n > 0 ? n : 1;
}

void rt_cpu_set_num_threads(int n)
{
    if (n <= 0)
        n = default_threads();
    current_threads = n;
    openblas_set_num_threads(1);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

int rt_cpu_get_num_threads(void)
{
    if (current_threads == 0)
        rt_cpu_set_num_threads(0);
    return current_threads;
}

int cpu_threads(void)
{
#ifdef _OPENMP
    return rt_cpu_get_num_threads();
#else
    return 1; /* without OpenMP, parallel regions run once, on the calling thread */
#endif
}

int cpu_blas_threads_set(int n)
{
    int old = openblas_get_num_threads();
    if (old != n)
        openblas_set_num_threads(n);
    return old;
}

void cpu_omp_sync(void)
{
#ifdef _OPENMP
    int n = cpu_threads();
    if (omp_get_max_threads() != n)
        omp_set_num_threads(n);
#endif
}
