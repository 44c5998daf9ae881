/* Mixed precision in the graph: GradScaler's update rule against hand-computed values, the
 * scaled backward pass and unscale (bit for bit the unscaled step when nothing overflows), f16
 * overflow forcing skipped steps (no update, no step count, scale backed off), the scaler state
 * round trip, and a small MLP in bf16 against a reference computed here with explicit
 * rounding. */
#include "config.h"

#include <string.h>

#include "graph-test.h"

/* ---------------------------------------------------------------- the update rule */

static rt_loss_scale_state state_of(double scale, int64_t tracker)
{
    return (rt_loss_scale_state){.scale = scale, .growth_tracker = tracker};
}

DEF_TEST(update_rule)
{
    rt_loss_scale_config c = {65536, 2, 0.5, 3};
    rt_loss_scale_state s = state_of(65536, 0);
    rt_loss_scale_update(&c, &s, FALSE);
    rt_loss_scale_update(&c, &s, FALSE);
    EXPECT_NEAR(65536, s.scale, 0);
    EXPECT_EQ_INT(2, (int)s.growth_tracker);
    rt_loss_scale_update(&c, &s, FALSE); /* the 3rd finite step in a row: grow, restart */
    EXPECT_NEAR(131072, s.scale, 0);
    EXPECT_EQ_INT(0, (int)s.growth_tracker);
    rt_loss_scale_update(&c, &s, FALSE);
    rt_loss_scale_update(&c, &s, TRUE); /* an overflow: back off, restart, count the skip */
    EXPECT_NEAR(65536, s.scale, 0);
    EXPECT_EQ_INT(0, (int)s.growth_tracker);
    EXPECT_EQ_INT(1, (int)s.skipped);
    OK(s.found_inf);
    rt_loss_scale_update(&c, &s, TRUE);
    EXPECT_NEAR(32768, s.scale, 0);
    EXPECT_EQ_INT(2, (int)s.skipped);

    /* GradScaler's defaults: the scale doubles at the 2000th finite step, not before */
    rt_loss_scale_config d = RT_LOSS_SCALE_CONFIG_INIT;
    EXPECT_NEAR(65536, d.init_scale, 0);
    EXPECT_NEAR(2, d.growth_factor, 0);
    EXPECT_NEAR(0.5, d.backoff_factor, 0);
    EXPECT_EQ_INT(2000, (int)d.growth_interval);
    s = state_of(65536, 0);
    for (int i = 0; i < 1999; i++)
        rt_loss_scale_update(&d, &s, FALSE);
    EXPECT_NEAR(65536, s.scale, 0);
    EXPECT_EQ_INT(1999, (int)s.growth_tracker);
    rt_loss_scale_update(&d, &s, FALSE);
    EXPECT_NEAR(131072, s.scale, 0);
    EXPECT_EQ_INT(0, (int)s.growth_tracker);

    /* growth that would overflow float32 keeps the scale (torch checks isfinite) */
    s = state_of(ldexp(1, 127), 1999);
    rt_loss_scale_update(&d, &s, FALSE);
    EXPECT_NEAR(ldexp(1, 127), s.scale, 0);
    EXPECT_EQ_INT(0, (int)s.growth_tracker);
    /* the scale is a float32, the factors doubles: 1.7 backed off by 0.3 is
     * float(double(float(1.7)) * 0.3) = 0.50999999 (float arithmetic would give 0.51000005) */
    rt_loss_scale_config odd = {1, 2, 0.3, 10};
    s = state_of(1.7, 0);
    rt_loss_scale_update(&odd, &s, TRUE);
    EXPECT_NEAR((double)(float)((double)1.7f * 0.3), s.scale, 0);
    OK((float)s.scale != 1.7f * 0.3f);
    return 0;
}

/* ---------------------------------------------------------------- graph steps */

/* loss = sum(linear(x, W, b) * k): dL/dy = k exactly, the gradients of W and b are sums of k
 * times x; with f16 compute the backward product's inputs (k times the scale) overflow to inf
 * when |k| * scale > 65504. */
typedef struct lin_net {
    rt_graph *g;
    rt_tensor *w, *b, *x, *k;
} lin_net;

static const double lin_x[8] = {0.5, -1.25, 2.0, 0.75, -0.5, 1.5, -2.0, 0.25};
static const double lin_k[6] = {1.5, -0.75, 0.5, -1.0, 1.25, 0.25};

