/* cmd_plan.c — `ulpgym plan`: expand a plan and count or list its cases, or show how `--shard K/N` deals it
 * to N shards (estimated and, from a database, measured time per shard). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/plan.h"
#include "gen/plan_coverage.h"
#include "gen/plan_share.h"
#include "run/sweep.h"

static void count(const ug_plan *p)
{
    size_t per_op[UG_OP_COUNT] = {0}, per_group[UG_GROUP_COUNT] = {0};
    for (size_t i = 0; i < p->n; i++) {
        per_op[p->cases[i].op]++;
        per_group[ug_op_group(p->cases[i].op)]++;
    }
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        int ops = 0, impl = 0;
        for (int op = 0; op < UG_OP_COUNT; op++)
            if ((int)ug_op_group(op) == g) {
                ops++;
                impl += per_op[op] > 0;
            }
        printf("group %-11s %6zu cases", ug_group_name((ug_group)g), per_group[g]);
        if (p->group_target[g] >= 0)
            printf("  (release target %ld; %d of %d operators in this plan)", p->group_target[g], impl, ops);
        printf("\n");
        for (int op = 0; op < UG_OP_COUNT; op++) {
            if ((int)ug_op_group(op) != g) continue;
            if (per_op[op])
                printf("  %-38s %6zu\n", ug_op_name(op), per_op[op]);
            else if (p->skipped[op])
                printf("  %-38s %6s  (%ld planned; not implemented in this build)\n", ug_op_name(op), "-",
                       p->skipped[op]);
        }
    }
    printf("total %zu\n", p->n);
}

/* --specs: per case its ID, "heavy" or "-", and the spec JSON `ulpgym case --spec` runs. */
static void list_specs(const ug_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        printf("%s %s %s\n", p->cases[i].id, p->cases[i].heavy ? "heavy" : "-", p->cases[i].spec);
}

static void list(const ug_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        cJSON *j = cJSON_Parse(p->cases[i].spec);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
        char *params = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "params"));
        printf("%s  %-30s %-5s %s", p->cases[i].id, ug_op_name(p->cases[i].op),
               cJSON_IsString(dt) ? dt->valuestring : "?", params ? params : "");
        if (p->cases[i].source) printf("  <- %s%s", p->cases[i].source, p->cases[i].heavy ? " (heavy)" : "");
        printf("\n");
        free(params);
        cJSON_Delete(j);
    }
}

/* --coverage: per op of the plan, each declared structural axis with the cases holding it
 * and the rule's minimum (gen/plan_coverage.h). 1 when some axis falls short or some op
 * declares none, -2 on a malformed axis, else 0. */
static int coverage(const ug_plan *p)
{
    int short_axes = 0, undeclared = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++) n += p->cases[i].op == op;
        if (!n) continue;
        ug_op_coverage c;
        char err[512];
        if (ug_plan_coverage(p, op, &c, err, sizeof err)) return ug_cli_fail("plan: %s", err);
        if (!c.n_axes) {
            undeclared++;
            printf("%s: %zu cases; declares no structural axes\n", ug_op_name(op), c.n_cases);
            continue;
        }
        printf("%s: %zu cases; each axis needs %zu (at least %d, or %.0f%% of the op's cases)\n", ug_op_name(op),
               c.n_cases, c.need, UG_COVERAGE_MIN, 100 * UG_COVERAGE_SHARE);
        for (int a = 0; a < c.n_axes; a++) {
            int ok = c.axes[a].n >= c.need;
            short_axes += !ok;
            printf("  %6zu  %-5s %s\n", c.axes[a].n, ok ? "ok" : "SHORT", c.axes[a].axis);
        }
    }
    printf("%d short axes; %d ops declare no structural axes (gen/ops/OP.json \"coverage\")\n", short_axes, undeclared);
    return short_axes || undeclared ? 1 : 0;
}

/* max/mean of v[0..n): 1 for a perfect balance; 0 when everything is 0. */
static double max_over_mean(const double *v, int n)
{
    double max = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        sum += v[i];
        if (v[i] > max) max = v[i];
    }
    return sum > 0 ? max * n / sum : 0;
}

