/* Backbone weights by Hub id: --policy.pretrained_backbone_weights=owner/name, or one of
 * torchvision's weight names, which map to the repositories where timm publishes torchvision's
 * own ImageNet weights as safetensors (same key names as torchvision's ResNet). */
#include "config.h"

#include <string.h>

#include "net/hub-private.h"

/* torchvision's ResNet weight enums and their safetensors copies on the Hub. DEFAULT is the
 * best of each family (V1 for resnet18/34, V2 above), as torchvision defines it. */
static const struct {
    const char *torchvision;
    const char *repo_id;
} torchvision_weights[] = {
    {"ResNet18_Weights.IMAGENET1K_V1", "timm/resnet18.tv_in1k"},
    {"ResNet18_Weights.DEFAULT", "timm/resnet18.tv_in1k"},
    {"ResNet34_Weights.IMAGENET1K_V1", "timm/resnet34.tv_in1k"},
    {"ResNet34_Weights.DEFAULT", "timm/resnet34.tv_in1k"},
    {"ResNet50_Weights.IMAGENET1K_V1", "timm/resnet50.tv_in1k"},
    {"ResNet50_Weights.IMAGENET1K_V2", "timm/resnet50.tv2_in1k"},
    {"ResNet50_Weights.DEFAULT", "timm/resnet50.tv2_in1k"},
    {"ResNet101_Weights.IMAGENET1K_V1", "timm/resnet101.tv_in1k"},
    {"ResNet101_Weights.IMAGENET1K_V2", "timm/resnet101.tv2_in1k"},
    {"ResNet101_Weights.DEFAULT", "timm/resnet101.tv2_in1k"},
    {"ResNet152_Weights.IMAGENET1K_V1", "timm/resnet152.tv_in1k"},
    {"ResNet152_Weights.IMAGENET1K_V2", "timm/resnet152.tv2_in1k"},
    {"ResNet152_Weights.DEFAULT", "timm/resnet152.tv2_in1k"},
};

const char *rt_hub_torchvision_weights_repo(const char *name)
{
    for (size_t i = 0; name && i < G_N_ELEMENTS(torchvision_weights); i++)
        if (strcmp(name, torchvision_weights[i].torchvision) == 0)
            return torchvision_weights[i].repo_id;
    return NULL;
}

gboolean rt_hub_looks_like_weights_id(const char *value)
{
    if (!value || !*value)
        return FALSE;
    if (rt_hub_torchvision_weights_repo(value))
        return TRUE;
    const char *at = strchr(value, '@');
    g_autofree char *id = at ? g_strndup(value, (gsize)(at - value)) : g_strdup(value);
    return strchr(id, '/') != NULL && rt_hub_check_repo_id(id, NULL) && (!at || at[1]);
}

char *rt_hub_weights_file(rt_hub *hub, const char *value, const char *flag, GError **error)
{
    const char *mapped = rt_hub_torchvision_weights_repo(value);
    const char *at = mapped ? NULL : strchr(value, '@');
    g_autofree char *repo_id = mapped ? g_strdup(mapped)
                               : at   ? g_strndup(value, (gsize)(at - value))
                                      : g_strdup(value);
    const char *revision = at ? at + 1 : NULL;
    if (!rt_hub_check_repo_id(repo_id, error))
        return NULL;
    g_autoptr(rt_hub) own = NULL;
    if (!hub) {
        own = rt_hub_new(NULL, error);
        if (!own)
            return NULL;
        hub = own;
    }
    GError *local = NULL;
    char *path =
        rt_hub_download_file(hub, RT_HUB_MODEL, repo_id, revision, "model.safetensors", NULL, &local);
    if (path)
        return path;
    g_autofree char *named =
        mapped ? g_strdup_printf("%s (torchvision's weights, published as %s)", value, repo_id)
               : g_strdup(value);
    if (hub->config->offline || g_error_matches(local, RT_ERROR, RT_ERROR_NOT_FOUND))
        g_set_error(error, RT_ERROR, local->code,
                    "%s=%s: %s\nTo get the file: run once with network access (HF_HUB_OFFLINE unset), "
                    "or copy model.safetensors of the Hub model %s into the cache (e.g. `hf download %s "
                    "model.safetensors`), or pass a local safetensors file, or pass null (none) for a "
                    "randomly initialised backbone",
                    flag, named, local->message, repo_id, repo_id);
    else
        g_set_error(error, RT_ERROR, local->code, "%s=%s: %s", flag, named, local->message);
    g_error_free(local);
    return NULL;
}
