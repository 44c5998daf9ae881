/* tests/plugins/test-module.c: the source of the small test modules. Each module compiles it
 * with -D flags that choose its entry point and its one defect:
 *   ENTRY=<symbol>         the entry point's name (required)
 *   MODULE_NAME="name"     the descriptor's name (required)
 *   MODULE_KIND=<kind>     the descriptor's kind (default RT_PLUGIN_POLICY)
 *   DESC_ABI_MAJOR=<n>, DESC_ABI_MINOR=<n>   the ABI it claims (default: this one)
 *   NULL_DESC              the entry point returns NULL
 *   NULL_VTABLE            the descriptor has no vtable
 *   CALL_UNDEFINED         calls a function that nothing defines (fails to bind with RTLD_NOW)
 *   CALL_HELPER            calls into librtmissing, which is never installed */
#include <robotrain/plugin.h>

#ifndef MODULE_KIND
#define MODULE_KIND RT_PLUGIN_POLICY
#endif
#ifndef DESC_ABI_MAJOR
#define DESC_ABI_MAJOR RT_PLUGIN_ABI_MAJOR
#endif
#ifndef DESC_ABI_MINOR
#define DESC_ABI_MINOR RT_PLUGIN_ABI_MINOR
#endif

typedef struct test_iface {
    uint32_t struct_size;
} test_iface;

#ifndef NULL_VTABLE
static const test_iface test_vtable = { sizeof(test_iface) };
#endif

#ifdef CALL_UNDEFINED
int rt_test_absent_function(void); /* defined nowhere */
#endif
#ifdef CALL_HELPER
int rt_test_helper_answer(void); /* tests/plugins/missing-helper.c */
#endif

/* Never set: the calls below are real references for the dynamic linker, never made. */
static volatile int test_never;

RT_PLUGIN_EXPORT const rt_plugin_desc *ENTRY(void);
RT_PLUGIN_EXPORT const rt_plugin_desc *ENTRY(void)
{
    static const rt_plugin_desc desc = {
        .abi_major = DESC_ABI_MAJOR,
        .abi_minor = DESC_ABI_MINOR,
        .struct_size = sizeof(rt_plugin_desc),
        .kind = MODULE_KIND,
        .name = MODULE_NAME,
        .version = "0.0.1",
        .license = "MIT",
        .description = "test module " MODULE_NAME,
#ifdef NULL_VTABLE
        .vtable = NULL,
#else
        .vtable = &test_vtable,
#endif
    };
#ifdef CALL_UNDEFINED
    if (test_never)
        rt_test_absent_function();
#endif
#ifdef CALL_HELPER
    if (test_never)
        rt_test_helper_answer();
#endif
#ifdef NULL_DESC
    if (!test_never)
        return NULL;
#endif
    return &desc;
}
