/* bench_draw.c — `ulpgym bench draw`: CPU ns per element of drawing a case's inputs
 * (gen/dist.c), per distribution and dtype, two ways: ug_dist_fill_scalar (element by
 * element, the definition) and ug_dist_fill (blocked, vectorised), best of R fills each,
 * and whether the two gave the same bytes. Large reference tensors (AdamW's 7168 × 24576
 * states) made drawing the bulk of building a case; this is the figure of that work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench_draw.h"
#include "cli/cli.h"
#include "gen/dist.h"

typedef int (*fill_fn)(const cJSON *, uint64_t, uint32_t, ug_dtype, void *, size_t, char *, size_t);

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU ns per element of the fastest of reps fills; -1 on error. */
static double time_fill(fill_fn fill, const cJSON *d, ug_dtype dt, void *buf, size_t n, long reps)
{
    double best = -1;
    char err[256];
    for (long r = 0; r < reps; r++) {
        double t0 = cpu_now();
        if (fill(d, 42, 1, dt, buf, n, err, sizeof err)) return -1;
        double ns = (cpu_now() - t0) * 1e9 / (double)n;
        if (best < 0 || ns < best) best = ns;
    }
    return best;
}

int ug_bench_draw(int argc, char **argv)
{
    static const struct {
        const char *dist;
        ug_dtype dt;
    } rows[] = {
        {"{\"kind\":\"normal\",\"mean\":0,\"std\":0.01}", UG_DT_BF16},
        {"{\"kind\":\"normal\",\"mean\":0,\"std\":0.01}", UG_DT_FP32},
        {"{\"kind\":\"normal\",\"mean\":0,\"std\":0.01}", UG_DT_FP16},
        {"{\"kind\":\"half_normal\",\"std\":1e-6}", UG_DT_FP32},
        {"{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}", UG_DT_BF16},
        {"{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}", UG_DT_INT8},
        {"{\"kind\":\"outliers\",\"std\":1,\"p\":0.01,\"scale\":100}", UG_DT_BF16},
        {"{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":20}", UG_DT_BF16},
    };
    const char *n_arg = NULL, *rep_arg = NULL;
    for (int i = 2; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--n", &n_arg)) || (m = ug_cli_opt(argc, argv, &i, "--repeat", &rep_arg))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("bench draw: unexpected argument \"%s\"", argv[i]);
    }
    long n = n_arg ? ug_cli_long(n_arg) : 1 << 22, reps = rep_arg ? ug_cli_long(rep_arg) : 3;
    if (n < 1 || reps < 1) return ug_cli_fail("bench draw: --n and --repeat take positive numbers");
    unsigned char *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    if (!a || !b) {
        free(a);
        free(b);
        return ug_cli_fail("bench draw: out of memory");
    }
    int rc = 0;
    printf("%-58s %-5s %12s %12s %8s %s\n", "distribution", "dtype", "scalar ns/el", "blocked ns/el", "speed-up",
           "same bytes");
    for (size_t k = 0; k < sizeof rows / sizeof *rows && !rc; k++) {
        cJSON *d = cJSON_Parse(rows[k].dist);
        double s = time_fill(ug_dist_fill_scalar, d, rows[k].dt, a, (size_t)n, reps);
        double f = time_fill(ug_dist_fill, d, rows[k].dt, b, (size_t)n, reps);
        cJSON_Delete(d);
        if (s < 0 || f < 0)
            rc = ug_cli_fail("bench draw: %s: fill failed", rows[k].dist);
        else {
            int same = memcmp(a, b, (size_t)n * (size_t)ug_dtype_size(rows[k].dt)) == 0;
            printf("%-58s %-5s %12.2f %12.2f %8.2f %s\n", rows[k].dist, ug_dtype_name(rows[k].dt), s, f, s / f,
                   same ? "yes" : "NO");
            if (!same) rc = 1;
        }
    }
    printf("%ld elements per fill, CPU time, best of %ld fills each; blocked path %s\n", n, reps, ug_dist_fill_path());
    free(a);
    free(b);
    return rc;
}
