/* check.h — the tiny assertion kit of the C tests: CHECK(cond, fmt, ...) records a
 * failure with file:line and a message and goes on; check_done() prints the closing
 * line "N passed, N failed" and gives main's exit status. */
#ifndef UG_CHECK_H
#define UG_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int check_pass, check_fail;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            check_pass++;                                                                                              \
        } else {                                                                                                       \
            check_fail++;                                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_pass, check_fail);
    return check_fail ? 1 : 0;
}

/* The test's scratch folder ($ULPGYM_TEST_TMP, created), or /tmp. */
static inline const char *check_tmpdir(void)
{
    const char *d = getenv("ULPGYM_TEST_TMP");
    if (!d || !*d) return "/tmp";
    mkdir(d, 0755);
    return d;
}

#endif
