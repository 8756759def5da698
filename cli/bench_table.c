/* bench_table.c — `ulpgym bench kernels --backend B --baseline A`: the release report's
 * kernel-timing table. For every case of every scene of the selected ops (gen/scenes.h;
 * an op without scenes falls back to one scene "plan" of its first --limit plan cases),
 * the case is built once, outside every clock, and A and B run on those same inputs,
 * interleaved (A B, then B A, ...) so that a machine growing busier or quieter weighs on
 * both alike; after --warmup rounds, --repeat rounds are kept. Each round gets fresh
 * outputs and times two clocks per side: kernel-only (the kernel call alone, or the
 * plugin's own ulpgym_last_device_ms where it exports one) and end-to-end (the call
 * through the backend's entry, with whatever host-side conversions and copies a plugin
 * does inside it, then reading every output byte back: what a caller holding built
 * inputs waits for; building the inputs is not timed). A case's ratio is the median of
 * its rounds' paired ratios B / A; a scene's the geometric mean over its cases. The table
 * is stored (db/query_bench.h), read back and printed as markdown, so what is printed is
 * what is stored.
 *
 * `slow:N:BACKEND` is BACKEND with every kernel call run N times: the deliberately slow
 * variant whose ratio must come out near N by the kernel clock (tests/test_bench_table.sh). */
#include "cli/bench_table.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "db/query_bench.h"
#include "gen/case.h"
#include "gen/plan.h"
#include "gen/scenes.h"
#include "kernels/backend.h"
#include "reports/bench_report.h"

#define BT_SLOW_MAX 1000
#define BT_REPEAT_MAX 1000

/* One side of the comparison: a backend, run `runs` times per timed kernel call. */
typedef struct {
    ug_backend be;
    int runs;       /* 1, or N of slow:N:BACKEND */
    char name[600]; /* as stored: "sim", "slow:4:sim", "plugin:/abs/p.so" */
    char clock[8];  /* kernel-only clock: "device", "wall" or "cpu" */
} bt_side;

typedef struct {
    const char *backend, *baseline, *repeat, *warmup, *clock, *limit, *plan, *db, *md, *html, *mem;
    ug_cli_filter filter;
    int list;
} bt_opts;

/* The host clock (--clock): wall, CLOCK_MONOTONIC; cpu, this process's CPU time (all its
 * threads), read through CLOCK_PROCESS_CPUTIME_ID (to the ns) unless a CPU-time limit is
 * set (ulimit -t, RLIMIT_CPU): Linux then arms a process-wide CPU timer, which it updates
 * only at scheduler ticks, and that clock reads the timer, in steps of a tick (4 ms on the
 * project's VM: a 0.5 ms loop read 0 in 169 of 200 runs, and a whole table came out in
 * multiples of 4 ms), so getrusage is read instead: the threads' exact run times summed,
 * to the microsecond. */
typedef enum { BT_WALL, BT_CPU_NS, BT_CPU_US } bt_clock;

/* What the timing loop needs. */
typedef struct {
    bt_side a, b; /* baseline, backend */
    int repeat, warmup;
    bt_clock clock;
} bt_bench;

/* One timed call: milliseconds by each clock. */
typedef struct {
    double kernel, e2e;
} bt_sample;

/* A case's row with the storage its strings need. */
typedef struct {
    ug_bench_case_row row;
    char message[1000];
} bt_case;

static volatile uint64_t bt_sink; /* keeps the output read-back from being optimised away */

