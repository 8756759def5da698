/* test_plan_share.c — the stratified CI share (gen/plan_share.c) against the whole default
 * plan, op by op: the share is a subset in plan order; it keeps every required case,
 * every dtype, every distribution set and each numeric param's smallest and largest value
 * the op's full plan holds; it holds per_op cases unless those musts need more; an op
 * with few cases keeps all; choosing twice gives the same share; and ULPGYM_PLAN_SHARE is
 * parsed strictly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "check.h"
#include "gen/plan.h"
#include "gen/plan_share.h"

#define PER_OP 40 /* small, so every op with a space of some size is really cut */

/* What an op's cases cover: the distinct dtypes and distribution sets (as text) and
 * each numeric param's range. */
typedef struct {
    char *text[256];
    size_t n_text;
    char *param[32];
    double lo[32], hi[32];
    size_t n_param;
} coverage;

static void add_text(coverage *cv, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);
    for (size_t i = 0; i < cv->n_text; i++)
        if (!strcmp(cv->text[i], t)) return free(t);
    if (cv->n_text < 256)
        cv->text[cv->n_text++] = t;
    else
        free(t);
}

static void add_param(coverage *cv, const cJSON *v)
{
    size_t i = 0;
    while (i < cv->n_param && strcmp(cv->param[i], v->string)) i++;
    if (i == cv->n_param) {
        if (i == 32) return;
        cv->param[cv->n_param++] = strdup(v->string);
        cv->lo[i] = cv->hi[i] = v->valuedouble;
    }
    if (v->valuedouble < cv->lo[i]) cv->lo[i] = v->valuedouble;
    if (v->valuedouble > cv->hi[i]) cv->hi[i] = v->valuedouble;
}

static void cover(const ug_plan *p, int op, coverage *cv)
{
    memset(cv, 0, sizeof *cv);
    for (size_t i = 0; i < p->n; i++) {
        if (p->cases[i].op != op) continue;
        cJSON *j = cJSON_Parse(p->cases[i].spec);
        add_text(cv, cJSON_GetObjectItemCaseSensitive(j, "dtype"));
        add_text(cv, cJSON_GetObjectItemCaseSensitive(j, "dist"));
        for (const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "params")->child; v; v = v->next)
            if (cJSON_IsNumber(v)) add_param(cv, v);
        cJSON_Delete(j);
    }
}

static void uncover(coverage *cv)
{
    for (size_t i = 0; i < cv->n_text; i++) free(cv->text[i]);
    for (size_t i = 0; i < cv->n_param; i++) free(cv->param[i]);
}

static size_t count_op(const ug_plan *p, int op)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) n += p->cases[i].op == op;
    return n;
}

/* Every must of op's full plan is in the share: its required cases, every dtype and
 * distribution set, each numeric param's extremes. */
static void check_musts(const ug_plan *full, const ug_plan *share, int op)
{
    for (size_t i = 0, k = 0; i < full->n; i++) {
        const ug_plan_case *c = &full->cases[i];
        if (c->op != op || !c->required) continue;
        while (k < share->n && strcmp(share->cases[k].id, c->id)) k++;
        CHECK(k < share->n, "%s: required case %s left out of the share", ug_op_name(op), c->id);
        if (k == share->n) k = 0;
    }
    coverage f, s;
    cover(full, op, &f);
    cover(share, op, &s);
    CHECK(f.n_text == s.n_text, "%s: the share has %zu of %zu dtypes and distribution sets", ug_op_name(op), s.n_text,
          f.n_text);
    CHECK(f.n_param == s.n_param, "%s: the share has %zu of %zu numeric params", ug_op_name(op), s.n_param, f.n_param);
    for (size_t i = 0; i < f.n_param; i++) {
        size_t j = 0;
        while (j < s.n_param && strcmp(s.param[j], f.param[i])) j++;
        CHECK(j < s.n_param && s.lo[j] == f.lo[i] && s.hi[j] == f.hi[i], "%s: param %s's range %g..%g not covered",
              ug_op_name(op), f.param[i], f.lo[i], f.hi[i]);
    }
    uncover(&f), uncover(&s);
}

/* The share is full's cases of op in full's order. */
static void check_subset_in_order(const ug_plan *full, const ug_plan *share, int op)
{
    size_t k = 0;
    for (size_t i = 0; i < full->n && k < share->n; i++) {
        while (k < share->n && share->cases[k].op != op) k++;
        if (k < share->n && full->cases[i].op == op && !strcmp(full->cases[i].id, share->cases[k].id)) k++;
    }
    while (k < share->n && share->cases[k].op != op) k++;
    CHECK(k == share->n, "%s: the share is not a subsequence of the plan", ug_op_name(op));
}

static void check_env(void)
{
    char err[256];
    unsetenv("ULPGYM_PLAN_SHARE");
    CHECK(ug_plan_share_from_env(err, sizeof err) == UG_SHARE_PER_OP, "default share");
    setenv("ULPGYM_PLAN_SHARE", "full", 1);
    CHECK(ug_plan_share_from_env(err, sizeof err) == 0, "full = every case");
    setenv("ULPGYM_PLAN_SHARE", "33", 1);
    CHECK(ug_plan_share_from_env(err, sizeof err) == 33, "a number");
    const char *bad[] = {"0", "-4", "12x", "all"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("ULPGYM_PLAN_SHARE", bad[i], 1);
        CHECK(ug_plan_share_from_env(err, sizeof err) == -1 && strstr(err, "ULPGYM_PLAN_SHARE"), "%s refused", bad[i]);
    }
    unsetenv("ULPGYM_PLAN_SHARE");
}

int main(void)
{
    char err[1024];
    ug_plan full, share, again;
    if (ug_plan_load(ug_plan_default_path(), -1, &full, err, sizeof err)) {
        fprintf(stderr, "plan: %s\n", err);
        return 1;
    }
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &share, err, sizeof err) == 0, "%s", err);
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &again, err, sizeof err) == 0, "%s", err);
    CHECK(ug_plan_stratify(&share, PER_OP, err, sizeof err) == 0, "%s", err);
    CHECK(ug_plan_stratify(&again, PER_OP, err, sizeof err) == 0 && again.n == share.n, "stable size");
    for (size_t i = 0; i < share.n && i < again.n; i++)
        CHECK(!strcmp(share.cases[i].id, again.cases[i].id), "the share differs between two choices at %zu", i);
    int cut = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        size_t n_full = count_op(&full, op), n_share = count_op(&share, op), n_required = 0;
        if (!n_full) continue;
        for (size_t i = 0; i < full.n; i++) n_required += full.cases[i].op == op && full.cases[i].required;
        if (n_full <= PER_OP)
            CHECK(n_share == n_full, "%s: %zu cases, all kept", ug_op_name(op), n_full);
        else
            CHECK(n_share >= PER_OP && n_share < n_full, "%s: share %zu of %zu", ug_op_name(op), n_share, n_full);
        CHECK(n_share <= PER_OP || n_share <= n_required + 64, "%s: share %zu too big (%zu required)", ug_op_name(op),
              n_share, n_required);
        cut += n_share < n_full;
        check_subset_in_order(&full, &share, op);
        check_musts(&full, &share, op);
    }
    CHECK(cut >= 10, "only %d ops were cut at %d cases per op", cut, PER_OP);
    size_t n_before = full.n;
    CHECK(ug_plan_stratify(&full, 1000000, err, sizeof err) == 0 && full.n == n_before, "a big share keeps every case");
    check_env();
    ug_plan_free(&full), ug_plan_free(&share), ug_plan_free(&again);
    return check_done();
}
