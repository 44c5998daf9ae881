/* policy-hello: the smallest robotrain policy module, built out of tree against the installed
 * SDK (pkg-config robotrain). It declares two options and its interface. */
#include <robotrain/robotrain.h>

/* The policy interface. robotrain reads the leading struct_size of every vtable to know which
 * slots the module has; the slots of a policy (build the training graph, build the inference
 * graph, ...) are declared by robotrain/policy.h. */
typedef struct hello_iface {
    uint32_t struct_size;
} hello_iface;

static const hello_iface hello_policy = { sizeof(hello_iface) };

static const char *const hello_activations[] = { "relu", "gelu", NULL };

/* Keys are relative: users give them as --policy.hidden_dim=256. */
static const rt_option hello_options[] = {
    { .key = "hidden_dim", .type = RT_OPT_INT, .default_value = "128",
      .help = "Width of the hidden layer.", .min = 1, .max = 65536, .flags = RT_OPT_RANGE },
    { .key = "activation", .type = RT_OPT_ENUM, .default_value = "relu",
      .help = "Activation of the hidden layer.", .choices = hello_activations },
};

/* The module's one exported symbol: rt_plugin_hello_get_desc. */
RT_PLUGIN_DEFINE(hello, RT_PLUGIN_POLICY, "0.1.0", "Apache-2.0",
                 "Example policy built out of tree", hello_options,
                 G_N_ELEMENTS(hello_options), &hello_policy)
