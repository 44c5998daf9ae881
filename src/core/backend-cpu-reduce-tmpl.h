/* src/core/backend-cpu-reduce-tmpl.h: reduction and normalisation kernels for one float type.
 * Included by backend-cpu-reduce.c with T (float or double), SFX (f32 or f64) and the libm
 * functions SQRT and EXP defined. Sums accumulate in double; every output is computed by one
 * thread in a fixed order, so results do not depend on the number of threads. */

#define FN(name) RT_PASTE(name, SFX)

/* sum over reduced axes: general odometer */
static void FN(sum_general)(void *arg, int64_t begin, int64_t end)
{
    const sum_job *j = arg;
    const T *x = j->x;
    T *y = j->y;
    for (int64_t o = begin; o < end; o++) {
        int64_t base = 0, rem = o;
        for (int d = j->n_kept - 1; d >= 0; d--) {
            base += (rem % j->kept_size[d]) * j->kept_stride[d];
            rem /= j->kept_size[d];
        }
        double acc = 0;
        int64_t idx[RT_MAX_DIMS] = {0};
        int64_t inner = j->red_size[j->n_red - 1], inner_stride = j->red_stride[j->n_red - 1];
        for (;;) {
            int64_t off = base;
            for (int d = 0; d < j->n_red - 1; d++)
                off += idx[d] * j->red_stride[d];
            const T *p = x + off;
            if (inner_stride == 1)
                for (int64_t i = 0; i < inner; i++)
                    acc += p[i];
            else
                for (int64_t i = 0; i < inner; i++)
                    acc += p[i * inner_stride];
            int d = j->n_red - 2;
            while (d >= 0 && ++idx[d] == j->red_size[d])
                idx[d--] = 0;
            if (d < 0)
                break;
        }
        y[o] = (T)(acc * j->scale);
    }
}

/* sum over the leading rows of a [rows, cols] view: column blocks, rows in order */
static void FN(sum_rows)(void *arg, int64_t begin, int64_t end)
{
    const sum_job *j = arg;
    const T *x = j->x;
    T *y = j->y;
    int64_t cols = j->cols;
    for (int64_t c0 = begin * SUM_COL_BLOCK; c0 < end * SUM_COL_BLOCK && c0 < cols;
         c0 += SUM_COL_BLOCK) {
        int64_t nc = MIN(SUM_COL_BLOCK, cols - c0);
        double acc[SUM_COL_BLOCK];
        for (int64_t c = 0; c < nc; c++)
            acc[c] = 0;
        for (int64_t r = 0; r < j->rows; r++) {
            const T *p = x + r * cols + c0;
            for (int64_t c = 0; c < nc; c++)
                acc[c] += p[c];
        }
        for (int64_t c = 0; c < nc; c++)
            y[c0 + c] = (T)(acc[c] * j->scale);
    }
}

static void FN(softmax_rows)(void *arg, int64_t begin, int64_t end)
{
    const row_job *j = arg;
    int64_t d = j->d;
    for (int64_t r = begin; r < end; r++) {
        const T *x = (const T *)j->a + r * d;
        T *y = (T *)j->y + r * d;
        T m = -INFINITY;
        for (int64_t i = 0; i < d; i++)
            m = x[i] > m ? x[i] : m;
        double s = 0;
        for (int64_t i = 0; i < d; i++) {
            y[i] = EXP(x[i] - m);
            s += y[i];
        }
        T inv = (T)(1.0 / s);
        for (int64_t i = 0; i < d; i++)
            y[i] *= inv;
    }
}

static void FN(softmax_backward_rows)(void *arg, int64_t begin, int64_t end)
{
    const row_job *j = arg;
    int64_t d = j->d;
    for (int64_t r = begin; r < end; r++) {
        const T *dy = (const T *)j->a + r * d, *y = (const T *)j->b + r * d;
        T *dx = (T *)j->y + r * d;
        double s = 0;
        for (int64_t i = 0; i < d; i++)
            s += (double)dy[i] * y[i];
        T st = (T)s;
        for (int64_t i = 0; i < d; i++)
            dx[i] = y[i] * (dy[i] - st);
    }
}

