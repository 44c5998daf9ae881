/* robotrain/policy.h: policies (ACT, ...) and the interface policy modules implement.
 *
 * A policy is a module of kind RT_PLUGIN_POLICY (policy-act.la) whose descriptor's vtable
 * points at a struct rt_policy_i. The module writes forward code only: it builds its training
 * forward pass (a scalar loss and named sub-losses) and its inference forward pass (an action
 * chunk) into graphs with the op constructors of robotrain/ops.h, and the core derives the
 * backward pass, the optimizer, memory and execution (robotrain/graph.h).
 *
 * Options. A policy's options are its descriptor's rows (keys relative to the policy: a row
 * "chunk_size" is the flag --policy.chunk_size). Every policy also has the options of
 * rt_policy_common_options() (LeRobot's PreTrainedConfig: type, input_features,
 * output_features, device, use_amp, ...), so a module must not declare those keys itself.
 * rt_policy_add_options() declares both under "policy." in an rt_config; the module's create()
 * reads the values as "policy.<key>". input_features and output_features hold JSON text, the
 * value of LeRobot's config.json ({"observation.state": {"type": "STATE", "shape": [14]}});
 * rt_policy_config_features() parses them.
 *
 * Batches. A graph's inputs are named with the dataset's keys: each input feature
 * ("observation.state" [B, 14], "observation.images.top" [B, 3, H, W]); for each feature with
 * delta indices (rt_policy_delta_indices) the stacked frames ("action" [B, T, 14]) and
 * "<key>_is_pad" (bool [B, T], TRUE where a frame lies outside the episode), as LeRobot's
 * dataset delivers them, already normalized. Parameters are named with LeRobot's state-dict
 * keys, so a state dict loads and saves by name (rt_policy_load_tensors()).
 *
 * How the training loop uses a policy p (error handling left out):
 *
 *     rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
 *     rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(batch_size);
 *     rt_policy_losses losses;
 *     rt_policy_build_train(p, g, &args, &losses, &error);   (sets the loss; names sub-losses)
 *     rt_graph_backward(g, &error);
 *     rt_policy_optimizer opt;
 *     rt_policy_optimizer_preset(p, g, &opt, &error);         (puts parameters in groups)
 *     rt_graph_add_adamw(g, opt.groups, opt.n_groups, opt.grad_clip_norm, &error);
 *     rt_graph_plan(g, backend, dev, &error);
 *     rt_policy_init_weights(p, g, &error);   (a fresh run: weights that come from files)
 *     each step: write the batch inputs, rt_graph_set_rng, rt_graph_compute, read losses.
 *
 * and for inference (rt_graph_new_sharing(g, 0) to read the training graph's weights):
 *
 *     rt_tensor *chunk;
 *     rt_policy_build_infer(p, eg, &args, &chunk, &error);
 *     rt_action_selector *s = rt_policy_selector_new(p, batch_size, &error);
 *     each control step: if (rt_action_selector_needs_chunk(s)) { write the observation,
 *     run eg, read chunk, rt_action_selector_push_chunk(s, ...) }; rt_action_selector_pop(s, ...)
 */
#ifndef ROBOTRAIN_POLICY_H
#define ROBOTRAIN_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <robotrain/graph.h>
#include <robotrain/option.h>
#include <robotrain/plugin-loader.h>
#include <robotrain/plugin.h>
#include <robotrain/safetensors.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------- features */

/* LeRobot's FeatureType. */
typedef enum {
    RT_FEATURE_STATE,
    RT_FEATURE_VISUAL,
    RT_FEATURE_ENV,
    RT_FEATURE_ACTION,
    RT_FEATURE_REWARD,
    RT_FEATURE_LANGUAGE,
    RT_FEATURE_N_TYPES
} rt_feature_type;

/* "STATE", "VISUAL", ...; NULL for a bad value. Returns (transfer none) a static string. */
const char *rt_feature_type_name(rt_feature_type type);
/* Parses the names above (exactly); FALSE when name is none of them. */
gboolean rt_feature_type_from_name(const char *name, rt_feature_type *type);

/* One feature of a sample, without the batch axis: "observation.images.top", VISUAL, [3,480,640]. */
typedef struct rt_policy_feature {
    const char *name;
    rt_feature_type type;
    int ndim;
    int64_t shape[RT_MAX_DIMS];
} rt_policy_feature;

/* An ordered set of features (the order of the JSON object: LeRobot's camera order). */
typedef struct rt_policy_features {
    size_t n;
    rt_policy_feature *items;
} rt_policy_features;