static double bt_now_ms(bt_clock clock)
{
    if (clock == BT_CPU_US) {
        struct rusage u;
        getrusage(RUSAGE_SELF, &u);
        return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
               (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
    }
    struct timespec ts;
    clock_gettime(clock == BT_WALL ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* BT_CPU_NS, or BT_CPU_US under a CPU-time limit (see bt_clock). */
static bt_clock cpu_clock(void)
{
    struct rlimit l;
    return getrlimit(RLIMIT_CPU, &l) == 0 && l.rlim_cur == RLIM_INFINITY ? BT_CPU_NS : BT_CPU_US;
}

/* Reads every output byte back (the end-to-end clock's last step), at memory speed: 8-byte
 * words summed into four independent lanes. It was a byte-serial hash (h = 31h + byte, a
 * multiply's latency per byte, ~1.5 ns), which cost the norms as much as their kernels
 * and measured that hash, not a read. */
static void read_back(const ug_case *c)
{
    uint64_t lane[4] = {0, 0, 0, 0};
    for (int k = 0; k < c->n_out; k++) {
        const unsigned char *p = c->out[k].data;
        size_t n = c->out[k].numel * ug_dtype_size(c->out[k].dtype), i = 0;
        for (; i + 32 <= n; i += 32)
            for (int l = 0; l < 4; l++) {
                uint64_t w;
                memcpy(&w, p + i + 8 * l, 8);
                lane[l] += w;
            }
        for (; i < n; i++) lane[0] += p[i];
    }
    bt_sink ^= lane[0] ^ lane[1] ^ lane[2] ^ lane[3];
}

/* Opens a side from its spec: sim[:VARIANT] or plugin:PATH, optionally as slow:N:SPEC. */
static int side_open(bt_side *s, const char *spec, const char *host_clock, char *err, size_t errlen)
{
    const char *inner = spec;
    s->runs = 1;
    if (strncmp(spec, "slow:", 5) == 0) {
        char *end;
        long n = strtol(spec + 5, &end, 10);
        if (end == spec + 5 || *end != ':' || n < 2 || n > BT_SLOW_MAX) {
            snprintf(err, errlen,
                     "backend \"%s\": write slow:N:BACKEND, N from 2 to %d (every kernel call run N "
                     "times)",
                     spec, BT_SLOW_MAX);
            return -2;
        }
        s->runs = (int)n;
        inner = end + 1;
    }
    if (ug_backend_open(&s->be, inner, err, errlen)) return -2;
    if (s->be.kind != UG_BACKEND_SIM && s->be.kind != UG_BACKEND_PLUGIN) {
        snprintf(err, errlen,
                 "backend \"%s\" runs no kernel to time (use sim, sim:VARIANT, plugin:PATH or "
                 "slow:N:one of them)",
                 spec);
        ug_backend_close(&s->be);
        return -2;
    }
    char desc[560];
    ug_backend_describe(&s->be, desc, sizeof desc);
    if (s->runs > 1)
        snprintf(s->name, sizeof s->name, "slow:%d:%s", s->runs, desc);
    else
        snprintf(s->name, sizeof s->name, "%s", desc);
    snprintf(s->clock, sizeof s->clock, "%s", s->be.device_ms ? "device" : host_clock);
    return 0;
}

/* The kernel call(s) of one timed run on built case c: milliseconds into *ms. 0, or the
 * backend's status (1 unsupported, < 0 error) with the reason in err. */
static int run_kernel(const bt_side *s, ug_case *c, bt_clock clock, double *ms, char *err, size_t errlen)
{
    *ms = 0;
    for (int r = 0; r < s->runs; r++) {
        double t0 = bt_now_ms(clock);
        int rc = ug_backend_run(&s->be, c, err, errlen);
        double wall = bt_now_ms(clock) - t0;
        if (rc) return rc;
        if (!s->be.device_ms) {
            *ms += wall;
            continue;
        }
        double d = s->be.device_ms();
        if (!isfinite(d) || d < 0) {
            snprintf(err, errlen, "its ulpgym_last_device_ms returned %g, not a time in milliseconds", d);
            return -1;
        }
        *ms += d;
    }
    return 0;
}

/* Gives a timed round fresh outputs, outside every clock: each output back to what the
 * build left in it (zeros; an optional output its sentinel, registry.h), so no round sees
 * another's results. Writing every byte also touches every page: without that the first
 * kernel call of a case paid its outputs' first-touch page faults while slow:N's repeats
 * did not, which pulled the planted factor of memory-bound kernels toward 1. */
static void fresh_outputs(ug_case *c)
{
    for (int k = 0; k < c->n_out; k++) {
        if (c->out[k].optional)
            ug_tensor_fill_sentinel(&c->out[k]);
        else
            memset(c->out[k].data, 0, c->out[k].numel * ug_dtype_size(c->out[k].dtype));
    }
}

/* One timed round of side s on the built case c. The case is built once for all its
 * rounds and both sides, and its inputs sealed (ug_case_seal_inputs) then: kernel_abi.h
 * makes inputs read-only, so they are not restored between rounds; instead every round is
 * checked, outside the clocks, for a changed input or a write outside an output (the
 * sweep's guard, core/guard.h), and such a kernel fails the case (its later rounds would
 * run on other inputs). End-to-end clock: from just before the backend call to the last
 * output byte read back: the call(s) through ug_backend_run (a plugin's ulpgym_run with
 * whatever host-side conversions and copies it does inside it), then the read-back. 0, or
 * as run_kernel. */
static int time_round(const bt_side *s, ug_case *c, bt_clock clock, bt_sample *out, char *err, size_t errlen)
{
    fresh_outputs(c);
    double t0 = bt_now_ms(clock);
    int rc = run_kernel(s, c, clock, &out->kernel, err, errlen);
    if (!rc) read_back(c);
    out->e2e = bt_now_ms(clock) - t0;
    char damage[256];
    if (!rc && ug_case_guard_check(c, damage, sizeof damage))
        rc = -1, snprintf(err, errlen, "broke kernel_abi.h's buffer contract: %s", damage);
    return rc;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median, min and max of x[0..n) (sorted in place) into fig[3]. */
static void summarize(double *x, int n, double fig[3])
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    fig[0] = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    fig[1] = x[0];
    fig[2] = x[n - 1];
}

/* The median of the paired ratios num[i] / den[i] (NaN where den is 0). */
static double paired_ratio(const bt_sample *num, const bt_sample *den, int n, int e2e, double *scratch)
{
    double fig[3];
    for (int i = 0; i < n; i++) {
        double a = e2e ? den[i].e2e : den[i].kernel, b = e2e ? num[i].e2e : num[i].kernel;
        scratch[i] = a > 0 ? b / a : NAN;
    }
    summarize(scratch, n, fig);
    return fig[0];
}

/* Fills the row's figures from the kept rounds. */
static void case_figures(ug_bench_case_row *r, const bt_sample *sa, const bt_sample *sb, int n, double *scratch)
{
    const bt_sample *side[2] = {sa, sb};
    double *kernel[2] = {r->base_kernel, r->test_kernel}, *e2e[2] = {r->base_e2e, r->test_e2e};
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < n; i++) scratch[i] = side[s][i].kernel;
        summarize(scratch, n, kernel[s]);
        for (int i = 0; i < n; i++) scratch[i] = side[s][i].e2e;
        summarize(scratch, n, e2e[s]);
    }
    r->kernel_ratio = paired_ratio(sb, sa, n, 0, scratch);
    r->e2e_ratio = paired_ratio(sb, sa, n, 1, scratch);
}

/* The warm-up and kept rounds of one built case, A and B interleaved (A B, B A, A B, ...)
 * into sa, sb: 0, or 1 (a backend declined or failed: bc->message says which and why). */
static int time_rounds(const bt_bench *bb, ug_case *c, bt_sample *sa, bt_sample *sb, bt_case *bc)
{
    for (int i = 0; i < bb->warmup + bb->repeat; i++)
        for (int k = 0; k < 2; k++) {
            int b_turn = (i + k) % 2; /* round i: A first when i is even */
            const bt_side *s = b_turn ? &bb->b : &bb->a;
            char why[400] = "";
            int rc = time_round(s, c, bb->clock, b_turn ? &sb[i] : &sa[i], why, sizeof why);
            if (!rc) continue;
            snprintf(bc->message, sizeof bc->message, "%s %s: %s", s->name,
                     rc == 1 ? "declined it (unsupported)" : "failed", why);
            return 1;
        }
    return 0;
}

/* Frees the inputs' decoded doubles (registry.h: what the oracle reads; no kernel sees
 * them), 8 bytes an element: glm_moe_fusion_mix's scenes hold 4 GB of them beside 1 GB of
 * bf16 weights, for every round of the case. */
static void drop_decoded_inputs(ug_case *c)
{
    for (int i = 0; i < c->n_in; i++) {
        free(c->in[i].values);
        c->in[i].values = NULL;
    }
}

/* Times one case: builds it once (outside every clock), then its rounds. 0 timed, 1 left
 * out (bc->message says why), -2 the case cannot be built (err). */
static int time_case(const bt_bench *bb, const char *spec, bt_case *bc, char *err, size_t errlen)
{
    int n = bb->warmup + bb->repeat, rc = 0;
    bt_sample *sa = calloc((size_t)n, sizeof *sa), *sb = calloc((size_t)n, sizeof *sb);
    double *scratch = calloc((size_t)n, sizeof *scratch);
    ug_spec sp;
    ug_case c;
    memset(&c, 0, sizeof c);
    if (!sa || !sb || !scratch)
        rc = -2, snprintf(err, errlen, "out of memory");
    else if (ug_spec_parse(spec, &sp, err, errlen) || ug_case_build(&c, &sp, err, errlen))
        rc = -2;
    else {
        drop_decoded_inputs(&c);
        ug_case_seal_inputs(&c);
        rc = time_rounds(bb, &c, sa, sb, bc);
    }
    if (!rc) case_figures(&bc->row, sa + bb->warmup, sb + bb->warmup, bb->repeat, scratch);
    bc->row.timed = rc == 0;
    bc->row.message = bc->message;
    ug_case_free(&c);
    free(sa);
    free(sb);
    free(scratch);
    return rc;
}

/* The scene's row: geometric means (and min, max) over its timed cases. */
static void scene_row(const char *op, const char *scene, const bt_case *cs, int n, ug_bench_scene_row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->scene, sizeof r->scene, "%s", scene);
    double *v = calloc((size_t)n + 1, sizeof *v);
    double *fig[6] = {&r->kernel_ratio,   &r->e2e_ratio,   &r->base_kernel_ms,
                      &r->test_kernel_ms, &r->base_e2e_ms, &r->test_e2e_ms};
    for (int f = 0; f < 6; f++) {
        int k = 0;
        for (int i = 0; v && i < n; i++) {
            const ug_bench_case_row *c = &cs[i].row;
            if (!c->timed) continue;
            double x[6] = {c->kernel_ratio,   c->e2e_ratio,   c->base_kernel[0],
                           c->test_kernel[0], c->base_e2e[0], c->test_e2e[0]};
            v[k++] = x[f];
        }
        *fig[f] = ug_bench_geomean(v, k);
        if (f < 2) { /* the ratios' range */
            double lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < k; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
            *(f ? &r->e2e_min : &r->kernel_min) = k ? lo : NAN;
            *(f ? &r->e2e_max : &r->kernel_max) = k ? hi : NAN;
        }
    }
    for (int i = 0; i < n; i++) r->n_cases += cs[i].row.timed, r->n_left_out += !cs[i].row.timed;
    r->has_ratios = r->n_cases > 0;
    free(v);
}

