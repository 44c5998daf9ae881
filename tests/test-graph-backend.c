/* The backend interface as rt_graph_plan, rt_graph_compute and rt_graph_free use it, through a
 * wrapper around the CPU backend that records its calls: graph_prepare runs once, after the
 * storages are allocated and filled (it sees the initialised parameters); the step gives the
 * plain CPU backend's numbers; graph_release runs once, in rt_graph_free, for the graph it
 * prepared. A failing graph_prepare fails the plan with its message and leaves a graph that
 * neither computes nor plans again. A backend built before the two slots existed (their bytes
 * zero) still plans and runs. The graph flags reach the backend (rt_graph_flags). */
#include "config.h"

#include "graph-test.h"

static rt_backend_i wrapper;
static int n_prepare, n_release;
static rt_graph *prepared_graph, *released_graph;
static double param_seen; /* element 0 of "w", read by graph_prepare */
static gboolean fail_prepare;

static gboolean wrapper_prepare(rt_backend_device *dev, rt_graph *g, GError **error)
{
    n_prepare++;
    prepared_graph = g;
    /* the storages exist and are filled: read a parameter through the backend */
    rt_tensor *w = rt_graph_find(g, "w");
    float v = 0;
    const rt_backend_buffer *buf = rt_graph_storage_buffer(g, w->storage);
    if (!rt_backend_cpu()->copy_to_host(dev, &v, buf, w->offset, sizeof v, error))
        return FALSE;
    param_seen = v;
    if (fail_prepare) {
        g_set_error(error, RT_ERROR, RT_ERROR_DEVICE, "test backend: no algorithm for node 3");
        return FALSE;
    }
    return TRUE;
}

static void wrapper_release(rt_backend_device *dev, rt_graph *g)
{
    (void)dev;
    n_release++;
    released_graph = g;
}

static void make_wrapper(gboolean with_slots)
{
    wrapper = *rt_backend_cpu();
    wrapper.device_type = "test";
    wrapper.graph_prepare = with_slots ? wrapper_prepare : NULL;
    wrapper.graph_release = with_slots ? wrapper_release : NULL;
    n_prepare = n_release = 0;
    prepared_graph = released_graph = NULL;
    param_seen = 0;
}

/* y = x @ w^T with w initialised to 0.5 everywhere: y[i] = 0.5 * sum(x[i, :]) */
static rt_graph *build(uint32_t flags, rt_tensor **x, rt_tensor **y)
{
    rt_graph *g = rt_graph_new(flags);
    *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){2, 3}, 0);
    rt_tensor *w = rt_param(g, "w", RT_F32, 2, (int64_t[]){1, 3}, rt_init_constant(0.5));
    *y = rt_linear(g, *x, w, NULL);
    rt_graph_output(g, "y", *y);
    return g;
}

static int run_once(rt_graph *g, rt_tensor *x, rt_tensor *y)
{
    GError *error = NULL;
    float in[6] = {1, 2, 3, -1, 0.5f, 4}, out[2] = {0, 0};
    OK(rt_graph_write(g, x, in, sizeof in, &error));
    OK(rt_graph_compute(g, &error));
    OK(rt_graph_read(g, y, out, sizeof out, &error));
    EXPECT_NO_ERROR(error);
    OK(out[0] == 3.0f && out[1] == 1.75f);
    return 0;
}

DEF_TEST(prepare_after_fill_and_release_at_free)
{
    GError *error = NULL;
    rt_tensor *x, *y;
    make_wrapper(TRUE);
    rt_graph *g = build(RT_GRAPH_TF32, &x, &y);
    EXPECT_EQ_INT(RT_GRAPH_TF32, rt_graph_flags(g));
    OK(rt_graph_plan(g, &wrapper, rt_test_cpu(), &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, n_prepare);
    OK(prepared_graph == g);
    OK1(param_seen == 0.5, "graph_prepare sees the parameters already initialised");
    EXPECT_EQ_INT(0, n_release);
    for (int i = 0; i < 3; i++)
        OK(run_once(g, x, y) == 0);
    EXPECT_EQ_INT(1, n_prepare);
    rt_graph_free(g);
    EXPECT_EQ_INT(1, n_release);
    OK(released_graph == g);
    return 0;
}

DEF_TEST(failed_prepare_fails_the_plan)
{
    GError *error = NULL;
    rt_tensor *x, *y;
    make_wrapper(TRUE);
    fail_prepare = TRUE;
    rt_graph *g = build(0, &x, &y);
    OK(!rt_graph_plan(g, &wrapper, rt_test_cpu(), &error));
    EXPECT_ERROR(error, "test backend: no algorithm for node 3");
    EXPECT_EQ_INT(1, n_prepare);
    OK(!rt_graph_compute(g, &error));
    EXPECT_ERROR(error, "rt_graph_compute: the graph is not planned; call rt_graph_plan first");
    OK(!rt_graph_plan(g, &wrapper, rt_test_cpu(), &error));
    EXPECT_ERROR(error, "rt_graph_plan: an earlier rt_graph_plan of this graph failed after "
                        "allocating its memory; build a new graph");
    rt_graph_free(g);
    EXPECT_EQ_INT(0, n_release);
    fail_prepare = FALSE;
    return 0;
}

/* A backend without the two slots (a module built against the header before they existed has
 * zeros there): nothing is prepared or released, the graph runs. */
DEF_TEST(backend_without_slots_still_runs)
{
    GError *error = NULL;
    rt_tensor *x, *y;
    make_wrapper(FALSE);
    rt_graph *g = build(0, &x, &y);
    EXPECT_EQ_INT(0, rt_graph_flags(g));
    OK(rt_graph_plan(g, &wrapper, rt_test_cpu(), &error));
    EXPECT_NO_ERROR(error);
    OK(run_once(g, x, y) == 0);
    rt_graph_free(g);
    EXPECT_EQ_INT(0, n_prepare);
    EXPECT_EQ_INT(0, n_release);
    return 0;
}

/* The plain CPU backend through the same calls. */
DEF_TEST(cpu_backend_plans_and_runs)
{
    GError *error = NULL;
    rt_tensor *x, *y;
    rt_graph *g = build(RT_GRAPH_TRAIN, &x, &y);
    OK(rt_graph_plan(g, rt_backend_cpu(), rt_test_cpu(), &error));
    EXPECT_NO_ERROR(error);
    OK(run_once(g, x, y) == 0);
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(prepare_after_fill_and_release_at_free);
    RUN_TEST(failed_prepare_fails_the_plan);
    RUN_TEST(backend_without_slots_still_runs);
    RUN_TEST(cpu_backend_plans_and_runs);
    END_TEST;
}
