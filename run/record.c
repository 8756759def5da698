/* record.c — what the sweep reads from and writes to the database: the run it opens
 * (new, or reopened on --resume after checking the plan is unchanged), the cases a
 * resumed run still lacks, and the results, written in batches of UG_SWEEP_BATCH or
 * UG_SWEEP_COMMIT_S seconds with each result's rows in one transaction. Only the parent
 * process calls it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/record.h"
#include "run/summary.h"
#include "run/sweep_select.h"

int ug_sweep_commit(ug_sweep_engine *e)
{
    if (!e->in_tx) return 0;
    e->in_tx = 0;
    e->in_batch = 0;
    return ug_db_commit(e->db, e->err, e->errlen);
}

int ug_sweep_record_result(ug_sweep_engine *e, size_t idx, ug_result *r)
{
    const ug_plan_case *pc = &e->plan->cases[idx];
    snprintf(r->case_id, sizeof r->case_id, "%s", pc->id);
    if (!e->in_tx) {
        if (ug_db_begin(e->db, e->err, e->errlen)) return -1;
        e->in_tx = 1;
        e->tx_started = ug_sweep_now_s();
    }
    if (ug_db_put_case(e->db, pc->id, pc->spec, pc->origin ? pc->origin : "plan", e->err, e->errlen) ||
        ug_db_put_result(e->db, e->run_id, r, e->err, e->errlen))
        return -1;
    ug_sweep_summary_count(e->s, pc->op, r);
    if (++e->in_batch >= UG_SWEEP_BATCH && ug_sweep_commit(e)) return -1;
    return 0;
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

int ug_sweep_build_todo(ug_sweep_engine *e, long resume_run)
{
    char(*done)[UG_ID_LEN + 1] = NULL;
    size_t n_done = 0;
    if (resume_run && ug_db_result_ids(e->db, resume_run, &done, &n_done, e->err, e->errlen)) return -1;
    e->todo = malloc((e->plan->n ? e->plan->n : 1) * sizeof *e->todo);
    if (!e->todo) {
        free(done);
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < e->plan->n; i++)
        if (!n_done || !bsearch(e->plan->cases[i].id, done, n_done, sizeof *done, cmp_id)) e->todo[e->n_todo++] = i;
    e->s->n_before = e->plan->n - e->n_todo;
    e->s->n_total = e->plan->n;
    e->s->n_regression = 0;
    for (size_t i = 0; i < e->plan->n; i++) e->s->n_regression += e->plan->cases[i].origin != NULL;
    free(done);
    return 0;
}

int ug_sweep_open_run(ug_sweep_engine *e, const ug_sweep_selection *x, const ug_plan *plan, long resume_run,
                      const char *plan_hash_then)
{
    const ug_sweep_opts *o = e->o;
    if (resume_run) {
        if (strcmp(plan_hash_then, plan->hash) != 0) {
            snprintf(e->err, e->errlen,
                     "run %ld: the plan %s changed since the run started (hash %s, now %s); start a new sweep instead",
                     resume_run, x->plan_path, plan_hash_then, plan->hash);
            return -2;
        }
        e->run_id = resume_run;
        return ug_db_run_reopen(e->db, resume_run, e->nw, e->err, e->errlen);
    }
    char backend_name[600], ops[1024], groups[128];
    ug_backend_describe(e->b, backend_name, sizeof backend_name);
    ug_sweep_selection_names(x, 0, ops, sizeof ops);
    ug_sweep_selection_names(x, 1, groups, sizeof groups);
    ug_run_info info = {plan->name,
                        x->plan_path,
                        plan->hash,
                        backend_name,
                        x->shard[0] ? x->shard : NULL,
                        o->command,
                        UG_ORACLE_PREC,
                        x->sample,
                        x->seed_set,
                        x->seed,
                        ops[0] ? ops : NULL,
                        groups[0] ? groups : NULL,
                        x->limit,
                        x->oracle_check,
                        e->nw,
                        x->no_regressions,
                        x->primary >= 0 ? ug_standard_name(x->primary) : NULL,
                        e->b->sha256[0] ? e->b->sha256 : NULL,
                        x->cost_from[0] ? x->cost_from : NULL,
                        x->cost_hash[0] ? x->cost_hash : NULL};
    return ug_db_run_begin(e->db, &info, &e->run_id, e->err, e->errlen);
}

int ug_sweep_resume_target(ug_db *db, const char *which, ug_sweep_selection *x, long *run, char *hash, char *err,
                           size_t errlen)
{
    ug_run_record rec;
    if (ug_db_resolve_run(db, which, run, err, errlen) || ug_db_run_get(db, *run, &rec, err, errlen)) return -2;
    if (rec.merged) {
        snprintf(err, errlen, "run %ld was merged from shard databases; resume the shards there and merge again", *run);
        return -2;
    }
    if (strcmp(rec.status, "done") == 0) {
        snprintf(err, errlen,
                 "run %ld finished (status done, finished at %s): nothing to resume; start a new sweep (a sweep "
                 "killed before its run was recorded left no run of its own)",
                 *run, rec.finished_at);
        return -2;
    }
    if (!rec.has_options) {
        snprintf(err, errlen,
                 "run %ld was made by an older ulpgym that did not record its sweep options; it cannot be resumed",
                 *run);
        return -2;
    }
    snprintf(hash, UG_ID_LEN + 1, "%s", rec.plan_hash);
    return ug_sweep_selection_from_record(&rec, x, err, errlen);
}
