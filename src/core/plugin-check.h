/* src/core/plugin-check.h: the checks a module's descriptor must pass (internal).
 *
 * Every failure is an RT_ERROR_PLUGIN whose message starts with the module's file, says what is
 * wrong and what to do. The registry (plugin-loader.c) runs them in this order; tests run them
 * on descriptors of their own. */
#ifndef ROBOTRAIN_CORE_PLUGIN_CHECK_H
#define ROBOTRAIN_CORE_PLUGIN_CHECK_H

#include <glib.h>

#include <robotrain/plugin.h>

G_BEGIN_DECLS

/* The smallest descriptor this core reads: every field before reserved[]. */
#define RT_PLUGIN_DESC_MIN_SIZE (offsetof(rt_plugin_desc, reserved))

/* Most option rows a module may declare; more means n_options is garbage. */
#define RT_PLUGIN_MAX_OPTIONS 4096

/* TRUE when desc (from the module file path) was built for a compatible ABI: the same major,
 * a minor not newer than ours, and a struct_size that covers every field we read. Only then may
 * any field after struct_size be read. */
gboolean rt_plugin_desc_check_abi(const rt_plugin_desc *desc, const char *path, GError **error);

/* TRUE when the content of an ABI-compatible desc is usable: a known kind equal to file_kind
 * (from the file name), a name equal to file_name (with '-' and '_' the same), a vtable that
 * starts with a nonzero struct_size, and a well-formed option table. */
gboolean rt_plugin_desc_check_fields(const rt_plugin_desc *desc, const char *path, rt_plugin_kind file_kind,
                                     const char *file_name, GError **error);

/* TRUE when the n_options rows of options are well formed: each has a key, and the table is
 * one rt_config_add_options() accepts (keys used once and not both an option and a group, known
 * types, help text, choices for an enum, valid defaults, sane ranges and flags). options may be
 * NULL only when n_options is 0. */
gboolean rt_plugin_options_check(const rt_option *options, size_t n_options, const char *path,
                                 GError **error);

/* TRUE when a and b are the same name, '-' and '_' counting as the same character. */
gboolean rt_plugin_names_equal(const char *a, const char *b);

G_END_DECLS

#endif