/* --shard-stats N: each shard's cases, estimated cost and (with --measured) measured milliseconds. */
static int shard_stats(const ug_plan *p, int n, const char *cost_from, const char *measured_db)
{
    char err[1024];
    ug_shard_costs c;
    if (ug_shard_costs_compute(p, cost_from, &c, err, sizeof err)) return ug_cli_fail("plan: %s", err);
    double *ms = measured_db ? malloc((p->n ? p->n : 1) * sizeof *ms) : NULL;
    double *est = calloc((size_t)n, sizeof *est), *meas = calloc((size_t)n, sizeof *meas);
    size_t *cases = calloc((size_t)n, sizeof *cases), unmeasured = 0;
    int rc = 0;
    if ((measured_db && !ms) || !est || !meas || !cases)
        rc = ug_cli_fail("plan: out of memory");
    else if (measured_db && ug_shard_measured_times(p, measured_db, ms, err, sizeof err))
        rc = ug_cli_fail("plan: --measured: %s", err);
    if (!rc) {
        int *shard = ug_shard_assign(p, c.cost, n);
        for (size_t i = 0; i < p->n; i++) {
            cases[shard[i]]++;
            est[shard[i]] += c.cost[i];
            if (ms && ms[i] >= 0) meas[shard[i]] += ms[i];
            unmeasured += ms && ms[i] < 0;
        }
        free(shard);
        double unit = c.timed ? 1 : 1e6; /* estimates are bytes: shown in MB */
        printf("shard         cases  %14s%s\n", c.timed ? "estimate ms" : "estimate MB", ms ? "    measured ms" : "");
        for (int s = 0; s < n; s++) {
            printf("%6d/%-6d %6zu  %14.1f", s + 1, n, cases[s], est[s] / unit);
            if (ms) printf("  %13.1f", meas[s]);
            printf("\n");
        }
        printf("max/mean             %14.3f", max_over_mean(est, n));
        if (ms) printf("  %13.3f", max_over_mean(meas, n));
        printf("\n");
        if (cost_from)
            printf("estimate: %zu of %zu cases measured in %s, the rest by their op's measured/estimated ratio over "
                   "its %zu measured cases\n",
                   c.n_measured, p->n, cost_from, c.n_db);
        else
            printf("estimate: the bytes each case touches, from its op's declaration\n");
        if (ms) printf("measured: %s, %zu of %zu cases (the rest count 0)\n", measured_db, p->n - unmeasured, p->n);
    }
    ug_shard_costs_free(&c);
    free(ms);
    free(est);
    free(meas);
    free(cases);
    return rc;
}

