/* The fixed positional embeddings of ACT: the 1-D table of the VAE encoder (a state-dict buffer)
 * and the 2-D embedding of the image tokens (a constant of each graph). */
#include "config.h"

#include <math.h>

#include "act.h"

/* create_sinusoidal_pos_embedding: numpy float64, then .float() */
void act_sinusoid_1d(int64_t n, int64_t dim, float *out)
{
    for (int64_t p = 0; p < n; p++)
        for (int64_t j = 0; j < dim; j++) {
            double angle = (double)p / pow(10000.0, (double)(2 * (j / 2)) / (double)dim);
            out[p * dim + j] = (float)(j % 2 == 0 ? sin(angle) : cos(angle));
        }
}

/* ACTSinusoidalPositionEmbedding2d(dim / 2).forward, step by step in float32 as PyTorch runs it:
 * positions 1..h normalized by (h + 1e-6) and scaled by 2 pi, divided by 10000^(2 floor(k/2)/d),
 * sines on even and cosines on odd channels; rows' channels first, then columns'. */
void act_sinusoid_2d(int64_t dim, int64_t h, int64_t w, float *out)
{
    const int64_t d = dim / 2;
    const float eps = 1e-6f, two_pi = (float)(2 * M_PI);
    float *inv_freq = g_new(float, d);
    for (int64_t k = 0; k < d; k++) {
        float e = floorf((float)k / 2.0f) * 2.0f / (float)d;
        inv_freq[k] = powf(10000.0f, e);
    }
    const float y_norm = (float)h + eps, x_norm = (float)w + eps;
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
            float y = (float)(i + 1) / y_norm * two_pi;
            float x = (float)(j + 1) / x_norm * two_pi;
            for (int64_t k = 0; k < d; k++) {
                float ry = y / inv_freq[k], rx = x / inv_freq[k];
                out[(k * h + i) * w + j] = k % 2 == 0 ? sinf(ry) : cosf(ry);
                out[((d + k) * h + i) * w + j] = k % 2 == 0 ? sinf(rx) : cosf(rx);
            }
        }
    g_free(inv_freq);
}