/* Parses a features object ({"observation.state": {"type": "STATE", "shape": [14]}, ...});
 * what names it in messages ("--policy.input_features"). Every problem is an error naming the
 * feature: a bad type, a shape that is not a list of 1 to RT_MAX_DIMS positive sizes, an
 * unknown member. Returns (transfer full) the set, to free with rt_policy_features_free(), or
 * NULL with error (RT_ERROR_INVALID_ARG). */
rt_policy_features *rt_policy_features_parse(const char *json, const char *what, GError **error);
/* The set as compact JSON ({"name": {"type": "STATE", "shape": [14]}}), the form
 * rt_policy_features_parse() reads. Returns (transfer full) a string to g_free. */
char *rt_policy_features_to_json(const rt_policy_features *features);
void rt_policy_features_free(rt_policy_features *features);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_policy_features, rt_policy_features_free)
/* The feature called name, or NULL. (transfer none) */
const rt_policy_feature *rt_policy_features_find(const rt_policy_features *features,
                                                 const char *name);
/* Elements of one sample of the feature (the product of its shape). */
int64_t rt_policy_feature_numel(const rt_policy_feature *feature);

/* ---------------------------------------------------------------- options */

/* The options every policy has (LeRobot's PreTrainedConfig), relative keys: type,
 * input_features, output_features, device, use_amp, use_peft, push_to_hub, repo_id, private,
 * tags, license, pretrained_path, pretrained_revision. n receives the count.
 * Returns (transfer none) a static table. */
const rt_option *rt_policy_common_options(size_t *n);

/* Declares in cfg, under "policy.", the common options and the module's own (desc->options),
 * and sets policy.type to the module's name. Fails when a key is declared twice (a module that
 * declares a common key) or a row is malformed, naming the key. */
gboolean rt_policy_add_options(rt_config *cfg, const rt_plugin_desc *desc, GError **error);

/* Parses the feature option key ("policy.input_features" or "policy.output_features") of cfg.
 * Returns (transfer full) the set (empty for "{}" or null), or NULL with error naming the
 * option and where its value came from. */
rt_policy_features *rt_policy_config_features(const rt_config *cfg, const char *key,
                                              GError **error);

/* The policy type of a LeRobot policy config.json ({"type": "act", ...}) held in data: its
 * "type" member. Returns (transfer full) a string to g_free, or NULL with error naming the
 * file (name) when data is not such an object. */
char *rt_policy_config_json_type(const char *data, gsize length, const char *name,
                                 GError **error);
/* Loads a LeRobot policy config.json ({"type": "act", "chunk_size": 100, "input_features":
 * {...}, ...}: the flat object LeRobot saves beside model.safetensors) into cfg's "policy.*"
 * options, as rt_config_load_json_data() does (every problem reported, nothing changed on
 * failure). Its type must be cfg's policy.type. */
gboolean rt_policy_config_load_json(rt_config *cfg, const char *data, gsize length,
                                    const char *name, GError **error);
/* cfg's "policy.*" options as a LeRobot policy config.json: the flat object, with "type" first
 * and the feature options as JSON objects. Returns (transfer full) a string to g_free. */
char *rt_policy_config_to_json(const rt_config *cfg);

/* ---------------------------------------------------------------- the module interface */

/* rt_policy_build_args.flags */
enum {
    /* Also name intermediate tensors as graph outputs, for comparison against a reference run
     * (each module documents its names; ACT uses those of the act-golden-v1 files). */
    RT_POLICY_BUILD_INTERMEDIATES = 1u << 0,
    /* Random draws of the model other than dropout (ACT: the VAE's reparameterization noise)
     * become inputs the caller fills, so that a reference run's noise can be fed; each module
     * documents their names (ACT: "vae.eps" [B, latent_dim]). */
    RT_POLICY_BUILD_NOISE_INPUTS = 1u << 1,
    /* The process is one of several sharing each batch (data-parallel training): a loss that
     * averages over a data-dependent count (ACT's masked L1: the non-padded action steps) is
     * multiplied by a scalar input that the caller sets every step to
     *     max(1, this process's count) * processes / max(1, the count summed over processes),
     * so that the average of the processes' gradients is the gradient of the whole batch's
     * loss. The module declares each such input in rt_policy_losses.counts. */
    RT_POLICY_BUILD_GLOBAL_COUNTS = 1u << 2,
};

typedef struct rt_policy_build_args {
    uint32_t struct_size; /* sizeof(rt_policy_build_args) the caller was built with */
    int64_t batch_size;   /* samples per step in this process */
    uint32_t flags;       /* RT_POLICY_BUILD_* */
    rt_dtype dtype;       /* of parameters and activations: RT_F32 (RT_F64 for reference runs) */
} rt_policy_build_args;

#define RT_POLICY_BUILD_ARGS_INIT(batch) { sizeof(rt_policy_build_args), (batch), 0, RT_F32 }