/* Everything a bench measured, in table order. */
typedef struct {
    bt_case *cases;
    size_t n_cases;
    ug_bench_scene_row *scenes;
    int n_scenes, left_out;
} bt_results;

static void results_free(bt_results *r)
{
    free(r->cases);
    free(r->scenes);
    memset(r, 0, sizeof *r);
}

/* Times every case of one scene and appends its case rows and scene row. 0, or -2 (err). */
static int time_scene(const bt_bench *bb, int op, const ug_scene *sc, bt_results *res, char *err, size_t errlen)
{
    bt_case *grown = realloc(res->cases, (res->n_cases + sc->n) * sizeof *grown);
    ug_bench_scene_row *rows = realloc(res->scenes, (size_t)(res->n_scenes + 1) * sizeof *rows);
    if (grown) res->cases = grown;
    if (rows) res->scenes = rows;
    if (!grown || !rows) return snprintf(err, errlen, "out of memory"), -2;
    bt_case *cs = res->cases + res->n_cases;
    for (size_t i = 0; i < sc->n; i++) {
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].row = (ug_bench_case_row){
            .op = ug_op_name(op), .scene = sc->name, .case_id = sc->ids[i], .spec_json = sc->specs[i]};
        char why[400];
        int rc = time_case(bb, sc->specs[i], &cs[i], why, sizeof why);
        if (rc == -2)
            return snprintf(err, errlen, "%s scene %s, case %s: %s", ug_op_name(op), sc->name, sc->ids[i], why), -2;
        if (rc)
            fprintf(stderr, "ulpgym: bench kernels: %s scene %s, case %s left out: %s\n", ug_op_name(op), sc->name,
                    sc->ids[i], cs[i].message);
        res->left_out += rc != 0;
    }
    res->n_cases += sc->n;
    ug_bench_scene_row *r = &res->scenes[res->n_scenes++];
    scene_row(ug_op_name(op), sc->name, cs, (int)sc->n, r);
    fprintf(stderr, "bench kernels: %s %s: %d cases, kernel %.3f, end-to-end %.3f\n", r->op, r->scene, r->n_cases,
            r->kernel_ratio, r->e2e_ratio);
    return 0;
}

