/* cmd_plan.c — `ulpgym plan`: expand a plan and count or list its cases. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/plan.h"
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
            if (per_op[op]) printf("  %-38s %6zu\n", ug_op_name(op), per_op[op]);
            else if (p->skipped[op]) printf("  %-38s %6s  (%ld planned; not implemented in this build)\n", ug_op_name(op), "-", p->skipped[op]);
        }
    }
    printf("total %zu\n", p->n);
}

static void list(const ug_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        cJSON *j = cJSON_Parse(p->cases[i].spec);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
        char *params = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "params"));
        printf("%s  %-30s %-5s %s", p->cases[i].id, ug_op_name(p->cases[i].op), cJSON_IsString(dt) ? dt->valuestring : "?",
               params ? params : "");
        if (p->cases[i].source) printf("  <- %s%s", p->cases[i].source, p->cases[i].heavy ? " (heavy)" : "");
        printf("\n");
        free(params);
        cJSON_Delete(j);
    }
}

static int ug_cmd_plan(int argc, char **argv)
{
    const char *plan_path = NULL, *seed = NULL, *shard = NULL, *share = NULL;
    int do_count = 0, do_list = 0;
    ug_cli_filter f = {0};
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opt(argc, argv, &i, "--plan", &plan_path)) || (m = ug_cli_opt(argc, argv, &i, "--seed", &seed)) ||
            (m = ug_cli_opt(argc, argv, &i, "--shard", &shard)) || (m = ug_cli_opt(argc, argv, &i, "--share", &share))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (ug_cli_flag(argv, i, "--count")) do_count = 1;
        else if (ug_cli_flag(argv, i, "--list")) do_list = 1;
        else return ug_cli_fail("plan: unexpected argument \"%s\" (see ulpgym plan -h)", argv[i]);
    }
    if (!do_count && !do_list) return ug_cli_fail("plan: give --count or --list");
    int shard_k = 0, shard_n = 0;
    char err[1024];
    if (shard && ug_sweep_parse_shard(shard, &shard_k, &shard_n, err, sizeof err)) return ug_cli_fail("plan: %s", err);
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
    if (shard_n) ug_sweep_shard_select(&p, shard_k, shard_n); /* the cases `sweep --shard` would run */
    if (do_count) count(&p);
    if (do_list) list(&p);
    ug_plan_free(&p);
    return 0;
}

const ug_command ug_command_plan = {
    "plan", ug_cmd_plan, "expand a plan: count or list its cases",
     "usage: ulpgym plan [--plan FILE|NAME[:light]] [--op OP]... [--group G]... [--seed S] [--shard K/N]\n"
     "                   [--share N] (--count | --list)\n"
     "  --count  cases per group and per op, then a last line `total N`\n"
     "  --list   one line per case: case ID, op, dtype, params (and the reference test an explicit\n"
     "           case reproduces, `<- source`, marked (heavy) when a :light plan drops it)\n"
     "  --plan   a file, or a name: `--plan reference` is gen/plans/reference.json of the data tree;\n"
     "           NAME:light leaves out the cases marked heavy\n"
     "  --shard  only the cases `sweep --shard K/N` runs (balanced by estimated cost)\n"
     "  --share  only the stratified share of N cases per op the per-op tests run in CI (every\n"
     "           required case, every dtype and distribution set, each param's extremes, then\n"
     "           evenly spaced cases; docs/SWEEP.md \"The CI share\")\n"
     "  default plan: $ULPGYM_PLAN or gen/plans/nightly.json\n"};
