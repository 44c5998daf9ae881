/* tests/plugins/missing-helper.c: librtmissing, a library that policy-missing-dep links against
 * and that is never installed or put in any search path, so that loading the module fails on a
 * missing dependency. */
int rt_test_helper_answer(void);
int rt_test_helper_answer(void)
{
    return 42;
}
