/* robotrain/plugin.h: the module ABI.
 *
 * A robotrain module (a policy, a compute backend or a comm backend) is a libtool module named
 * <kind>-<name>.la (policy-act.la, backend-cuda.la, comm-gloo.la) that exports exactly one
 * symbol, rt_plugin_<name>_get_desc (with '-' in the name written '_'), returning a pointer to a
 * static rt_plugin_desc. Write it with RT_PLUGIN_DEFINE and link with
 *     -module -avoid-version -shared -no-undefined -export-symbols-regex '^rt_plugin_'
 * The loader also accepts the generic symbol rt_plugin_get_desc when the named one is absent.
 *
 * The loader accepts a module when desc->abi_major == RT_PLUGIN_ABI_MAJOR,
 * desc->abi_minor <= RT_PLUGIN_ABI_MINOR and desc->struct_size covers every field it reads;
 * it also checks that the kind is known and matches the file name, that the name is the file's,
 * that the vtable is set and begins with a nonzero struct_size, and that the option table is
 * well formed. The first three fields never move. Fields are only ever appended (a minor bump);
 * the reserved tail keeps the size stable. robotrain-plugin(7) explains how to build a module
 * out of tree. */
#ifndef ROBOTRAIN_PLUGIN_H
#define ROBOTRAIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <robotrain/option.h>
#include <robotrain/version.h>

G_BEGIN_DECLS

typedef enum {
    RT_PLUGIN_ANY = 0,     /* in loader queries only: any kind; never a module's kind */
    RT_PLUGIN_POLICY = 1,  /* vtable: const struct rt_policy_i *  (robotrain/policy.h) */
    RT_PLUGIN_BACKEND = 2, /* vtable: const struct rt_backend_i * (robotrain/backend.h) */
    RT_PLUGIN_COMM = 3,    /* vtable: const struct rt_comm_i *    (robotrain/comm.h) */
} rt_plugin_kind;

typedef struct rt_plugin_desc {
    uint32_t abi_major;       /* RT_PLUGIN_ABI_MAJOR the module was built with */
    uint32_t abi_minor;       /* RT_PLUGIN_ABI_MINOR the module was built with */
    uint32_t struct_size;     /* sizeof(rt_plugin_desc) the module was built with */
    uint32_t kind;            /* rt_plugin_kind */
    const char *name;         /* the <name> of the file <kind>-<name>.la, [a-z0-9_-]; the loader
                                 treats '-' and '_' as the same character when it compares */
    const char *version;      /* the module's own version, or NULL */
    const char *license;      /* SPDX identifier, or NULL */
    const char *description;  /* one line for `robotrain plugins`, or NULL */
    const rt_option *options; /* the module's options (relative keys), or NULL when n_options is 0 */
    size_t n_options;         /* rows in options */
    const void *vtable;       /* kind-specific interface, begins with a uint32_t struct_size */
    void *reserved[8];        /* zero: room for fields added in later minors */
} rt_plugin_desc;

/* Marks the entry point as exported even when the module is compiled with -fvisibility=hidden
 * (the libtool flag -export-symbols-regex then has nothing else to hide). */
#if defined(__GNUC__) && !defined(_WIN32)
#define RT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define RT_PLUGIN_EXPORT
#endif

/* Defines the module's entry point, rt_plugin_<cname>_get_desc, and its descriptor. cname is
 * the module's name as a C identifier (write '_' for '-': policy-my-net.la uses my_net); the
 * descriptor's name is #cname. The descriptor is static: the loader never frees it, and modules
 * are never unloaded.
 * Example:
 *   RT_PLUGIN_DEFINE(act, RT_PLUGIN_POLICY, "0.1.0", "Apache-2.0", "Action Chunking Transformer",
 *                    act_options, G_N_ELEMENTS(act_options), &act_policy_iface)
 */
#define RT_PLUGIN_DEFINE(cname, kind_, version_, license_, description_, options_, n_options_, vtable_) \
    RT_PLUGIN_EXPORT const rt_plugin_desc *rt_plugin_##cname##_get_desc(void);                     \
    RT_PLUGIN_EXPORT const rt_plugin_desc *rt_plugin_##cname##_get_desc(void)                      \
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

/* The type of the entry point. It takes no arguments, has no side effects the loader relies on,
 * and returns the same pointer every time. */
typedef const rt_plugin_desc *(*rt_plugin_get_desc_fn)(void);

G_END_DECLS

#endif
