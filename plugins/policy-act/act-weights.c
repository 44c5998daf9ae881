/* --policy.pretrained_backbone_weights: a safetensors file with torchvision's ResNet keys
 * (conv1.weight, bn1.running_mean, layer1.0.conv1.weight, ...; fc.* and num_batches_tracked are
 * ignored), or a folder holding one as model.safetensors. A Hub id or a torchvision weights name
 * gets an error that says what to do until robotrain downloads them itself. */
#include "config.h"

#include <string.h>

#include "act.h"

/* owner/name as the Hub spells repository ids */
static gboolean looks_like_hub_id(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
        return FALSE;
    for (const char *p = s; *p; p++)
        if (p != slash && !g_ascii_isalnum(*p) && *p != '-' && *p != '_' && *p != '.')
            return FALSE;
    return TRUE;
}

/* ResNet18_Weights.IMAGENET1K_V1, as torchvision names its weight enums */
static gboolean looks_like_torchvision_weights(const char *s)
{
    const char *dot = strstr(s, "_Weights.");
    return dot && dot != s && !strchr(s, '/') && dot[strlen("_Weights.")];
}

gboolean act_load_pretrained_backbone(const act_config *c, rt_graph *g, GError **error)
{
    const char *value = c->pretrained_backbone_weights;
    if (!value || c->n_cameras == 0)
        return TRUE; /* torchvision's random initialisation, or no backbone at all */
    g_autofree char *path = value[0] == '~' && (value[1] == '/' || !value[1])
                                ? g_build_filename(g_get_home_dir(), value + 1, NULL)
                                : g_strdup(value);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        char *inner = g_build_filename(path, "model.safetensors", NULL);
        g_free(path);
        path = inner;
        if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "--policy.pretrained_backbone_weights=%s is a folder without model.safetensors; "
                        "name the safetensors file itself", value);
            return FALSE;
        }
    } else if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        if (looks_like_hub_id(value))
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "--policy.pretrained_backbone_weights=%s: Hub ids need the network support; "
                        "pass a local path or null", value);
        else if (looks_like_torchvision_weights(value))
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "--policy.pretrained_backbone_weights=%s names torchvision weights, which "
                        "PyTorch downloads as a pickle; robotrain reads them from a safetensors file "
                        "with torchvision's key names: save the state dict of torchvision's %s(weights="
                        "\"%s\") with safetensors.torch.save_file and pass that file, or null for a "
                        "random backbone", value, c->vision_backbone, strchr(value, '.') + 1);
        else
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "--policy.pretrained_backbone_weights=%s: no such file (give a safetensors file "
                        "with torchvision's key names, a folder holding model.safetensors, or null)",
                        value);
        return FALSE;
    }
    g_autoptr(GError) local = NULL;
    rt_safetensors *st = rt_safetensors_open(path, &local);
    if (!st) {
        g_set_error(error, RT_ERROR, local->code, "--policy.pretrained_backbone_weights: %s", local->message);
        return FALSE;
    }
    gboolean ok = rt_policy_load_tensors(g, st, "model.backbone.", "", 0, NULL, &local);
    if (!ok)
        g_set_error(error, RT_ERROR, local->code, "--policy.pretrained_backbone_weights: %s (a %s with "
                    "torchvision's key names is expected)", local->message, c->vision_backbone);
    rt_safetensors_close(st);
    return ok;
}