static gboolean lin_build(lin_net *n, rt_dtype cd, const rt_loss_scale_config *ls)
{
    GError *error = NULL;
    rt_graph *g = n->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_compute_dtype(g, cd);
    n->w = rt_param(g, "w", RT_F32, 2, (int64_t[]){3, 4}, rt_init_uniform(-1, 1));
    n->b = rt_param(g, "b", RT_F32, 1, (int64_t[]){3}, rt_init_uniform(-1, 1));
    n->x = rt_input(g, "x", RT_F32, 2, (int64_t[]){2, 4}, 0);
    n->k = rt_input(g, "k", RT_F32, 2, (int64_t[]){2, 3}, 0);
    rt_tensor *y = rt_linear(g, n->x, n->w, n->b);
    rt_set_loss(g, rt_sum(g, rt_mul(g, y, n->k), RT_ALL_AXES, FALSE));
    rt_adamw_group grp = {0.01, 0.9, 0.999, 1e-8, 0.01};
    gboolean ok = (!ls || rt_graph_enable_loss_scaling(g, ls, &error)) && rt_graph_backward(g, &error) &&
                  rt_graph_add_adamw(g, &grp, 1, 0, &error);
    if (!ok) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_test_plan(g) && rt_test_write(g, n->x, lin_x) && rt_test_write(g, n->k, lin_k);
}