#define RT_POLICY_MAX_LOSSES 8

/* What build_train made. The names are static strings; each sub-loss is also a graph output of
 * that name (rt_graph_find). */
typedef struct rt_policy_losses {
    rt_tensor *loss; /* the scalar that rt_set_loss received */
    int n;
    const char *names[RT_POLICY_MAX_LOSSES]; /* LeRobot's loss_dict keys: "l1_loss", "kld_loss" */
    rt_tensor *values[RT_POLICY_MAX_LOSSES]; /* scalars */
    /* With RT_POLICY_BUILD_GLOBAL_COUNTS: the weight inputs (scalars of the build dtype) and
     * what they count: the FALSE entries of the bool batch input `mask`, times per_entry
     * elements each. Zero-initialise the struct: modules built before these fields leave them. */
    int n_counts;
    struct {
        rt_tensor *weight;
        const char *mask;  /* static string: "action_is_pad" */
        int64_t per_entry; /* ACT: action_dim */
    } counts[RT_POLICY_MAX_LOSSES];
} rt_policy_losses;

/* Which frames around the current one a sample holds (LeRobot's *_delta_indices): NULL / 0
 * means the current frame only (LeRobot's None). Owned by the policy. */
typedef struct rt_policy_delta_indices {
    const int64_t *observation;
    size_t n_observation;
    const int64_t *action; /* ACT: 0 .. chunk_size - 1 */
    size_t n_action;
    const int64_t *reward;
    size_t n_reward;
} rt_policy_delta_indices;

#define RT_POLICY_MAX_GROUPS 8

/* The policy's optimizer preset (LeRobot's get_optimizer_preset + get_optim_params): AdamW
 * groups in order (group i holds the parameters rt_param_set_group put in i) and the gradient
 * clipping norm. */
typedef struct rt_policy_optimizer {
    int n_groups;
    rt_adamw_group groups[RT_POLICY_MAX_GROUPS];
    const char *group_names[RT_POLICY_MAX_GROUPS]; /* static: "default", "backbone" */
    double grad_clip_norm;
} rt_policy_optimizer;

/* The interface of a policy module. Slots marked (optional) may be NULL; the core reads a slot
 * only when struct_size covers it. self is what create() returned; a selector is what
 * selector_new() returned. One thread at a time uses a policy and its selectors. */
typedef struct rt_policy_i {
    uint32_t struct_size; /* sizeof(struct rt_policy_i) the module was built with */

    /* Reads and validates the "policy.*" options of cfg (cross-field rules included: LeRobot's
     * __post_init__ and validate_features), copying what it needs: cfg may go afterwards.
     * Returns (transfer full) the policy's state, freed with destroy(); NULL with error
     * (RT_ERROR_INVALID_ARG naming the option(s) and what to do). */
    void *(*create)(const rt_config *cfg, GError **error);
    void (*destroy)(void *self);

    /* The frames a sample must hold. */
    void (*delta_indices)(void *self, rt_policy_delta_indices *out);

    /* Builds the training forward pass into g (made with RT_GRAPH_TRAIN; the module declares
     * its inputs, parameters and buffers), calls rt_set_loss and names each sub-loss as an
     * output. Returns FALSE with error (a graph construction error included). */
    gboolean (*build_train)(void *self, rt_graph *g, const rt_policy_build_args *args,
                            rt_policy_losses *losses, GError **error);
    /* Builds the inference forward pass into g: observation inputs only; *actions receives the
     * action chunk (the output "action", [B, T, action_dim], normalized as the training target). */
    gboolean (*build_infer)(void *self, rt_graph *g, const rt_policy_build_args *args,
                            rt_tensor **actions, GError **error);

    /* After build_train, before rt_graph_add_adamw: puts g's parameters in their groups and
     * fills out. */
    gboolean (*optimizer_preset)(void *self, rt_graph *g, rt_policy_optimizer *out,
                                 GError **error);
    /* After rt_graph_plan of a training graph that starts from scratch (not from a checkpoint):
     * fills the weights that come from files (ACT: --policy.pretrained_backbone_weights).
     * (optional) */
    gboolean (*init_weights)(void *self, rt_graph *g, GError **error);

    /* Action selection (LeRobot's select_action): the host-side state between chunks, for
     * batch_size environments. Returns (transfer full) a selector freed with selector_free(). */
    void *(*selector_new)(void *self, int64_t batch_size, GError **error);
    void (*selector_free)(void *selector);
    /* LeRobot's reset(), at the start of an episode. */
    void (*selector_reset)(void *selector);
    /* Whether the next pop needs a fresh chunk pushed first. */
    gboolean (*selector_needs_chunk)(void *selector);
    /* A chunk the inference graph predicted: n floats, [B, T, action_dim]. */
    gboolean (*selector_push_chunk)(void *selector, const float *chunk, size_t n, GError **error);
    /* The action to execute now: n floats, [B, action_dim]. Fails when a chunk is needed. */
    gboolean (*selector_pop)(void *selector, float *action, size_t n, GError **error);

    void *reserved[8];
} rt_policy_i;