/* The fallback scene "plan" of an op without scenes: its first `limit` plan cases. */
static int plan_scene(const char *plan_path, int op, long limit, ug_scene_set *set, char *err, size_t errlen)
{
    unsigned char only[UG_OP_COUNT] = {0};
    only[op] = 1;
    ug_plan p;
    if (ug_plan_load_only(plan_path, -1, only, 0, &p, err, errlen)) return -2;
    size_t n = p.n < (size_t)limit ? p.n : (size_t)limit;
    char **specs = calloc(n + 1, sizeof *specs);
    for (size_t i = 0; specs && i < n; i++) specs[i] = p.cases[i].spec;
    int rc = n == 0 ? -2 : !specs || ug_scenes_add(set, "plan", "the op's first plan cases", specs, n) ? -1 : 0;
    if (rc == -2) snprintf(err, errlen, "op %s has no scenes and no case in the plan %s", ug_op_name(op), plan_path);
    if (rc == -1) snprintf(err, errlen, "out of memory");
    free(specs);
    ug_plan_free(&p);
    return rc ? -2 : 0;
}

/* Whether the selection takes op: named by --op, or (no --op) with scenes declared and in a --group given. */
static int op_selected(const bt_opts *o, int op)
{
    if (o->filter.any_op) return o->filter.ops[op];
    return !o->filter.groups || (o->filter.groups >> ug_op_group(op) & 1u);
}

