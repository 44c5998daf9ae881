/* --policy.pretrained_backbone_weights: a safetensors file with torchvision's ResNet keys
 * (conv1.weight, bn1.running_mean, layer1.0.conv1.weight, ...; fc.* and num_batches_tracked are
 * ignored), or a folder holding one as model.safetensors, or a Hub model id (owner/name[@rev])
 * or torchvision weights name (LeRobot's default ResNet18_Weights.IMAGENET1K_V1), whose
 * model.safetensors comes from the Hub cache, downloaded when missing (robotrain/hub.h). A
 * local path wins over a Hub id of the same spelling, as in huggingface_hub. */
#include "config.h"

#include <string.h>

#include <robotrain/hub.h>

#include "act.h"

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
        if (rt_hub_looks_like_weights_id(value)) {
            g_free(path);
            path = rt_hub_weights_file(NULL, value, "--policy.pretrained_backbone_weights", error);
            if (!path)
                return FALSE;
        } else {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "--policy.pretrained_backbone_weights=%s: no such file (give a safetensors file "
                        "with torchvision's key names, a folder holding model.safetensors, a Hub model "
                        "id such as timm/resnet18.tv_in1k, or null)",
                        value);
            return FALSE;
        }
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