static int ug_cmd_plan(int argc, char **argv)
{
    const char *plan_path = NULL, *seed = NULL, *shard = NULL, *share = NULL, *cost_from = NULL, *stats = NULL,
               *measured = NULL;
    int do_count = 0, do_list = 0, do_specs = 0, do_coverage = 0;
    ug_cli_filter f = {0};
    const ug_cli_valopt value_opts[] = {
        {"--plan", &plan_path},      {"--seed", &seed},         {"--shard", &shard},       {"--share", &share},
        {"--cost-from", &cost_from}, {"--shard-stats", &stats}, {"--measured", &measured}, {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--count", &do_count},
                                    {"--list", &do_list},
                                    {"--specs", &do_specs},
                                    {"--coverage", &do_coverage},
                                    {NULL, NULL}};
    const ug_cli_args cli_args = {"plan", &f, value_opts, flags, NULL};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    if (!do_count && !do_list && !do_specs && !do_coverage && !stats)
        return ug_cli_fail("plan: give --count, --list, --specs, --coverage or --shard-stats N");
    if (stats && (do_count || do_list || do_specs || shard))
        return ug_cli_fail(
            "plan: --shard-stats N shows every shard; it takes neither --count, --list, --specs nor --shard");
    if (cost_from && !shard && !stats)
        return ug_cli_fail("plan: --cost-from deals the shards of --shard or --shard-stats");
    if (measured && !stats) return ug_cli_fail("plan: --measured goes with --shard-stats");
    int shard_k = 0, shard_n = 0;
    char err[1024];
    if (shard && ug_sweep_parse_shard(shard, &shard_k, &shard_n, err, sizeof err)) return ug_cli_fail("plan: %s", err);
    long long n_stats = stats ? ug_cli_long(stats) : 0;
    if (stats && (n_stats < 1 || n_stats > 4096))
        return ug_cli_fail("plan: --shard-stats takes a number of shards, 1 to 4096");
    long long s = seed ? ug_cli_long(seed) : -1, per_op = share ? ug_cli_long(share) : 0;
    if (share && per_op <= 0) return ug_cli_fail("plan: --share must be a positive number of cases per op");
    if (seed && s < 0) return ug_cli_fail("plan: --seed must be a non-negative integer");
    ug_plan p;
    if (ug_plan_load_only(plan_path ? plan_path : ug_plan_default_path(), s, f.any_op ? f.ops : NULL, f.groups, &p, err,
                          sizeof err))
        return ug_cli_fail("%s", err);
    if (per_op && ug_plan_stratify(&p, (size_t)per_op, err, sizeof err)) {
        ug_plan_free(&p);
        return ug_cli_fail("plan: %s", err);
    }
    int rc = 0;
    if (shard_n) { /* the cases `sweep --shard` would run */
        ug_shard_costs c;
        if (ug_shard_costs_compute(&p, cost_from, &c, err, sizeof err))
            rc = ug_cli_fail("plan: %s", err);
        else
            ug_sweep_shard_select(&p, shard_k, shard_n, &c), ug_shard_costs_free(&c);
    }
    if (!rc && stats) rc = shard_stats(&p, (int)n_stats, cost_from, measured);
    if (!rc && do_count) count(&p);
    if (!rc && do_list) list(&p);
    if (!rc && do_specs) list_specs(&p);
    if (!rc && do_coverage) rc = coverage(&p);
    ug_plan_free(&p);
    return rc;
}

const ug_command ug_command_plan = {
    "plan", ug_cmd_plan, "expand a plan: count or list its cases",
    "usage: ulpgym plan [--plan FILE|NAME[:light]] [--op OP]... [--group G]... [--seed S] [--shard K/N]\n"
    "                   [--share N] [--cost-from DB] (--count | --list | --specs | --coverage)\n"
    "       ulpgym plan [--plan ...] [--op OP]... [--group G]... [--seed S] --shard-stats N [--cost-from DB]\n"
    "                   [--measured DB]\n"
    "  --count  cases per group and per op, then a last line `total N`\n"
    "  --list   one line per case: case ID, op, dtype, params (and the reference test an explicit\n"
    "           case reproduces, `<- source`, marked (heavy) when a :light plan drops it)\n"
    "  --coverage  per op, each structural axis its space declares (gen/ops/OP.json \"coverage\")\n"
    "           with the cases holding it; exit 1 when one holds fewer than 20 cases or 5 % of\n"
    "           the op's cases, whichever is more, or when an op of the plan declares no axis\n"
    "           (docs/SWEEP.md \"Structural coverage\")\n"
    "  --specs  one line per case: case ID, `heavy` or `-`, the case's spec JSON (what\n"
    "           `ulpgym case --spec` runs; scripts/bench_reference.sh reads it)\n"
    "  --plan   a file, or a name: `--plan reference` is gen/plans/reference.json of the data tree;\n"
    "           NAME:light leaves out the cases marked heavy\n"
    "  --shard  only the cases `sweep --shard K/N` runs (balanced by estimated cost, or with\n"
    "           --cost-from DB by the times measured in DB, as `sweep --cost-from` deals them)\n"
    "  --shard-stats N  per shard of N: its cases, estimated cost (ms with --cost-from, else MB\n"
    "           touched) and, with --measured DB, the sum of its cases' kernel + oracle ms in DB's\n"
    "           latest results; last the slowest shard over the mean (1.000 = perfect balance)\n"
    "  --share  only the stratified share of N cases per op the per-op tests run in CI (every\n"
    "           required case, every dtype and distribution set, each param's extremes, then\n"
    "           evenly spaced cases; docs/SWEEP.md \"The CI share\")\n"
    "  default plan: $ULPGYM_PLAN or gen/plans/nightly.json\n"};
