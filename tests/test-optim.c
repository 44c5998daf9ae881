/* The optimizer ops against hand-computed steps: torch.optim.AdamW (decoupled weight decay,
 * lerp'd first moment, bias corrections) with two parameter groups, gradient clipping with
 * clip_grad_norm_'s coefficient, parameters without a gradient left alone, learning-rate and
 * step-count changes without rebuilding. References are computed here in double. */
#include "config.h"

#include "graph-test.h"

typedef struct ref_state {
    double p[16], m[16], v[16];
} ref_state;

/* one AdamW step on n values, as torch.optim.AdamW writes it */
static void ref_adamw(double *p, const double *g, double *m, double *v, int n,
                      const rt_adamw_group *h, int t)
{
    double bc1 = 1 - pow(h->beta1, t), bc2 = 1 - pow(h->beta2, t);
    for (int i = 0; i < n; i++) {
        p[i] *= 1 - h->lr * h->weight_decay;
        m[i] += (1 - h->beta1) * (g[i] - m[i]);
        v[i] = v[i] * h->beta2 + (1 - h->beta2) * g[i] * g[i];
        p[i] -= h->lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + h->eps);
    }
}

typedef struct net {
    rt_graph *g;
    rt_tensor *a, *b, *c, *unused;
} net;

static const double ka[3] = {0.5, -1.5, 2.0}, kc[4] = {3.0, -0.25, 1.0, -4.0};

/* loss = a . ka + 0.5 |b|^2 + c . kc: gradients ka, b, kc. a and b in group 0, c in group 1,
 * `unused` in group 0 but not in the loss. */
static gboolean build(net *n, rt_dtype dt, const rt_adamw_group *groups, double max_norm)
{
    GError *error = NULL;
    rt_graph *g = n->g = rt_graph_new(RT_GRAPH_TRAIN);
    n->a = rt_param(g, "a", dt, 1, (int64_t[]){3}, rt_init_constant(0.25));
    n->unused = rt_param(g, "unused", dt, 1, (int64_t[]){2}, rt_init_constant(1.0));
    n->b = rt_param(g, "b", dt, 2, (int64_t[]){2, 2}, rt_init_uniform(-1, 1));
    n->c = rt_param(g, "c", dt, 1, (int64_t[]){4}, rt_init_constant(-0.5));
    rt_tensor *tka = rt_cast(g, rt_const(g, RT_F64, 1, (int64_t[]){3}, ka), dt);
    rt_tensor *tkc = rt_cast(g, rt_const(g, RT_F64, 1, (int64_t[]){4}, kc), dt);
    rt_tensor *la = rt_sum(g, rt_mul(g, n->a, tka), RT_ALL_AXES, FALSE);
    rt_tensor *lb = rt_scale(g, rt_sum(g, rt_mul(g, n->b, n->b), RT_ALL_AXES, FALSE), 0.5, 0);
    rt_tensor *lc = rt_sum(g, rt_mul(g, n->c, tkc), RT_ALL_AXES, FALSE);
    rt_set_loss(g, la);
    rt_set_loss(g, lb); /* losses add up */
    rt_set_loss(g, lc);
    rt_param_set_group(g, n->c, 1);
    if (!rt_graph_backward(g, &error) || !rt_graph_add_adamw(g, groups, 2, max_norm, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_test_plan(g);
}

static int run_steps(rt_dtype dt, double max_norm, double tol)
{
    rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 1e-2}, {3e-2, 0.8, 0.99, 1e-6, 0.1}};
    net n;
    OK(build(&n, dt, groups, max_norm));
    OK(rt_graph_grad(n.g, n.unused) == NULL);
    double a[3], b[4], c[4], un[2];
    OK(rt_test_read(n.g, n.a, a) && rt_test_read(n.g, n.b, b) && rt_test_read(n.g, n.c, c));
    /* reference state: group 0 = a, b; group 1 = c */
    double ma[3] = {0}, va[3] = {0}, mb[4] = {0}, vb[4] = {0}, mc[4] = {0}, vc[4] = {0};
    GError *error = NULL;
    for (int t = 1; t <= 4; t++) {
        if (t == 3) { /* a schedule changes group 1's lr without rebuilding */
            OK(rt_graph_set_lr(n.g, 1, 5e-3, &error));
            groups[1].lr = 5e-3;
        }
        double ga[3], gb[4], gc[4];
        memcpy(ga, ka, sizeof ga);
        memcpy(gb, b, sizeof gb);
        memcpy(gc, kc, sizeof gc);
        double norm = 0;
        for (int i = 0; i < 3; i++)
            norm += ga[i] * ga[i];
        for (int i = 0; i < 4; i++)
            norm += gb[i] * gb[i] + gc[i] * gc[i];
        norm = sqrt(norm);
        double coef = max_norm / (norm + 1e-6);
        if (max_norm > 0 && coef < 1) {
            for (int i = 0; i < 3; i++)
                ga[i] *= coef;
            for (int i = 0; i < 4; i++) {
                gb[i] *= coef;
                gc[i] *= coef;
            }
        }
        ref_adamw(a, ga, ma, va, 3, &groups[0], t);
        ref_adamw(b, gb, mb, vb, 4, &groups[0], t);
        ref_adamw(c, gc, mc, vc, 4, &groups[1], t);

        OK(rt_test_run(n.g));
        double got_a[3], got_b[4], got_c[4], got_norm, got_gc[4];
        OK(rt_test_read(n.g, n.a, got_a) && rt_test_read(n.g, n.b, got_b) &&
           rt_test_read(n.g, n.c, got_c));
        OK(rt_graph_read_scalar(n.g, rt_graph_find(n.g, "grad_norm"), &got_norm, &error));
        OK(rt_test_read(n.g, rt_graph_grad(n.g, n.c), got_gc));
        EXPECT_NEAR(norm, got_norm, tol * norm);         /* the pre-clip norm */
        EXPECT_CLOSE(got_gc, gc, 4, tol * 0.1, tol);             /* gradients clipped in place */
        EXPECT_CLOSE(got_a, a, 3, tol * 0.1, tol);
        EXPECT_CLOSE(got_b, b, 4, tol * 0.1, tol);
        EXPECT_CLOSE(got_c, c, 4, tol * 0.1, tol);
    }
    /* no gradient: no step at all (no weight decay either), as PyTorch skips grad None */
    OK(rt_test_read(n.g, n.unused, un));
    EXPECT_NEAR(1.0, un[0], 0);
    EXPECT_NEAR(1.0, un[1], 0);
    rt_graph_free(n.g);
    return 0;
}

