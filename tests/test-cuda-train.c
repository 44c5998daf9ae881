/* Training steps on the GPU: the MLP of test-graph-mlp.c (linear, layer norm, relu, dropout,
 * linear, mean squared error, backward, clipping, AdamW with two groups) trained for a few steps
 * on the CPU, on cuda:0 eagerly (ROBOTRAIN_CUDA_GRAPH=0) and on cuda:0 replaying the captured
 * CUDA graph. The GPU's losses and parameters follow the CPU's within f32 tolerances (the
 * dropout masks are the same); the replayed graph gives exactly the eager numbers; and what
 * the host changes between steps (inputs, RNG counters, learning rates, the step count) reaches
 * the replay: with lr 0 a step leaves the parameters unchanged, and after rt_graph_set_step the
 * bias correction follows. Skips (77) without a GPU. */
#include "config.h"

#include "cuda-test.h"

enum { B = 16, IN = 8, HID = 32, OUT = 4, STEPS = 5 };

typedef struct mlp {
    rt_graph *g;
    rt_tensor *x, *t, *loss;
} mlp;

static gboolean build(mlp *m, const rt_backend_i *backend, rt_backend_device *dev)
{
    GError *error = NULL;
    rt_graph *g = m->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(g, 7);
    double b1 = 1.0 / sqrt(IN), b2 = 1.0 / sqrt(HID);
    m->x = rt_input(g, "x", RT_F32, 2, (int64_t[]){B, IN}, 0);
    m->t = rt_input(g, "target", RT_F32, 2, (int64_t[]){B, OUT}, 0);
    rt_tensor *w1 = rt_param(g, "l1.weight", RT_F32, 2, (int64_t[]){HID, IN}, rt_init_uniform(-b1, b1));
    rt_tensor *c1 = rt_param(g, "l1.bias", RT_F32, 1, (int64_t[]){HID}, rt_init_uniform(-b1, b1));
    rt_tensor *ln_w = rt_param(g, "ln.weight", RT_F32, 1, (int64_t[]){HID}, rt_init_constant(1));
    rt_tensor *ln_b = rt_param(g, "ln.bias", RT_F32, 1, (int64_t[]){HID}, rt_init_constant(0));
    rt_tensor *w2 = rt_param(g, "l2.weight", RT_F32, 2, (int64_t[]){OUT, HID}, rt_init_uniform(-b2, b2));
    rt_tensor *c2 = rt_param(g, "l2.bias", RT_F32, 1, (int64_t[]){OUT}, rt_init_uniform(-b2, b2));
    rt_tensor *h = rt_relu(g, rt_layer_norm(g, rt_linear(g, m->x, w1, c1), ln_w, ln_b, 1e-5));
    h = rt_dropout(g, h, 0.1);
    rt_tensor *y = rt_linear(g, h, w2, c2);
    rt_tensor *d = rt_sub(g, y, m->t);
    m->loss = rt_mean(g, rt_mul(g, d, d), RT_ALL_AXES, FALSE);
    rt_set_loss(g, m->loss);
    rt_graph_set_group_by_prefix(g, "ln.", 1);
    rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 1e-4}, {5e-3, 0.9, 0.999, 1e-8, 0}};
    if (!rt_graph_backward(g, &error) || !rt_graph_add_adamw(g, groups, 2, 1.0, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_cuda_test_plan(g, backend, dev);
}

static void make_batch(rt_test_rng *r, float *x, float *t)
{
    double xd[B * IN];
    rt_test_fill(r, xd, B * IN, -1, 1);
    for (int i = 0; i < B * IN; i++)
        x[i] = (float)xd[i];
    for (int b = 0; b < B; b++)
        for (int o = 0; o < OUT; o++) {
            double s = 0;
            for (int i = 0; i < IN; i++)
                s += xd[b * IN + i] * sin(1.0 + o * IN + i);
            t[b * OUT + o] = (float)s;
        }
}

/* one step with batch number k and RNG step k */
static gboolean step(mlp *m, int k, double *loss)
{
    rt_test_rng r = {(uint64_t)(12345 + k)};
    float x[B * IN], t[B * OUT];
    make_batch(&r, x, t);
    GError *error = NULL;
    gboolean ok = rt_graph_write(m->g, m->x, x, sizeof x, &error) &&
                  rt_graph_write(m->g, m->t, t, sizeof t, &error) &&
                  rt_graph_set_rng(m->g, 42, (uint64_t)k, 0, &error) && rt_graph_compute(m->g, &error) &&
                  rt_graph_read_scalar(m->g, m->loss, loss, &error);
    if (!ok) {
        printf("# step %d: %s\n", k, error->message);
        g_error_free(error);
    }
    return ok;
}

/* all parameters, in creation order, as one f32 array (transfer full: g_free) */
static float *params_of(mlp *m, int64_t *n)
{
    *n = 0;
    for (int i = 0; i < rt_graph_n_params(m->g); i++)
        *n += rt_tensor_numel(rt_graph_param(m->g, i));
    float *all = g_new(float, *n), *at = all;
    for (int i = 0; i < rt_graph_n_params(m->g); i++) {
        rt_tensor *p = rt_graph_param(m->g, i);
        GError *error = NULL;
        if (!rt_graph_read(m->g, p, at, rt_tensor_nbytes(p), &error)) {
            printf("# reading %s: %s\n", p->name, error->message);
            g_error_free(error);
        }
        at += rt_tensor_numel(p);
    }
    return all;
}

static double *to_double(const float *f, int64_t n)
{
    double *d = g_new(double, n);
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

static mlp cpu, eager, graph;
static rt_backend_device *eager_dev, *graph_dev;

DEF_TEST(gpu_steps_follow_the_cpu)
{
    const rt_backend_i *cuda = rt_cuda_test_load();
    OK(build(&cpu, rt_backend_cpu(), rt_test_cpu()));
    OK(build(&eager, cuda, eager_dev));
    OK(build(&graph, cuda, graph_dev));
    for (int k = 0; k < STEPS; k++) {
        double lc, le, lg;
        OK(step(&cpu, k, &lc) && step(&eager, k, &le) && step(&graph, k, &lg));
        printf("# step %d: loss cpu %.9g, eager %.9g, graph %.9g\n", k, lc, le, lg);
        OK1(fabs(le - lc) <= 1e-5 + 1e-4 * fabs(lc), "the GPU's loss follows the CPU's");
        OK1(le == lg, "the replayed graph's loss is the eager one, exactly");
    }
    int64_t n, n2, n3;
    float *pc = params_of(&cpu, &n), *pe = params_of(&eager, &n2), *pg = params_of(&graph, &n3);
    EXPECT_EQ_INT(n, n2);
    EXPECT_EQ_INT(n, n3);
    double *dc = to_double(pc, n), *de = to_double(pe, n);
    EXPECT_CLOSE(de, dc, n, 1e-5, 1e-3);
    OK1(memcmp(pe, pg, (size_t)n * sizeof(float)) == 0,
        "eager and replayed parameters are bit for bit equal");
    double nc, ng;
    GError *error = NULL;
    OK(rt_graph_read_scalar(cpu.g, rt_graph_find(cpu.g, "grad_norm"), &nc, &error));
    OK(rt_graph_read_scalar(graph.g, rt_graph_find(graph.g, "grad_norm"), &ng, &error));
    OK1(fabs(nc - ng) <= 1e-4 * nc, "grad_norm follows the CPU's");
    g_free(pc);
    g_free(pe);
    g_free(pg);
    g_free(dc);
    g_free(de);
    return 0;
}

/* the replay reads what the host writes between steps */
DEF_TEST(replay_sees_new_hyper_parameters)
{
    GError *error = NULL;
    mlp *all[3] = {&cpu, &eager, &graph};
    for (int i = 0; i < 3; i++) {
        OK(rt_graph_set_lr(all[i]->g, 0, 0.0, &error) && rt_graph_set_lr(all[i]->g, 1, 0.0, &error));
        EXPECT_NO_ERROR(error);
    }
    int64_t n;
    float *before = params_of(&graph, &n);
    double loss;
    OK(step(&graph, STEPS, &loss));
    float *after = params_of(&graph, &n);
    OK1(memcmp(before, after, (size_t)n * sizeof(float)) == 0, "with lr 0 the replayed step changes nothing");
    g_free(before);
    g_free(after);
    OK(step(&cpu, STEPS, &loss) && step(&eager, STEPS, &loss));

    /* new learning rates and a step count far ahead: both reach every device */
    for (int i = 0; i < 3; i++) {
        OK(rt_graph_set_lr(all[i]->g, 0, 3e-3, &error) && rt_graph_set_lr(all[i]->g, 1, 1e-3, &error) &&
           rt_graph_set_step(all[i]->g, 100, &error));
        EXPECT_NO_ERROR(error);
        OK(step(all[i], STEPS + 1, &loss));
    }
    int64_t n2, n3;
    float *pc = params_of(&cpu, &n), *pe = params_of(&eager, &n2), *pg = params_of(&graph, &n3);
    double *dc = to_double(pc, n), *dg = to_double(pg, n);
    EXPECT_CLOSE(dg, dc, n, 1e-5, 1e-3);
    OK1(memcmp(pe, pg, (size_t)n * sizeof(float)) == 0,
        "eager and replayed parameters still agree bit for bit");
    g_free(pc);
    g_free(pe);
    g_free(pg);
    g_free(dc);
    g_free(dg);
    return 0;
}

int main(void)
{
    rt_cuda_test_need_gpu();
    eager_dev = rt_cuda_test_open("0");
    graph_dev = rt_cuda_test_open("1");
    RUN_TEST(gpu_steps_follow_the_cpu);
    if (!rt_test_failures)
        RUN_TEST(replay_sees_new_hyper_parameters);
    rt_graph_free(cpu.g);
    rt_graph_free(eager.g);
    rt_graph_free(graph.g);
    rt_cuda_test_load()->close(eager_dev);
    rt_cuda_test_load()->close(graph_dev);
    END_TEST;
}