/* The scene sets of the selected ops (*n of them, malloc'd). Without --op: the implemented
 * ops whose space declares scenes; an op named by --op without scenes gets the scene "plan". */
static int load_scene_sets(const bt_opts *o, ug_scene_set **out, int *n, char *err, size_t errlen)
{
    char dir[1300];
    const char *plan_path = o->plan ? o->plan : ug_plan_default_path();
    ug_scenes_dir_of_plan(plan_path, dir, sizeof dir);
    *out = calloc(UG_OP_COUNT, sizeof **out);
    *n = 0;
    if (!*out) return snprintf(err, errlen, "out of memory"), -2;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!op_selected(o, op)) continue;
        if (!ug_op_def_get(op)) {
            if (o->filter.any_op)
                return snprintf(err, errlen, "op %s is not implemented in this build", ug_op_name(op)), -2;
            continue;
        }
        char space[1500];
        snprintf(space, sizeof space, "%s/%s.json", dir, ug_op_name(op));
        if (!o->filter.any_op && access(space, R_OK) != 0) continue; /* no space: not in the default table */
        ug_scene_set *set = &(*out)[*n];
        if (ug_scenes_load(dir, op, set, err, errlen)) return -2;
        if (!set->n && !o->filter.any_op) continue;
        if (!set->n && plan_scene(plan_path, op, o->limit ? ug_cli_long(o->limit) : 4, set, err, errlen)) return -2;
        (*n)++;
    }
    if (!*n)
        return snprintf(err, errlen,
                        "no op selected has scenes (gen/ops/<op>.json \"scenes\"); name ops with --op "
                        "to time their plan cases"),
               -2;
    return 0;
}

static void free_scene_sets(ug_scene_set *sets, int n)
{
    for (int i = 0; i < n; i++) ug_scenes_free(&sets[i]);
    free(sets);
}

/* `--scenes`: each selected op's scenes and their case IDs, nothing timed. */
static void list_scenes(const ug_scene_set *sets, int n)
{
    for (int i = 0; i < n; i++)
        for (size_t s = 0; s < sets[i].n; s++) {
            const ug_scene *sc = &sets[i].scenes[s];
            printf("%s %s %zu:", ug_op_name(sets[i].op), sc->name, sc->n);
            for (size_t k = 0; k < sc->n; k++) printf(" %s", sc->ids[k]);
            printf("%s%s\n", sc->about[0] ? "  # " : "", sc->about);
        }
}

