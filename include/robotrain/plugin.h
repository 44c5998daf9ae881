/* robotrain/plugin.h: the module ABI.
 *
 * A robotrain module (a policy, a compute backend or a comm backend) is a libtool module that
 * exports exactly one symbol, rt_plugin_<name>_get_desc, returning a pointer to a static
 * rt_plugin_desc. Write it with RT_PLUGIN_DEFINE and link with
 *     -module -avoid-version -export-symbols-regex '^rt_plugin_'
 * The loader accepts a module when desc->abi_major == RT_PLUGIN_ABI_MAJOR and
 * desc->abi_minor <= RT_PLUGIN_ABI_MINOR, and desc->struct_size covers every field it reads.
 * Fields are only ever appended (a minor bump); the reserved tail keeps the size stable.
 * robotrain-plugin(7) explains how to build one out of tree. */
#ifndef ROBOTRAIN_PLUGIN_H
#define ROBOTRAIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <robotrain/option.h>
#include <robotrain/version.h>

G_BEGIN_DECLS

typedef enum {
    RT_PLUGIN_POLICY = 1,  /* vtable: const struct rt_policy_i *  (robotrain/policy.h) */
    RT_PLUGIN_BACKEND = 2, /* vtable: const struct rt_backend_i * (robotrain/backend.h) */
    RT_PLUGIN_COMM = 3,    /* vtable: const struct rt_comm_i *    (robotrain/comm.h) */
} rt_plugin_kind;

typedef struct rt_plugin_desc {
    uint32_t abi_major;       /* RT_PLUGIN_ABI_MAJOR the module was built with */
    uint32_t abi_minor;       /* RT_PLUGIN_ABI_MINOR the module was built with */
    uint32_t struct_size;     /* sizeof(rt_plugin_desc) the module was built with */
    uint32_t kind;            /* rt_plugin_kind */
    const char *name;         /* short name, [a-z0-9_-]; the symbol uses it with '-' as '_' */
    const char *version;      /* the module's own version */
    const char *license;      /* SPDX identifier */
    const char *description;  /* one line for `robotrain plugins` */
    const rt_option *options; /* the module's options (relative keys), or NULL */
    size_t n_options;
    const void *vtable;       /* kind-specific interface, begins with a uint32_t struct_size */
    void *reserved[8];        /* zero: room for fields added in later minors */
} rt_plugin_desc;

/* Defines the module's entry point. name must be a C identifier (use '_' for '-').
 * Example:
 *   RT_PLUGIN_DEFINE(act, RT_PLUGIN_POLICY, "0.1.0", "Apache-2.0", "Action Chunking Transformer",
 *                    act_options, G_N_ELEMENTS(act_options), &act_policy_iface)
 */
#define RT_PLUGIN_DEFINE(cname, kind_, version_, license_, description_, options_, n_options_, vtable_) \
    const rt_plugin_desc *rt_plugin_##cname##_get_desc(void);                                      \
    const rt_plugin_desc *rt_plugin_##cname##_get_desc(void)                                       \
    {                                                                                              \
        static const rt_plugin_desc desc = {                                                       \
            .abi_major = RT_PLUGIN_ABI_MAJOR,                                                      \
            .abi_minor = RT_PLUGIN_ABI_MINOR,                                                      \
            .struct_size = sizeof(rt_plugin_desc),                                                 \
            .kind = (kind_),                                                                       \
            .name = #cname,                                                                        \
            .version = (version_),                                                                 \
            .license = (license_),                                                                 \
            .description = (description_),                                                         \
            .options = (options_),                                                                 \
            .n_options = (n_options_),                                                             \
            .vtable = (vtable_),                                                                   \
        };                                                                                         \
        return &desc;                                                                              \
    }

typedef const rt_plugin_desc *(*rt_plugin_get_desc_fn)(void);

G_END_DECLS

#endif