static gboolean lin_step(lin_net *n, double *grad_norm)
{
    GError *error = NULL;
    if (!rt_test_run(n->g))
        return FALSE;
    if (!rt_graph_read_scalar(n->g, rt_graph_find(n->g, "grad_norm"), grad_norm, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

static gboolean get_state(rt_graph *g, rt_loss_scale_state *s)
{
    GError *error = NULL;
    if (!rt_graph_get_loss_scale(g, s, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

/* f32 and a moderate scale: the scaled step is the unscaled one, bit for bit (scaling by a
 * power of two is exact), and the scaler counts a finite step */
DEF_TEST(scaled_step_is_exact)
{
    lin_net a = {0}, b = {0};
    rt_loss_scale_config ls = {1024, 2, 0.5, 2000};
    OK(lin_build(&a, RT_F32, NULL));
    OK(lin_build(&b, RT_F32, &ls));
    OK(!rt_graph_has_loss_scaling(a.g) && rt_graph_has_loss_scaling(b.g));
    for (int step = 0; step < 3; step++) {
        double na = 0, nb = 0;
        OK(lin_step(&a, &na) && lin_step(&b, &nb));
        EXPECT_NEAR(na, nb, 0); /* the logged norm is of the unscaled gradients */
    }
    float wa[12], wb[12], ga[12], gb[12];
    GError *error = NULL;
    OK(rt_graph_read(a.g, a.w, wa, sizeof wa, &error) && rt_graph_read(b.g, b.w, wb, sizeof wb, &error));
    OK(rt_graph_read(a.g, rt_graph_grad(a.g, a.w), ga, sizeof ga, &error) &&
       rt_graph_read(b.g, rt_graph_grad(b.g, b.w), gb, sizeof gb, &error));
    OK(memcmp(wa, wb, sizeof wa) == 0);
    OK(memcmp(ga, gb, sizeof ga) == 0);
    /* the gradient of w[0][0] is k[0][0] x[0][0] + k[1][0] x[1][0] */
    EXPECT_NEAR(1.5 * 0.5 + -1.0 * -0.5, gb[0], 0);
    rt_loss_scale_state s;
    OK(get_state(b.g, &s));
    EXPECT_NEAR(1024, s.scale, 0);
    EXPECT_EQ_INT(3, (int)s.growth_tracker);
    EXPECT_EQ_INT(0, (int)s.skipped);
    OK(!s.found_inf);
    rt_graph_free(a.g);
    rt_graph_free(b.g);
    return 0;
}

/* f16 with scale 2^20: |k| max 1.5, so 1.5 * scale overflows f16 (> 65504) for scales 2^20 ..
 * 2^16; five steps are skipped, the scale halves each time, and the sixth step (2^15) is the
 * first update: the same weights as one unscaled f16 step (the step count did not advance on
 * the skipped ones, or the bias correction would differ) */
DEF_TEST(overflow_skips)
{
    lin_net a = {0}, b = {0};
    rt_loss_scale_config ls = {ldexp(1, 20), 2, 0.5, 2000};
    OK(lin_build(&a, RT_F16, NULL));
    OK(lin_build(&b, RT_F16, &ls));
    float w0[12], w[12], b0[3], bias[3], wa[12];
    GError *error = NULL;
    OK(rt_graph_read(b.g, b.w, w0, sizeof w0, &error) && rt_graph_read(b.g, b.b, b0, sizeof b0, &error));
    for (int step = 1; step <= 5; step++) {
        double norm = 0;
        OK(lin_step(&b, &norm));
        rt_loss_scale_state s;
        OK(get_state(b.g, &s));
        RT_TEST_REPORT(s.found_inf && s.skipped == step && s.scale == ldexp(1, 20 - step) &&
                           s.growth_tracker == 0,
                       "step %d skipped: found_inf %d, skipped %lld, scale %g, tracker %lld", step,
                       s.found_inf, (long long)s.skipped, s.scale, (long long)s.growth_tracker);
        OK(!isfinite(norm));
        OK(rt_graph_read(b.g, b.w, w, sizeof w, &error) &&
           rt_graph_read(b.g, b.b, bias, sizeof bias, &error));
        OK(memcmp(w, w0, sizeof w) == 0 && memcmp(bias, b0, sizeof bias) == 0);
    }
    double adam_steps = -1;
    OK(rt_graph_get_step(b.g, &adam_steps, &error));
    EXPECT_NEAR(0, adam_steps, 0); /* no skipped step counted */
    double na = 0, nb = 0;
    OK(lin_step(&b, &nb));
    OK(lin_step(&a, &na));
    OK(rt_graph_get_step(b.g, &adam_steps, &error));
    EXPECT_NEAR(1, adam_steps, 0);
    rt_loss_scale_state s;
    OK(get_state(b.g, &s));
    OK(!s.found_inf && s.skipped == 5 && s.scale == 32768 && s.growth_tracker == 1);
    EXPECT_NEAR(na, nb, 0);
    OK(rt_graph_read(b.g, b.w, w, sizeof w, &error) && rt_graph_read(a.g, a.w, wa, sizeof wa, &error));
    OK(memcmp(w, wa, sizeof w) == 0);
    OK(memcmp(w, w0, sizeof w) != 0);
    rt_graph_free(a.g);
    rt_graph_free(b.g);
    return 0;
}

DEF_TEST(state_round_trip)
{
    lin_net n = {0};
    rt_loss_scale_config ls = RT_LOSS_SCALE_CONFIG_INIT;
    OK(lin_build(&n, RT_F16, &ls));
    rt_loss_scale_state s;
    OK(get_state(n.g, &s));
    OK(s.scale == 65536 && s.growth_tracker == 0 && s.skipped == 0 && !s.found_inf);
    GError *error = NULL;
    rt_loss_scale_state set = {.scale = 4096, .growth_tracker = 7, .skipped = 3};
    OK(rt_graph_set_loss_scale(n.g, &set, &error));
    OK(get_state(n.g, &s));
    OK(s.scale == 4096 && s.growth_tracker == 7 && s.skipped == 3);
    double norm;
    OK(lin_step(&n, &norm)); /* 1.5 * 4096 fits f16: a finite step continues the tracker */
    OK(get_state(n.g, &s));
    OK(s.scale == 4096 && s.growth_tracker == 8 && s.skipped == 3 && !s.found_inf);
    set.scale = 0;
    OK(!rt_graph_set_loss_scale(n.g, &set, &error));
    EXPECT_ERROR(error, "the scale must be a positive finite float32");
    set.scale = 1e39; /* not a float32 */
    OK(!rt_graph_set_loss_scale(n.g, &set, &error));
    EXPECT_ERROR(error, "positive finite float32");
    rt_graph_free(n.g);

    /* misuse: after the backward pass; a graph without an optimizer cannot be planned */
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *p = rt_param(g, "p", RT_F32, 1, (int64_t[]){2}, rt_init_constant(1));
    rt_set_loss(g, rt_sum(g, rt_mul(g, p, p), RT_ALL_AXES, FALSE));
    rt_loss_scale_config bad = {65536, 0.5, 0.5, 10};
    OK(!rt_graph_enable_loss_scaling(g, &bad, &error));
    EXPECT_ERROR(error, "the growth factor > 1");
    OK(rt_graph_enable_loss_scaling(g, &ls, &error));
    OK(!rt_graph_enable_loss_scaling(g, &ls, &error));
    EXPECT_ERROR(error, "call it once");
    OK(rt_graph_backward(g, &error));
    OK(!rt_graph_plan(g, rt_backend_cpu(), rt_test_cpu(), &error));
    EXPECT_ERROR(error, "loss scaling needs the optimizer");
    OK(!rt_graph_get_loss_scale(g, &s, &error));
    EXPECT_ERROR(error, "not planned yet");
    rt_graph_free(g);
    return 0;
}

/* ---------------------------------------------------------------- bf16 MLP */

/* round to nearest even bf16, on the bits (independent of the library's converter) */
static double ref_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

enum { B = 4, IN = 6, HID = 5, OUT = 3 };

/* y[r][o] = sum_i a[r][i] w[o][i] (+ bias), inputs rounded when asked */
static void ref_linear(const double *a, const double *w, const double *bias, double *y, int rows, int in,
                       int out, bool round)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double s = bias ? bias[o] : 0;
            for (int i = 0; i < in; i++) {
                double x = a[r * in + i], wi = w[o * in + i];
                s += round ? ref_bf16(x) * ref_bf16(wi) : x * wi;
            }
            y[r * out + o] = s;
        }
}

typedef struct mlp_ref {
    double loss, dw1[HID * IN], db1[HID], dw2[OUT * HID], db2[OUT];
} mlp_ref;

static double rnd(bool round, double v)
{
    return round ? ref_bf16(v) : v;
}

/* loss = mean((linear2(relu(linear1(x))) - t)^2) and its gradients; with round, every input of
 * a product (forward and backward) is rounded to bf16, sums stay exact */
static void mlp_reference(const double *x, const double *w1, const double *b1, const double *w2,
                          const double *b2, const double *t, bool round, mlp_ref *r)
{
    double h[B * HID], a[B * HID], y[B * OUT], dy[B * OUT], da[B * HID];
    ref_linear(x, w1, b1, h, B, IN, HID, round);
    for (int i = 0; i < B * HID; i++)
        a[i] = h[i] > 0 ? h[i] : 0;
    ref_linear(a, w2, b2, y, B, HID, OUT, round);
    r->loss = 0;
    for (int i = 0; i < B * OUT; i++) {
        double d = y[i] - t[i];
        r->loss += d * d / (B * OUT);
        dy[i] = 2 * d / (B * OUT);
    }
    memset(r->db2, 0, sizeof r->db2);
    memset(r->db1, 0, sizeof r->db1);
    for (int o = 0; o < OUT; o++)
        for (int j = 0; j < HID; j++) {
            double s = 0;
            for (int b = 0; b < B; b++)
                s += rnd(round, dy[b * OUT + o]) * rnd(round, a[b * HID + j]);
            r->dw2[o * HID + j] = s;
        }
    for (int b = 0; b < B; b++)
        for (int o = 0; o < OUT; o++)
            r->db2[o] += dy[b * OUT + o];
    for (int b = 0; b < B; b++)
        for (int j = 0; j < HID; j++) {
            double s = 0;
            for (int o = 0; o < OUT; o++)
                s += rnd(round, dy[b * OUT + o]) * rnd(round, w2[o * HID + j]);
            da[b * HID + j] = h[b * HID + j] > 0 ? s : 0;
        }
    for (int j = 0; j < HID; j++)
        for (int i = 0; i < IN; i++) {
            double s = 0;
            for (int b = 0; b < B; b++)
                s += rnd(round, da[b * HID + j]) * rnd(round, x[b * IN + i]);
            r->dw1[j * IN + i] = s;
        }
    for (int b = 0; b < B; b++)
        for (int j = 0; j < HID; j++)
            r->db1[j] += da[b * HID + j];
}

/* the graph's loss and gradients with compute dtype cd */
static gboolean mlp_graph(rt_dtype cd, const double *x, const double *w1, const double *b1, const double *w2,
                          const double *b2, const double *t, mlp_ref *out)
{
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_compute_dtype(g, cd);
    float fw1[HID * IN], fb1[HID], fw2[OUT * HID], fb2[OUT];
    for (int i = 0; i < HID * IN; i++)
        fw1[i] = (float)w1[i];
    for (int i = 0; i < HID; i++)
        fb1[i] = (float)b1[i];
    for (int i = 0; i < OUT * HID; i++)
        fw2[i] = (float)w2[i];
    for (int i = 0; i < OUT; i++)
        fb2[i] = (float)b2[i];
    rt_tensor *pw1 = rt_param(g, "w1", RT_F32, 2, (int64_t[]){HID, IN}, rt_init_data(fw1));
    rt_tensor *pb1 = rt_param(g, "b1", RT_F32, 1, (int64_t[]){HID}, rt_init_data(fb1));
    rt_tensor *pw2 = rt_param(g, "w2", RT_F32, 2, (int64_t[]){OUT, HID}, rt_init_data(fw2));
    rt_tensor *pb2 = rt_param(g, "b2", RT_F32, 1, (int64_t[]){OUT}, rt_init_data(fb2));
    rt_tensor *tx = rt_input(g, "x", RT_F32, 2, (int64_t[]){B, IN}, 0);
    rt_tensor *tt = rt_input(g, "t", RT_F32, 2, (int64_t[]){B, OUT}, 0);
    rt_tensor *y = rt_linear(g, rt_relu(g, rt_linear(g, tx, pw1, pb1)), pw2, pb2);
    rt_tensor *d = rt_sub(g, y, tt);
    rt_tensor *loss = rt_mean(g, rt_mul(g, d, d), RT_ALL_AXES, FALSE);
    rt_set_loss(g, loss);
    GError *error = NULL;
    gboolean ok = rt_graph_backward(g, &error);
    if (!ok) {
        printf("# %s\n", error->message);
        g_error_free(error);
    }
    ok = ok && rt_test_plan(g) && rt_test_write(g, tx, x) && rt_test_write(g, tt, t) && rt_test_run(g);
    ok = ok && rt_test_read(g, loss, &out->loss) && rt_test_read(g, rt_graph_grad(g, pw1), out->dw1) &&
         rt_test_read(g, rt_graph_grad(g, pb1), out->db1) &&
         rt_test_read(g, rt_graph_grad(g, pw2), out->dw2) && rt_test_read(g, rt_graph_grad(g, pb2), out->db2);
    rt_graph_free(g);
    return ok;
}

/* all of a result as one array, for the comparisons */
static void flatten(const mlp_ref *r, double *v)
{
    int k = 0;
    v[k++] = r->loss;
    for (int i = 0; i < HID * IN; i++)
        v[k++] = r->dw1[i];
    for (int i = 0; i < HID; i++)
        v[k++] = r->db1[i];
    for (int i = 0; i < OUT * HID; i++)
        v[k++] = r->dw2[i];
    for (int i = 0; i < OUT; i++)
        v[k++] = r->db2[i];
}

#define MLP_N (1 + HID * IN + HID + OUT * HID + OUT)

DEF_TEST(mlp_bf16)
{
    rt_test_rng rng = {0x5eed1234abcdull};
    double x[B * IN], w1[HID * IN], b1[HID], w2[OUT * HID], b2[OUT], t[B * OUT];
    /* values that are float32 already, so the references start from the graph's numbers */
    double *arrays[6] = {x, w1, b1, w2, b2, t};
    int sizes[6] = {B * IN, HID * IN, HID, OUT * HID, OUT, B * OUT};
    for (int a = 0; a < 6; a++) {
        rt_test_fill(&rng, arrays[a], sizes[a], -1, 1);
        for (int i = 0; i < sizes[a]; i++)
            arrays[a][i] = (float)arrays[a][i];
    }
    mlp_ref g32, g16, r32, r16;
    OK(mlp_graph(RT_F32, x, w1, b1, w2, b2, t, &g32));
    OK(mlp_graph(RT_BF16, x, w1, b1, w2, b2, t, &g16));
    mlp_reference(x, w1, b1, w2, b2, t, false, &r32);
    mlp_reference(x, w1, b1, w2, b2, t, true, &r16);
    double vg32[MLP_N], vg16[MLP_N], vr32[MLP_N], vr16[MLP_N];
    flatten(&g32, vg32);
    flatten(&g16, vg16);
    flatten(&r32, vr32);
    flatten(&r16, vr16);
    /* each graph matches its own reference to float32 accuracy */
    EXPECT_CLOSE(vg32, vr32, MLP_N, 1e-6, 1e-5);
    EXPECT_CLOSE(vg16, vr16, MLP_N, 1e-6, 1e-5);
    /* and bf16 differs from f32 by bf16's rounding: more than float32 noise, less than a few
     * bf16 units (2^-8 relative per rounded input) */
    double d = rt_test_closeness(vg16, vg32, MLP_N, 1e-6, 1e-5, NULL);
    RT_TEST_REPORT(d > 10, "bf16 differs from f32 (closeness %g at f32 tolerance)", d);
    EXPECT_CLOSE(vg16, vg32, MLP_N, 0.05, 0.05);
    return 0;
}

int main(void)
{
    rt_cpu_set_num_threads(2);
    RUN_TEST(update_rule);
    RUN_TEST(scaled_step_is_exact);
    RUN_TEST(overflow_skips);
    RUN_TEST(state_round_trip);
    RUN_TEST(mlp_bf16);
    END_TEST;
}