/* Stores the bench whole (one transaction): *bench_id gets its ID. 0, or -1 (err). */
static int store(ug_db *db, const bt_bench *bb, const bt_results *res, const char *command, long *bench_id, char *err,
                 size_t errlen)
{
    ug_bench_info in = {.repeats = bb->repeat, .warmup = bb->warmup};
    snprintf(in.backend, sizeof in.backend, "%s", bb->b.name);
    snprintf(in.baseline, sizeof in.baseline, "%s", bb->a.name);
    snprintf(in.backend_sha256, sizeof in.backend_sha256, "%s", bb->b.be.sha256);
    snprintf(in.baseline_sha256, sizeof in.baseline_sha256, "%s", bb->a.be.sha256);
    snprintf(in.backend_clock, sizeof in.backend_clock, "%s", bb->b.clock);
    snprintf(in.baseline_clock, sizeof in.baseline_clock, "%s", bb->a.clock);
    snprintf(in.host_clock, sizeof in.host_clock, "%s", bb->clock == BT_WALL ? "wall" : "cpu");
    snprintf(in.command, sizeof in.command, "%s", command);
    if (ug_db_begin(db, err, errlen) || ug_db_bench_begin(db, &in, bench_id, err, errlen)) goto fail;
    for (size_t i = 0; i < res->n_cases; i++)
        if (ug_db_bench_put_case(db, *bench_id, &res->cases[i].row, err, errlen)) goto fail;
    for (int i = 0; i < res->n_scenes; i++)
        if (ug_db_bench_put_scene(db, *bench_id, i, &res->scenes[i], err, errlen)) goto fail;
    if (ug_db_commit(db, err, errlen)) goto fail;
    return 0;
fail:
    ug_db_rollback(db);
    return -1;
}

/* Writes the stored table: markdown to stdout and --md, a page to --html. 0, or exit 2/3. */
static int print_table(ug_db *db, long bench_id, const bt_opts *o)
{
    ug_bench_table t;
    char err[512];
    if (ug_db_bench_get(db, bench_id, &t, err, sizeof err))
        return ug_cli_fail("bench kernels: %s", err), UG_EXIT_ENGINE;
    ug_bench_write_md(&t, stdout);
    int rc = 0;
    const char *paths[2] = {o->md, o->html};
    for (int k = 0; k < 2; k++) {
        if (!paths[k]) continue;
        FILE *f = fopen(paths[k], "w");
        if (f && k == 0) ug_bench_write_md(&t, f);
        if (f && k == 1) ug_bench_write_html_page(&t, f);
        if (!f || fclose(f) != 0) rc = ug_cli_fail("bench kernels: cannot write %s", paths[k]);
    }
    ug_bench_table_free(&t);
    return rc;
}

int ug_bench_kernel_table_wanted(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (!strncmp(argv[i], "--backend", 9) || !strncmp(argv[i], "--baseline", 10) || !strcmp(argv[i], "--scenes"))
            return 1;
    return 0;
}

static int parse_opts(int argc, char **argv, bt_opts *o)
{
    const ug_cli_valopt value_opts[] = {
        {"--backend", &o->backend}, {"--baseline", &o->baseline}, {"--repeat", &o->repeat},   {"--warmup", &o->warmup},
        {"--clock", &o->clock},     {"--limit", &o->limit},       {"--plan", &o->plan},       {"--db", &o->db},
        {"--md", &o->md},           {"--html", &o->html},         {"--case-memory", &o->mem}, {NULL, NULL}};
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_filter_opt(&o->filter, argc, argv, &i);
        if (m < 0) return -1;
        if (m) continue;
        if (ug_cli_flag(argv, i, "--scenes"))
            o->list = 1;
        else if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return -1;
        } else
            return ug_cli_fail(
                       "bench kernels: unexpected argument \"%s\" with --backend/--baseline (see ulpgym bench -h)",
                       argv[i]),
                   -1;
    }
    return 0;
}

