/* tests/plugins/policy-good.c: a well-formed policy module with one option of every type.
 * Built twice: tests/plugins/policy-good.la (version 1.2.3) and, with -DGOOD_VERSION and
 * -DGOOD_DESCRIPTION, tests/plugins/shadow/policy-good.la, to test which of two folders wins. */
#include <robotrain/plugin.h>

#ifndef GOOD_VERSION
#define GOOD_VERSION "1.2.3"
#endif
#ifndef GOOD_DESCRIPTION
#define GOOD_DESCRIPTION "Test policy with one option of every type"
#endif

/* The policy interface is not designed yet: the loader only reads its leading struct_size. */
typedef struct good_iface {
    uint32_t struct_size;
    int (*answer)(void);
} good_iface;

static int good_answer(void)
{
    return 42;
}

static const good_iface good_policy = { sizeof(good_iface), good_answer };

static const char *const vision_backbones[] = { "resnet18", "resnet34", "resnet50", NULL };

static const rt_option good_options[] = {
    { .key = "use_vae", .type = RT_OPT_BOOL, .default_value = "true",
      .help = "Train with the variational objective." },
    { .key = "chunk_size", .type = RT_OPT_INT, .default_value = "100",
      .help = "Number of actions predicted per chunk.", .min = 1, .max = 1000, .flags = RT_OPT_RANGE },
    { .key = "dropout", .type = RT_OPT_FLOAT, .default_value = "0.1",
      .help = "Dropout probability in the transformer.", .min = 0, .max = 1, .flags = RT_OPT_RANGE },
    { .key = "pretrained_backbone_weights", .type = RT_OPT_STRING,
      .default_value = "ResNet18_Weights.IMAGENET1K_V1",
      .help = "Torchvision weights of the backbone, or null for random.", .flags = RT_OPT_NULLABLE },
    { .key = "vision_backbone", .type = RT_OPT_ENUM, .default_value = "resnet18",
      .help = "Image encoder.", .choices = vision_backbones },
    { .key = "n_action_steps_list", .type = RT_OPT_LIST, .item_type = RT_OPT_INT,
      .default_value = "[1,2]", .help = "Steps to execute per chunk.", .min = 1, .max = 100,
      .flags = RT_OPT_RANGE },
    { .key = "stats_path", .type = RT_OPT_PATH, .default_value = NULL,
      .help = "Normalization statistics to use instead of the dataset's.", .flags = RT_OPT_NULLABLE },
    { .key = "device_name", .type = RT_OPT_STRING, .default_value = NULL,
      .help = "Device to train on.", .flags = RT_OPT_REQUIRED },
};

RT_PLUGIN_DEFINE(good, RT_PLUGIN_POLICY, GOOD_VERSION, "Apache-2.0", GOOD_DESCRIPTION, good_options,
                 G_N_ELEMENTS(good_options), &good_policy)
