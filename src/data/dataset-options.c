/* The --dataset.* flags this layer reads, as rows of an option table. */
#include "config.h"

#include <robotrain/option.h>

#include "data/dataset.h"

static const rt_option dataset_rows[] = {
    {.key = "episodes",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_INT,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 16777215,
     .null_text = "all",
     .help = "The episodes to use (their episode_index), e.g. [0,1,2]; only their files need to be there."},
    {.key = "use_imagenet_stats",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Normalize cameras with ImageNet's mean and std instead of the dataset's own."},
};

const rt_option *rt_dataset_option_rows(size_t *n)
{
    *n = G_N_ELEMENTS(dataset_rows);
    return dataset_rows;
}

void rt_dataset_options_from_config(const rt_config *cfg, const char *prefix, rt_dataset_options *options,
                                    int64_t **episodes)
{
    rt_dataset_options_init(options);
    g_autofree char *ek = prefix && *prefix ? g_strdup_printf("%s.episodes", prefix) : g_strdup("episodes");
    g_autofree char *ik =
        prefix && *prefix ? g_strdup_printf("%s.use_imagenet_stats", prefix) : g_strdup("use_imagenet_stats");
    size_t n = 0;
    *episodes = rt_config_get_int_list(cfg, ek, &n);
    options->episodes = *episodes;
    options->n_episodes = n;
    options->use_imagenet_stats = rt_config_get_bool(cfg, ik);
}