static void FN(layer_norm_rows)(void *arg, int64_t begin, int64_t end)
{
    const row_job *j = arg;
    int64_t d = j->d;
    const T *w = j->w, *b = j->bias;
    for (int64_t r = begin; r < end; r++) {
        const T *x = (const T *)j->a + r * d;
        T *y = (T *)j->y + r * d;
        double s = 0;
        for (int64_t i = 0; i < d; i++)
            s += x[i];
        double mean = s / (double)d, v = 0;
        for (int64_t i = 0; i < d; i++) {
            double c = x[i] - mean;
            v += c * c;
        }
        double rstd = 1.0 / sqrt(v / (double)d + j->eps);
        T tm = (T)mean, tr = (T)rstd;
        for (int64_t i = 0; i < d; i++) {
            T h = (x[i] - tm) * tr;
            y[i] = (w ? h * w[i] : h) + (b ? b[i] : (T)0);
        }
        T *stats = (T *)j->stats + 2 * r;
        stats[0] = tm;
        stats[1] = tr;
    }
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w */
static void FN(layer_norm_backward_rows)(void *arg, int64_t begin, int64_t end)
{
    const row_job *j = arg;
    int64_t d = j->d;
    const T *w = j->w;
    for (int64_t r = begin; r < end; r++) {
        const T *dy = (const T *)j->a + r * d, *x = (const T *)j->b + r * d;
        const T *stats = (const T *)j->stats + 2 * r;
        T *dx = (T *)j->y + r * d;
        T mean = stats[0], rstd = stats[1];
        double sg = 0, sgh = 0;
        for (int64_t i = 0; i < d; i++) {
            T g = w ? dy[i] * w[i] : dy[i];
            sg += g;
            sgh += (double)g * ((x[i] - mean) * rstd);
        }
        T mg = (T)(sg / (double)d), mgh = (T)(sgh / (double)d);
        for (int64_t i = 0; i < d; i++) {
            T g = w ? dy[i] * w[i] : dy[i];
            T h = (x[i] - mean) * rstd;
            dx[i] = rstd * (g - mg - h * mgh);
        }
    }
}

/* dw = sum over rows of dy * xhat, db = sum of dy: column blocks */
static void FN(layer_norm_backward_params)(void *arg, int64_t begin, int64_t end)
{
    const row_job *j = arg;
    int64_t d = j->d;
    for (int64_t c0 = begin * SUM_COL_BLOCK; c0 < end * SUM_COL_BLOCK && c0 < d;
         c0 += SUM_COL_BLOCK) {
        int64_t nc = MIN(SUM_COL_BLOCK, d - c0);
        double aw[SUM_COL_BLOCK], ab[SUM_COL_BLOCK];
        for (int64_t c = 0; c < nc; c++)
            aw[c] = ab[c] = 0;
        for (int64_t r = 0; r < j->rows; r++) {
            const T *dy = (const T *)j->a + r * d + c0, *x = (const T *)j->b + r * d + c0;
            const T *stats = (const T *)j->stats + 2 * r;
            for (int64_t c = 0; c < nc; c++) {
                aw[c] += (double)dy[c] * ((x[c] - stats[0]) * stats[1]);
                ab[c] += dy[c];
            }
        }
        for (int64_t c = 0; c < nc; c++) {
            if (j->dw)
                ((T *)j->dw)[c0 + c] = (T)aw[c];
            if (j->db)
                ((T *)j->db)[c0 + c] = (T)ab[c];
        }
    }
}

/* partial sums of blocks of RED_BLOCK elements: |pred - target| on valid elements */
static void FN(l1_blocks)(void *arg, int64_t begin, int64_t end)
{
    const loss_job *j = arg;
    const T *p = j->a, *t = j->b;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t e0 = blk * RED_BLOCK, e1 = MIN(e0 + RED_BLOCK, j->n);
        double acc = 0;
        for (int64_t e = e0; e < e1; e++)
            if (!j->mask || !j->mask[e / j->inner])
                acc += FABS(p[e] - t[e]);
        j->partial[blk] = acc;
    }
}

static void FN(l1_backward)(void *arg, int64_t begin, int64_t end)
{
    const loss_job *j = arg;
    const T *p = j->a, *t = j->b;
    T *dx = j->y;
    T s = (T)j->scale;
    for (int64_t e = begin; e < end; e++) {
        T diff = p[e] - t[e];
        T sign = diff > 0 ? (T)1 : diff < 0 ? (T)-1 : (T)0;
        dx[e] = (j->mask && j->mask[e / j->inner]) ? (T)0 : s * sign;
    }
}

static void FN(square_blocks)(void *arg, int64_t begin, int64_t end)
{
    const loss_job *j = arg;
    const T *g = j->a;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t e0 = blk * RED_BLOCK, e1 = MIN(e0 + RED_BLOCK, j->n);
        double acc = 0;
        for (int64_t e = e0; e < e1; e++)
            acc += (double)g[e] * (double)g[e];
        j->partial[blk] = acc;
    }
}

static void FN(scale_inplace)(void *arg, int64_t begin, int64_t end)
{
    const loss_job *j = arg;
    T *g = j->y;
    T s = (T)j->scale;
    for (int64_t e = begin; e < end; e++)
        g[e] *= s;
}

/* torch.optim.AdamW's single-tensor step, operation by operation in T */
static void FN(adamw_range)(void *arg, int64_t begin, int64_t end)
{
    const adamw_job *j = arg;
    T *p = j->p, *m = j->m, *v = j->v;
    const T *g = j->g;
    const T decay = (T)j->decay, w1 = (T)j->w1, b2 = (T)j->beta2, w2 = (T)j->w2;
    const T bc2_sqrt = (T)j->bc2_sqrt, eps = (T)j->eps, neg_step = (T)(-j->step_size);
    for (int64_t i = begin; i < end; i++) {
        T pi = p[i] * decay;
        T gi = g[i];
        T mi = m[i];
        mi = FABS(w1) < (T)0.5 ? mi + w1 * (gi - mi) : gi - (gi - mi) * ((T)1 - w1);
        T vi = v[i] * b2;
        vi = vi + w2 * gi * gi;
        T denom = SQRT(vi) / bc2_sqrt + eps;
        p[i] = pi + neg_step * mi / denom;
        m[i] = mi;
        v[i] = vi;
    }
}

#undef FN
