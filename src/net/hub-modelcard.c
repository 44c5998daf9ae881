/* The README.md (model card) of a pushed policy: LeRobot's metadata block, and a short default
 * text. */
#include "config.h"

#include <string.h>

#include "net/hub-private.h"

static gboolean plain_char(char c)
{
    return g_ascii_isalnum(c) || c == '.' || c == '_' || c == '/' || c == '-' || c == '+';
}

/* A YAML scalar as PyYAML would accept it back as the same string. */
static void yaml_scalar(GString *out, const char *v)
{
    static const char *const special[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", NULL};
    gboolean plain = g_ascii_isalpha(v[0]) || (v[0] && g_ascii_isdigit(v[0]));
    for (const char *p = v; *p && plain; p++)
        plain = plain_char(*p);
    for (const char *const *s = special; *s && plain; s++)
        plain = g_ascii_strcasecmp(v, *s) != 0;
    if (plain) {
        char *end = NULL;
        g_ascii_strtod(v, &end);
        plain = !(end && *end == '\0'); /* "2.0" would read back as a number */
    }
    if (plain) {
        g_string_append(out, v);
        return;
    }
    gboolean control = FALSE;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        control = control || *p < 0x20;
    if (!control) {
        g_string_append_c(out, '\'');
        for (const char *p = v; *p; p++) {
            if (*p == '\'')
                g_string_append_c(out, '\'');
            g_string_append_c(out, *p);
        }
        g_string_append_c(out, '\'');
        return;
    }
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(out, "\\%c", *p);
        else if (*p == '\n')
            g_string_append(out, "\\n");
        else if (*p == '\t')
            g_string_append(out, "\\t");
        else if (*p < 0x20)
            g_string_append_printf(out, "\\x%02x", *p);
        else
            g_string_append_c(out, (char)*p);
    }
    g_string_append_c(out, '"');
}

static void yaml_key(GString *out, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    g_string_append_printf(out, "%s: ", key);
    yaml_scalar(out, value);
    g_string_append_c(out, '\n');
}

char *rt_hub_model_card_metadata(const rt_hub_model_card *card)
{
    g_return_val_if_fail(card != NULL, NULL);
    const char *type = card->policy_type && *card->policy_type ? card->policy_type : NULL;
    GString *out = g_string_new(NULL);
    /* huggingface_hub's ModelCardData order */
    yaml_key(out, "base_model", card->base_model);
    yaml_key(out, "datasets", card->dataset_repo_id);
    yaml_key(out, "library_name", "lerobot");
    yaml_key(out, "license", card->license && *card->license ? card->license : "apache-2.0");
    yaml_key(out, "model_name", type);
    yaml_key(out, "pipeline_tag", "robotics");
    GPtrArray *tags = g_ptr_array_new();
    const char *fixed[] = {"robotics", "lerobot", type};
    for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++)
        if (fixed[i])
            g_ptr_array_add(tags, (gpointer)fixed[i]);
    for (const char *const *t = card->tags; t && *t; t++)
        if (**t)
            g_ptr_array_add(tags, (gpointer)*t);
    g_string_append(out, "tags:\n");
    for (guint i = 0; i < tags->len; i++) {
        gboolean dup = FALSE;
        for (guint k = 0; k < i && !dup; k++)
            dup = strcmp(tags->pdata[k], tags->pdata[i]) == 0;
        if (dup)
            continue;
        g_string_append(out, "- ");
        yaml_scalar(out, tags->pdata[i]);
        g_string_append_c(out, '\n');
    }
    g_ptr_array_unref(tags);
    if (out->len && out->str[out->len - 1] == '\n')
        g_string_truncate(out, out->len - 1);
    return g_string_free(out, FALSE);
}

static char *default_body(const rt_hub_model_card *card)
{
    const char *type = card->policy_type && *card->policy_type ? card->policy_type : "policy";
    const char *dataset = card->dataset_repo_id;
    const char *repo = card->repo_id ? card->repo_id : "<this repository>";
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "# %s policy\n\n", type);
    g_string_append_printf(s, "A **%s** policy", type);
    if (dataset)
        g_string_append_printf(s, " trained on [%s](https://huggingface.co/datasets/%s)", dataset, dataset);
    g_string_append(s, " with robotrain, a native trainer that writes LeRobot's checkpoint "
                       "format: `config.json`, `model.safetensors`, `train_config.json` and the "
                       "processor files load in LeRobot as they are.\n\n");
    g_string_append(s, "## Use it\n\nLeRobot and robotrain load it by its Hub id:\n\n```bash\n");
    g_string_append_printf(s,
                           "robotrain train --policy.path=%s --dataset.repo_id=%s \\\n"
                           "    --output_dir=outputs/train/finetune\n```\n\n",
                           repo, dataset ? dataset : "<dataset>");
    g_string_append(s, "## Train one like it\n\n```bash\n");
    g_string_append_printf(s,
                           "robotrain train --dataset.repo_id=%s --policy.type=%s \\\n"
                           "    --output_dir=outputs/train/%s --policy.repo_id=%s\n```\n\n",
                           dataset ? dataset : "<dataset>", type, type, repo);
    g_string_append_printf(s, "## Details\n\n- License: %s\n",
                           card->license && *card->license ? card->license : "apache-2.0");
    return g_string_free(s, FALSE);
}

char *rt_hub_model_card_render(const rt_hub_model_card *card, const char *body)
{
    g_return_val_if_fail(card != NULL, NULL);
    char *meta = rt_hub_model_card_metadata(card);
    char *text = body ? g_strdup(body) : default_body(card);
    char *card_text = g_strdup_printf("---\n%s\n---\n\n%s", meta, text);
    g_free(meta);
    g_free(text);
    return card_text;
}