/* The checks of the numbers and pairs of options; fills bb's counts and clock. 0, or -1 (message printed). */
static int check_opts(const bt_opts *o, bt_bench *bb)
{
    if (!o->list && (!o->backend || !o->baseline))
        return ug_cli_fail("bench kernels: the timing table needs both --backend B (the kernel timed) and --baseline A "
                           "(what it is compared with)"),
               -1;
    bb->repeat = o->repeat ? (int)ug_cli_long(o->repeat) : 5;
    bb->warmup = o->warmup ? (int)ug_cli_long(o->warmup) : 1;
    if (bb->repeat < 1 || bb->repeat > BT_REPEAT_MAX || (o->repeat && ug_cli_long(o->repeat) > BT_REPEAT_MAX))
        return ug_cli_fail("bench kernels: --repeat must be a number from 1 to %d", BT_REPEAT_MAX), -1;
    if (bb->warmup < 0 || bb->warmup > BT_REPEAT_MAX || (o->warmup && ug_cli_long(o->warmup) > BT_REPEAT_MAX))
        return ug_cli_fail("bench kernels: --warmup must be a number from 0 to %d", BT_REPEAT_MAX), -1;
    if (o->limit && ug_cli_long(o->limit) <= 0)
        return ug_cli_fail("bench kernels: --limit must be a positive number (plan cases of an op without scenes)"), -1;
    if (o->clock && strcmp(o->clock, "wall") && strcmp(o->clock, "cpu"))
        return ug_cli_fail("bench kernels: --clock must be wall or cpu"), -1;
    /* cpu by default: on a shared host the wall clock reads other processes' load (a planted 2x read 3.2) */
    bb->clock = o->clock && !strcmp(o->clock, "wall") ? BT_WALL : cpu_clock();
    return ug_cli_case_memory(o->mem) ? -1 : 0;
}

/* Opens both sides and checks each serves every selected op (a sim variant the op has). */
static int open_sides(const bt_opts *o, bt_bench *bb, const ug_scene_set *sets, int n)
{
    char err[1024];
    const char *host = bb->clock == BT_WALL ? "wall" : "cpu";
    if (side_open(&bb->a, o->baseline, host, err, sizeof err))
        return ug_cli_fail("bench kernels: --baseline: %s", err), -1;
    if (side_open(&bb->b, o->backend, host, err, sizeof err)) {
        ug_backend_close(&bb->a.be);
        return ug_cli_fail("bench kernels: --backend: %s", err), -1;
    }
    for (int i = 0; i < n; i++)
        if (ug_backend_check_op(&bb->a.be, sets[i].op, err, sizeof err) ||
            ug_backend_check_op(&bb->b.be, sets[i].op, err, sizeof err)) {
            ug_backend_close(&bb->a.be);
            ug_backend_close(&bb->b.be);
            return ug_cli_fail("bench kernels: %s", err), -1;
        }
    return 0;
}

/* argv joined by spaces, as stored with the bench. */
static void command_line(int argc, char **argv, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "ulpgym");
    for (int i = 0; i < argc && k < len; i++) k += (size_t)snprintf(buf + k, len - k, " %s", argv[i]);
}

/* Times every scene of every set, then stores and prints the table. */
static int run_bench(const bt_opts *o, const bt_bench *bb, const ug_scene_set *sets, int n, const char *command)
{
    bt_results res = {0};
    char err[1024];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        for (size_t s = 0; s < sets[i].n && !rc; s++)
            if (time_scene(bb, sets[i].op, &sets[i].scenes[s], &res, err, sizeof err))
                rc = ug_cli_fail("bench kernels: %s", err);
    ug_db *db = NULL;
    long bench_id = 0;
    if (!rc && ug_cli_open_db(o->db, UG_DB_CREATE, &db)) rc = UG_EXIT_USAGE;
    if (!rc && store(db, bb, &res, command, &bench_id, err, sizeof err))
        rc = (ug_cli_fail("bench kernels: the table was not stored: %s", err), UG_EXIT_ENGINE);
    if (!rc) rc = print_table(db, bench_id, o);
    if (!rc && res.left_out) rc = UG_EXIT_FOUND;
    if (db) ug_db_close(db);
    results_free(&res);
    return rc;
}

int ug_bench_kernel_table(int argc, char **argv)
{
    bt_opts o = {0};
    bt_bench bb = {0};
    if (parse_opts(argc, argv, &o) || check_opts(&o, &bb)) return UG_EXIT_USAGE;
    ug_scene_set *sets;
    int n, rc = 0;
    char err[1500];
    if (load_scene_sets(&o, &sets, &n, err, sizeof err)) {
        free_scene_sets(sets, n);
        return ug_cli_fail("bench kernels: %s", err);
    }
    if (o.list)
        list_scenes(sets, n);
    else if (open_sides(&o, &bb, sets, n))
        rc = UG_EXIT_USAGE;
    else {
        char command[1024];
        command_line(argc, argv, command, sizeof command);
        rc = run_bench(&o, &bb, sets, n, command);
        ug_backend_close(&bb.a.be);
        ug_backend_close(&bb.b.be);
    }
    free_scene_sets(sets, n);
    return rc;
}