DEF_TEST(adamw_f64)
{
    return run_steps(RT_F64, 1000.0, 1e-13);
}

DEF_TEST(adamw_f32)
{
    return run_steps(RT_F32, 1000.0, 2e-6);
}

DEF_TEST(adamw_clipped)
{
    if (run_steps(RT_F64, 1.0, 1e-13) != 0)
        return -1;
    return run_steps(RT_F32, 1.0, 2e-6);
}

DEF_TEST(no_clipping_when_max_is_zero)
{
    return run_steps(RT_F64, 0.0, 1e-13);
}

/* AdamW's first step moves every coordinate by about lr (|m|/sqrt(v) = 1): a hand check that
 * does not share code with ref_adamw */
DEF_TEST(first_step_by_hand)
{
    rt_adamw_group groups[2] = {{0.1, 0.9, 0.999, 1e-8, 0.0}, {0.1, 0.9, 0.999, 1e-8, 0.0}};
    net n;
    OK(build(&n, RT_F64, groups, 0.0));
    OK(rt_test_run(n.g));
    double a[3];
    OK(rt_test_read(n.g, n.a, a));
    /* g = ka; m = 0.1 g, v = 0.001 g^2; bias-corrected m/sqrt(v) = sign(g) */
    for (int i = 0; i < 3; i++) {
        double expect = 0.25 - 0.1 * (0.1 * ka[i] / 0.1) /
                                   (sqrt(0.001 * ka[i] * ka[i]) / sqrt(0.001) + 1e-8);
        EXPECT_NEAR(expect, a[i], 1e-12);
        EXPECT_NEAR(0.25 - 0.1 * (ka[i] > 0 ? 1 : -1), a[i], 1e-8);
    }
    rt_graph_free(n.g);
    return 0;
}

/* resuming sets the step count: the bias corrections continue from there */
DEF_TEST(resume_step_count)
{
    rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 0.0}, {1e-2, 0.9, 0.999, 1e-8, 0.0}};
    net n;
    GError *error = NULL;
    OK(build(&n, RT_F64, groups, 0.0));
    OK(rt_graph_set_step(n.g, 10, &error));
    OK(rt_test_run(n.g));
    double c[4];
    OK(rt_test_read(n.g, n.c, c));
    double ref[4] = {-0.5, -0.5, -0.5, -0.5}, m[4] = {0}, v[4] = {0};
    ref_adamw(ref, kc, m, v, 4, &groups[1], 11);
    EXPECT_CLOSE(c, ref, 4, 0, 1e-13);
    OK(!rt_graph_set_step(n.g, 1.5, &error));
    EXPECT_ERROR(error, "is not a count of steps");
    OK(!rt_graph_set_lr(n.g, 2, 0.1, &error));
    EXPECT_ERROR(error, "the group must be 0..1");
    rt_graph_free(n.g);
    return 0;
}

/* the blobs: parameters of a group are contiguous, gradients and moments share the layout */
DEF_TEST(blob_layout)
{
    rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 0.0}, {1e-2, 0.9, 0.999, 1e-8, 0.0}};
    net n;
    OK(build(&n, RT_F32, groups, 0.0));
    EXPECT_EQ_INT(RT_STORAGE_PARAM, n.a->storage);
    EXPECT_EQ_INT(RT_STORAGE_GRAD, rt_graph_grad(n.g, n.a)->storage);
    EXPECT_EQ_INT(n.a->offset, rt_graph_grad(n.g, n.a)->offset);
    /* group 0 with gradients (a, b), then the unused one, then group 1 */
    OK(n.a->offset < n.b->offset);
    OK(n.b->offset < n.unused->offset);
    OK(n.unused->offset < n.c->offset);
    EXPECT_EQ_INT(rt_graph_storage_size(n.g, RT_STORAGE_PARAM),
                  rt_graph_storage_size(n.g, RT_STORAGE_ADAM_V));
    int adamw = 0;
    for (int i = 0; i < rt_graph_n_exec_nodes(n.g); i++)
        adamw += rt_graph_exec_node(n.g, i)->op == RT_OP_ADAMW;
    EXPECT_EQ_INT(2, adamw); /* one update per group */
    rt_graph_free(n.g);
    return 0;
}

int main(void)
{
    RUN_TEST(adamw_f64);
    RUN_TEST(adamw_f32);
    RUN_TEST(adamw_clipped);
    RUN_TEST(no_clipping_when_max_is_zero);
    RUN_TEST(first_step_by_hand);
    RUN_TEST(resume_step_count);
    RUN_TEST(blob_layout);
    END_TEST;
}
