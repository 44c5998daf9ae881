/* tests/testing.h: a tiny test harness for C unit tests.
 *
 *   DEF_TEST(name) { ...; OK(cond); EXPECT_EQ_INT(a, b); EXPECT_ERROR(err, "substring"); return 0; }
 *   int main(void) { RUN_TEST(name); ...; END_TEST; }
 *
 * Each check prints a TAP-shaped "ok N - ..." or "not ok N - ..." line; a test function stops at
 * its first failed check. END_TEST exits 1 when anything failed. SKIP_ALL(reason) exits 77, which
 * the harness reports as SKIP. Messages go to stdout so the .log file shows them in order. */
#ifndef ROBOTRAIN_TESTING_H
#define ROBOTRAIN_TESTING_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

static int rt_test_count;
static int rt_test_failures;

#define DEF_TEST(name) static int test_##name(void)

#define RUN_TEST(name)                                                                  \
    do {                                                                                \
        printf("# %s\n", #name);                                                        \
        fflush(stdout);                                                                 \
        if (test_##name() != 0) {                                                       \
            rt_test_failures++;                                                         \
            printf("# FAILED: %s\n", #name);                                            \
        }                                                                               \
    } while (0)

#define END_TEST                                                                        \
    do {                                                                                \
        printf("# %d checks, %d failed test(s)\n", rt_test_count, rt_test_failures);   \
        return rt_test_failures ? 1 : 0;                                                \
    } while (0)

#define SKIP_ALL(...)                                                                   \
    do {                                                                                \
        printf("1..0 # SKIP ");                                                         \
        printf(__VA_ARGS__);                                                            \
        printf("\n");                                                                   \
        exit(77);                                                                       \
    } while (0)

#define RT_TEST_REPORT(ok, ...)                                                         \
    do {                                                                                \
        rt_test_count++;                                                                \
        printf("%sok %d - ", (ok) ? "" : "not ", rt_test_count);                        \
        printf(__VA_ARGS__);                                                            \
        printf("\n");                                                                   \
        fflush(stdout);                                                                 \
    } while (0)

#define OK1(cond, text)                                                                 \
    do {                                                                                \
        int ok_ = !!(cond);                                                             \
        RT_TEST_REPORT(ok_, "%s (%s:%d)", (text), __FILE__, __LINE__);                  \
        if (!ok_)                                                                       \
            return -1;                                                                  \
    } while (0)
#define OK(cond) OK1(cond, #cond)

#define EXPECT_EQ_INT(expect, actual)                                                   \
    do {                                                                                \
        long long e_ = (long long)(expect), a_ = (long long)(actual);                   \
        RT_TEST_REPORT(e_ == a_, "%s = %lld, expected %lld (%s:%d)", #actual, a_, e_,   \
                       __FILE__, __LINE__);                                             \
        if (e_ != a_)                                                                   \
            return -1;                                                                  \
    } while (0)

#define EXPECT_EQ_STR(expect, actual)                                                   \
    do {                                                                                \
        const char *e_ = (expect), *a_ = (actual);                                      \
        int ok_ = (e_ && a_) ? strcmp(e_, a_) == 0 : e_ == a_;                          \
        RT_TEST_REPORT(ok_, "%s = \"%s\", expected \"%s\" (%s:%d)", #actual,            \
                       a_ ? a_ : "(null)", e_ ? e_ : "(null)", __FILE__, __LINE__);     \
        if (!ok_)                                                                       \
            return -1;                                                                  \
    } while (0)

/* |actual - expect| <= tol */
#define EXPECT_NEAR(expect, actual, tol)                                                \
    do {                                                                                \
        double e_ = (expect), a_ = (actual), t_ = (tol);                                \
        int ok_ = fabs(e_ - a_) <= t_ || (isnan(e_) && isnan(a_));                      \
        RT_TEST_REPORT(ok_, "%s = %.9g, expected %.9g +- %.3g (%s:%d)", #actual, a_,    \
                       e_, t_, __FILE__, __LINE__);                                     \
        if (!ok_)                                                                       \
            return -1;                                                                  \
    } while (0)

/* A call failed with a GError whose message contains substring (and the error is freed). */
#define EXPECT_ERROR(err, substring)                                                    \
    do {                                                                                \
        GError **ep_ = &(err);                                                          \
        int ok_ = *ep_ && strstr((*ep_)->message, (substring)) != NULL;                 \
        RT_TEST_REPORT(ok_, "error contains \"%s\": got \"%s\" (%s:%d)", (substring),   \
                       *ep_ ? (*ep_)->message : "(no error)", __FILE__, __LINE__);      \
        g_clear_error(ep_);                                                             \
        if (!ok_)                                                                       \
            return -1;                                                                  \
    } while (0)

/* A call succeeded: err is NULL (its message is printed otherwise). */
#define EXPECT_NO_ERROR(err)                                                            \
    do {                                                                                \
        GError **ep_ = &(err);                                                          \
        RT_TEST_REPORT(*ep_ == NULL, "no error: %s (%s:%d)",                            \
                       *ep_ ? (*ep_)->message : "none", __FILE__, __LINE__);            \
        if (*ep_) {                                                                     \
            g_clear_error(ep_);                                                         \
            return -1;                                                                  \
        }                                                                               \
    } while (0)

/* True when the harness runs this test under valgrind memcheck (configure --enable-valgrind).
 * Tests skip there what valgrind cannot run: dav1d's AVX-512 decoding on 640x480 AV1 makes
 * valgrind's JIT run out of storage, and malloc counting does not see valgrind's malloc. */
static inline int rt_test_under_valgrind(void)
{
    const char *v = g_getenv("VALGRIND");
    return v && *v;
}

/* Path of a file in the source tree's tests/ folder (works in VPATH and distcheck builds).
 * Returns (transfer full) a string to g_free. */
static inline char *rt_test_srcfile(const char *relative)
{
    const char *dir = g_getenv("ROBOTRAIN_TEST_SRCDIR");
    return g_build_filename(dir ? dir : "tests", relative, NULL);
}

/* Path of a file in ../shared beside the checkout, or NULL when that folder is absent (a
 * tarball build): tests that need it then skip. Returns (transfer full) or NULL. */
static inline char *rt_test_sharedfile(const char *relative)
{
    const char *dir = g_getenv("ROBOTRAIN_SHARED_DIR");
    char *path = g_build_filename(dir ? dir : "../shared", relative, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_free(path);
        return NULL;
    }
    return path;
}

#endif