/* ---------------------------------------------------------------- using a policy */

/* A created policy: a module's interface and state. Opaque. */
typedef struct rt_policy rt_policy;

/* The loaded policy module called type ("act") in registry, with an interface that has every
 * required slot. Returns (transfer none) the module, owned by registry; NULL with error
 * (RT_ERROR_NOT_FOUND listing the policies found, RT_ERROR_PLUGIN for an unusable module). */
const rt_plugin_module *rt_policy_find_module(rt_plugin_registry *registry, const char *type,
                                              GError **error);
/* The interface of a policy module's descriptor, or NULL with error when it lacks a required
 * slot (naming the module). (transfer none) */
const rt_policy_i *rt_policy_interface(const rt_plugin_desc *desc, GError **error);

/* Creates a policy from cfg (which rt_policy_add_options(desc) prepared and the command filled).
 * Returns (transfer full) the policy, freed with rt_policy_free(); NULL with error. */
rt_policy *rt_policy_new(const rt_plugin_desc *desc, const rt_config *cfg, GError **error);
void rt_policy_free(rt_policy *policy);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_policy, rt_policy_free)
/* The module's name (the policy type). (transfer none) */
const char *rt_policy_type(const rt_policy *policy);
/* (transfer none) */
const rt_policy_i *rt_policy_get_interface(const rt_policy *policy);

void rt_policy_get_delta_indices(rt_policy *policy, rt_policy_delta_indices *out);
/* The slots above, plus the checks the core owes them: the graph has no construction error
 * afterwards, the loss is set (build_train), the chunk exists (build_infer). */
gboolean rt_policy_build_train(rt_policy *policy, rt_graph *g, const rt_policy_build_args *args,
                               rt_policy_losses *losses, GError **error);
gboolean rt_policy_build_infer(rt_policy *policy, rt_graph *g, const rt_policy_build_args *args,
                               rt_tensor **actions, GError **error);
gboolean rt_policy_optimizer_preset(rt_policy *policy, rt_graph *g, rt_policy_optimizer *out,
                                    GError **error);
/* TRUE when the module has no init_weights slot. */
gboolean rt_policy_init_weights(rt_policy *policy, rt_graph *g, GError **error);

/* A selector of the policy (it must outlive the selector). Opaque. */
typedef struct rt_action_selector rt_action_selector;
/* Returns (transfer full) a selector freed with rt_action_selector_free(), or NULL with error. */
rt_action_selector *rt_policy_selector_new(rt_policy *policy, int64_t batch_size, GError **error);
void rt_action_selector_free(rt_action_selector *selector);
void rt_action_selector_reset(rt_action_selector *selector);
gboolean rt_action_selector_needs_chunk(rt_action_selector *selector);
gboolean rt_action_selector_push_chunk(rt_action_selector *selector, const float *chunk, size_t n,
                                       GError **error);
gboolean rt_action_selector_pop(rt_action_selector *selector, float *action, size_t n,
                                GError **error);

/* ---------------------------------------------------------------- weights */

/* Copies one tensor of st (F32, F16, BF16 or F64, converted) into the planned parameter or
 * buffer t of g. The shapes must be equal; errors name the file, the key, the expected and the
 * found shape. */
gboolean rt_policy_load_tensor(rt_graph *g, const rt_tensor *t, const rt_safetensors *st,
                               const rt_st_tensor *src, GError **error);

/* rt_policy_load_tensors flags */
enum {
    /* Every tensor of the file must be used (PyTorch's strict load_state_dict). */
    RT_POLICY_LOAD_STRICT = 1u << 0,
};

/* Loads every parameter and buffer of planned g whose name starts with graph_prefix from the
 * tensor of st named file_prefix + the rest of its name ("model.backbone." + "conv1.weight" from
 * "" + "conv1.weight" for torchvision's keys). A missing key, a bad dtype or shape fails,
 * naming the file and the key (and nothing is guaranteed loaded); n_loaded (may be NULL)
 * receives the count. Tensors of the file that match nothing are ignored unless
 * RT_POLICY_LOAD_STRICT. */
gboolean rt_policy_load_tensors(rt_graph *g, const rt_safetensors *st, const char *graph_prefix,
                                const char *file_prefix, uint32_t flags, int *n_loaded,
                                GError **error);

G_END_DECLS

#endif
