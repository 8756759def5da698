/* sweep_select.c — which cases a sweep runs: the selection a run is made of, from the sweep options or, on
 * --resume, from the options the run recorded, so a resumed run rebuilds exactly the same case list; the
 * shard's deal itself is run/shard_cost.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/found.h"
#include "run/shard_cost.h"
#include "run/sweep_select.h"

int ug_sweep_selection_from_opts(const ug_sweep_opts *o, ug_sweep_selection *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->primary = -1;
    if (o->primary && ug_exec_parse_primary(o->primary, &x->primary, err, errlen)) return -2;
    /* recorded absolute, so a resume or report from another directory reads the same file */
    ug_plan_absolute(o->plan_path ? o->plan_path : ug_plan_default_path(), x->plan_path, sizeof x->plan_path);
    snprintf(x->backend, sizeof x->backend, "%s", o->backend ? o->backend : "sim");
    x->seed_set = o->seed >= 0;
    x->seed = o->seed;
    if (o->ops) {
        memcpy(x->ops, o->ops, sizeof x->ops);
        x->any_op = 1;
    }
    x->groups = o->groups;
    x->limit = o->limit;
    x->sample = o->sample;
    x->oracle_check = o->oracle_check;
    x->no_regressions = o->no_regressions;
    x->shard_k = o->shard_k;
    x->shard_n = o->shard_n;
    if (o->shard_n) snprintf(x->shard, sizeof x->shard, "%d/%d", o->shard_k, o->shard_n);
    if (o->cost_from) {
        char *abs = realpath(o->cost_from, NULL); /* recorded absolute, so a resume from elsewhere finds it */
        if (!abs) {
            snprintf(err, errlen, "--cost-from: no database at %s", o->cost_from);
            return -2;
        }
        snprintf(x->cost_from, sizeof x->cost_from, "%s", abs);
        free(abs);
    }
    return 0;
}

void ug_sweep_selection_names(const ug_sweep_selection *x, int groups, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    int count = groups ? UG_GROUP_COUNT : UG_OP_COUNT;
    for (int i = 0; i < count && n < len; i++) {
        int on = groups ? (int)(x->groups >> i & 1u) : x->any_op && x->ops[i];
        if (on)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
                                  groups ? ug_group_name((ug_group)i) : ug_op_name(i));
    }
}

int ug_sweep_selection_from_record(const ug_run_record *r, ug_sweep_selection *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    snprintf(x->plan_path, sizeof x->plan_path, "%s", r->plan_path);
    snprintf(x->backend, sizeof x->backend, "%s", r->backend);
    snprintf(x->backend_sha256, sizeof x->backend_sha256, "%s", r->backend_sha256);
    snprintf(x->shard, sizeof x->shard, "%s", r->shard);
    x->seed_set = r->seed_set;
    x->seed = r->seed_set ? r->seed : -1;
    x->limit = r->limit;
    x->sample = r->sample;
    x->oracle_check = r->oracle_check;
    x->no_regressions = r->no_regressions;
    snprintf(x->cost_from, sizeof x->cost_from, "%s", r->cost_from);
    snprintf(x->cost_hash, sizeof x->cost_hash, "%s", r->cost_hash);
    x->primary = -1;
    if (r->primary_standard[0] && ug_exec_parse_primary(r->primary_standard, &x->primary, err, errlen)) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "run %ld was decided by standard \"%s\", which this ulpgym cannot take (%s)", r->run_id,
                 r->primary_standard, why);
        return -2;
    }
    if (r->shard[0] && ug_sweep_parse_shard(r->shard, &x->shard_k, &x->shard_n, err, errlen)) return -2;
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", r->op_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int op = ug_op_find(t);
        if (op < 0) {
            snprintf(err, errlen, "run %ld was filtered to op \"%s\", which this ulpgym does not know", r->run_id, t);
            return -2;
        }
        x->ops[op] = 1;
        x->any_op = 1;
    }
    snprintf(list, sizeof list, "%s", r->group_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int g = ug_group_find(t);
        if (g < 0) {
            snprintf(err, errlen, "run %ld was filtered to unknown group \"%s\"", r->run_id, t);
            return -2;
        }
        x->groups |= 1u << g;
    }
    return 0;
}

/* Keeps the selection's shard of plan, dealt by estimates or by the costs of x->cost_from (see
 * ug_sweep_selection_expand). */
static int select_shard(ug_sweep_selection *x, ug_plan *plan, char *err, size_t errlen)
{
    ug_shard_costs costs;
    if (ug_shard_costs_compute(plan, x->cost_from[0] ? x->cost_from : NULL, &costs, err, errlen)) return -2;
    if (x->cost_from[0] && x->cost_hash[0] && strcmp(x->cost_hash, costs.hash) != 0) {
        snprintf(err, errlen,
                 "the shard was dealt by the costs in %s, which changed since the run started (cost hash "
                 "%s, now %s): it would run other cases; start a new sweep",
                 x->cost_from, x->cost_hash, costs.hash);
        ug_shard_costs_free(&costs);
        return -2;
    }
    if (x->cost_from[0]) snprintf(x->cost_hash, sizeof x->cost_hash, "%s", costs.hash);
    ug_sweep_shard_select(plan, x->shard_k, x->shard_n, &costs);
    ug_shard_costs_free(&costs);
    return 0;
}

/* A plan selection without a case is refused (nothing would run, and a nightly must not
 * read it as a clean run); regression cases follow the plan's ops, so none are added. */
static int empty_selection(const ug_sweep_selection *x, char *err, size_t errlen)
{
    char ops[512], groups[256];
    ug_sweep_selection_names(x, 0, ops, sizeof ops);
    ug_sweep_selection_names(x, 1, groups, sizeof groups);
    snprintf(err, errlen,
             "%s has no case%s%s%s%s%s: nothing to sweep (regression cases come only with their op's "
             "plan cases)",
             x->plan_path, ops[0] || groups[0] ? " for" : "", ops[0] ? " --op " : "", ops, groups[0] ? " --group " : "",
             groups);
    return -2;
}

int ug_sweep_selection_expand(ug_sweep_selection *x, ug_plan *plan, char *err, size_t errlen)
{
    if (ug_plan_load_only(x->plan_path, x->seed_set ? x->seed : -1, x->any_op ? x->ops : NULL, x->groups, plan, err,
                          errlen))
        return -2;
    if (plan->n == 0) return empty_selection(x, err, errlen);
    if (!x->no_regressions && ug_found_append_checked(plan, x->any_op ? x->ops : NULL, x->groups, 1, err, errlen) < 0)
        return -2;
    if (x->limit > 0 && plan->n > (size_t)x->limit) {
        for (size_t i = (size_t)x->limit; i < plan->n; i++) free(plan->cases[i].spec), free(plan->cases[i].source);
        plan->n = (size_t)x->limit;
    }
    return x->shard_n ? select_shard(x, plan, err, errlen) : 0;
}
