/* cmd_diff.c — `ulpgym diff RUN_A RUN_B` and `ulpgym diff --like-for-like [RUN]`: what changed
 * between two runs, grouped by kind (db/query_compare.h classifies every case of run B
 * against its result in run A): new failures with the figure that decided them
 * (reports/failures.h) and a triage line, fixed cases, cases still failing, drift (passing
 * cases whose headroom used grew more than a factor), then the cases whose certified
 * verdict flipped and a per-group table with the pass rates of both runs. Text, one JSON
 * object (--json, "ulpgym-diff/1") or one kind as tab-separated lines (--list, for
 * scripts/nightly.sh). Every database string is escaped in text and made valid UTF-8 in
 * JSON: a database may come from another machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
#include "cli/failure_list.h"
#include "db/query_compare.h"
#include "reports/failures.h"

#define DIFF_STILL_SHOWN 5                /* text: the first few still failing cases */
#define DIFF_LIST_FAILING UG_CHANGE_COUNT /* --list failing: every failing case of run B */

typedef struct {
    char *case_id, *op, *dtype, *verdict_a, *verdict_b; /* raw, as stored */
    const char *figure;                                 /* B's (A's for a fixed case) deciding figure; NULL */
    double used_a, used_b, severity;
    ug_change change;
    int cert; /* +1 certified PASS -> FAIL, -1 FAIL -> PASS, 0 no flip */
    int fails_b;
} diff_item;

typedef struct {
    long cases, common, n[UG_CHANGE_COUNT], cert_fail, cert_fixed;
} diff_counts;

typedef struct {
    /* options */
    const char *db_arg, *db_path, *fail_on_s, *factor_s, *list_s, *runs[2];
    int nruns, like, json, list; /* list: -1 none, else a ug_change or DIFF_LIST_FAILING */
    ug_fail_on policy;
    double factor;
    /* runs */
    long a, b; /* a = 0: no run to compare with (--like-for-like found none) */
    ug_run_record rec_a, rec_b;
    /* what the walk found */
    diff_item *v;
    size_t n, cap;
    diff_counts per[UG_GROUP_COUNT], all;
    long pass_a, pass_b, cert_judged_a, cert_pass_a, cert_judged_b, cert_pass_b; /* over the common cases */
    long pass_all_b, fail_all_b, skip_all_b;                                     /* over every case of B */
    ug_failure_list fail_a, fail_b;                                              /* the deciding figures */
    int oom;
} diff_state;

static char *dup(const char *s) { return strdup(s ? s : ""); }

/* A stored verdict that counts as a failure: neither PASS nor SKIP (nor none). */
static int fails(const char *v) { return v[0] && ug_verdict_text_fails(v); }

static int keep(diff_state *d, const ug_db_compare_row *row, ug_change c, int cert)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        diff_item *v = realloc(d->v, cap * sizeof *v);
        if (!v) return -1;
        d->v = v;
        d->cap = cap;
    }
    diff_item *x = &d->v[d->n++];
    *x = (diff_item){dup(row->case_id),
                     dup(row->op),
                     dup(row->dtype),
                     dup(row->verdict_a),
                     dup(row->verdict_b),
                     NULL,
                     row->used_a,
                     row->used_b,
                     0.0,
                     c,
                     cert,
                     fails(row->verdict_b)};
    return x->case_id && x->op && x->dtype && x->verdict_a && x->verdict_b ? 0 : -1;
}

/* The pass rates over the cases both runs hold, of the outcome and of the certified standard. */
static void count_common(diff_state *d, const ug_db_compare_row *row)
{
    const char *ca = row->certified_a, *cb = row->certified_b;
    d->pass_a += strcmp(row->verdict_a, "PASS") == 0;
    d->pass_b += strcmp(row->verdict_b, "PASS") == 0;
    d->cert_judged_a += strcmp(ca, "PASS") == 0 || strcmp(ca, "FAIL") == 0;
    d->cert_pass_a += strcmp(ca, "PASS") == 0;
    d->cert_judged_b += strcmp(cb, "PASS") == 0 || strcmp(cb, "FAIL") == 0;
    d->cert_pass_b += strcmp(cb, "PASS") == 0;
}

static int on_row(const ug_db_compare_row *row, void *ctx)
{
    diff_state *d = ctx;
    int g = ug_group_find(row->group), common = row->verdict_a[0] != 0;
    ug_change c = d->a ? ug_change_classify(row, d->factor) : UG_CHANGE_NONE;
    int cert = !common                                                                  ? 0
               : !strcmp(row->certified_a, "PASS") && !strcmp(row->certified_b, "FAIL") ? 1
               : !strcmp(row->certified_a, "FAIL") && !strcmp(row->certified_b, "PASS") ? -1
                                                                                        : 0;
    d->pass_all_b += strcmp(row->verdict_b, "PASS") == 0;
    d->fail_all_b += fails(row->verdict_b);
    d->skip_all_b += strcmp(row->verdict_b, "SKIP") == 0;
    if (common) count_common(d, row);
    if (g >= 0) {
        diff_counts *p = &d->per[g];
        p->cases++;
        p->common += common;
        p->n[c]++;
        p->cert_fail += cert > 0;
        p->cert_fixed += cert < 0;
    }
    if (c == UG_CHANGE_NONE && !cert && !fails(row->verdict_b)) return 0;
    if (keep(d, row, c, cert)) d->oom = 1;
    return d->oom;
}

/* --- figures: each failing case's deciding figure, from reports/failures.h ------------- */

static int by_id(const void *x, const void *y)
{
    return strcmp(((const ug_failure *)x)->case_id, ((const ug_failure *)y)->case_id);
}

static const ug_failure *find_failure(const ug_failure_list *l, const char *id)
{
    ug_failure key = {.case_id = (char *)id};
    return l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_id) : NULL;
}

static int read_failures(ug_db *db, long run, ug_failure_list *l, char *err, size_t errlen)
{
    ug_db_failure_filter f = {.run = run, .standard = -1};
    if (ug_failures_read(db, &f, 0, l, err, errlen)) return -1;
    if (l->n) qsort(l->v, l->n, sizeof *l->v, by_id);
    return 0;
}

/* Attaches to every kept case the figure that decided it (B's; A's for a fixed case). */
static void attach_figures(diff_state *d)
{
    for (size_t i = 0; i < d->n; i++) {
        diff_item *x = &d->v[i];
        const ug_failure *f = find_failure(x->change == UG_CHANGE_FIXED ? &d->fail_a : &d->fail_b, x->case_id);
        if (!f) continue;
        x->figure = f->figure;
        x->severity = f->severity;
    }
}

/* --- order: the most severe failures first, the largest drift first -------------------- */

static double growth(const diff_item *x) { return x->used_a > 0 ? x->used_b / x->used_a : INFINITY; }

static int by_rank(const void *p, const void *q)
{
    const diff_item *x = *(const diff_item *const *)p, *y = *(const diff_item *const *)q;
    double kx = x->change == UG_CHANGE_DRIFT ? growth(x) : x->severity;
    double ky = y->change == UG_CHANGE_DRIFT ? growth(y) : y->severity;
    if (x->change != UG_CHANGE_FIXED && kx != ky) return kx > ky ? -1 : 1;
    if (x->change == UG_CHANGE_DRIFT && x->used_b != y->used_b) return x->used_b > y->used_b ? -1 : 1;
    return strcmp(x->case_id, y->case_id);
}

/* The kept cases of one kind (a ug_change, or DIFF_LIST_FAILING) in their order: a
 * malloc'd array of *n pointers (NULL when none or without memory). */
static diff_item **select_kind(const diff_state *d, int kind, size_t *n)
{
    diff_item **s = malloc((d->n ? d->n : 1) * sizeof *s);
    *n = 0;
    for (size_t i = 0; s && i < d->n; i++)
        if (kind == DIFF_LIST_FAILING ? d->v[i].fails_b : (int)d->v[i].change == kind) s[(*n)++] = &d->v[i];
    if (s && *n) qsort(s, *n, sizeof *s, by_rank);
    return s;
}

/* --- text -------------------------------------------------------------------------------- */

static void pr(const char *fmt, const char *s)
{
    char *e = ug_failure_escape(s);
    printf(fmt, e ? e : "?");
    free(e);
}

static const char *num(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.3g", v);
    else
        snprintf(buf, len, isnan(v) ? "-" : "inf");
    return buf;
}

/* ID, op, dtype, "A -> B" */
static void print_head(const diff_item *x)
{
    pr("  %s  ", x->case_id);
    pr("%-28s ", x->op);
    pr("%-5s ", x->dtype);
    pr("%s -> ", x->verdict_a[0] ? x->verdict_a : "(none)");
    pr("%s ", x->verdict_b);
}

static void print_triage(const diff_state *d, const diff_item *x)
{
    char *line = ug_failure_id_ok(x->case_id) ? ug_triage_line(x->case_id, d->db_path, d->b, d->rec_b.backend) : NULL;
    if (line)
        printf("      %s\n", line);
    else
        printf("      (no triage line: %s)\n",
               ug_failure_id_ok(x->case_id) ? "out of memory" : "the case ID is not 16 hex digits");
    free(line);
}

static void print_item(const diff_state *d, const diff_item *x)
{
    char u1[32], u2[32], u3[32];
    print_head(x);
    if (x->change == UG_CHANGE_DRIFT && x->used_a > 0)
        printf(" used %s -> %s (%sx)\n", num(x->used_a, u1, sizeof u1), num(x->used_b, u2, sizeof u2),
               num(growth(x), u3, sizeof u3));
    else if (x->change == UG_CHANGE_DRIFT)
        printf(" used %s -> %s\n", num(x->used_a, u1, sizeof u1), num(x->used_b, u2, sizeof u2));
    else if (x->change == UG_CHANGE_FIXED)
        pr(" was: %s\n", x->figure ? x->figure : "");
    else
        pr(" %s\n", x->figure ? x->figure : "");
    if (x->change == UG_CHANGE_NEW_FAIL) print_triage(d, x);
}

static const char *const section_name[UG_CHANGE_COUNT] = {"", "NEW FAILURES", "FIXED", "STILL FAILING", "DRIFT"};

/* What a section holds, after its count (nothing when it is empty). */
static void print_section_note(const diff_state *d, ug_change c, size_t n, size_t shown)
{
    if (!n) return;
    if (c == UG_CHANGE_NEW_FAIL)
        printf(" (failing now; passed, skipped or absent in run %ld), most severe first", d->a);
    if (c == UG_CHANGE_FIXED) printf(" (passing now, failing in run %ld)", d->a);
    if (c == UG_CHANGE_STILL_FAILING) printf(" (in both runs), %s%zu most severe", shown < n ? "the " : "", shown);
    if (c == UG_CHANGE_DRIFT)
        printf(" (passing in both; the headroom used grew more than %gx, to at least %g of what the deciding "
               "standard allows)",
               d->factor, UG_DRIFT_FLOOR);
}

static void print_section(const diff_state *d, ug_change c)
{
    size_t n, shown;
    diff_item **s = select_kind(d, (int)c, &n);
    shown = c == UG_CHANGE_STILL_FAILING && n > DIFF_STILL_SHOWN ? DIFF_STILL_SHOWN : n;
    printf("\n%s: %zu", section_name[c], n);
    print_section_note(d, c, n, shown);
    printf("\n");
    for (size_t i = 0; s && i < shown; i++) print_item(d, s[i]);
    char *q = shown < n ? ug_shell_word(d->db_path) : NULL;
    if (shown < n)
        printf("  (%zu more: %s diff %ld %ld --list %s --db %s)\n", n - shown, ug_self_command(), d->a, d->b,
               ug_change_key(c), q ? q : "?");
    free(q);
    free(s);
}

static void print_flips(const diff_state *d)
{
    printf("\nCERTIFIED FLIPS (the certified verdict changed): %ld PASS -> FAIL, %ld FAIL -> PASS\n", d->all.cert_fail,
           d->all.cert_fixed);
    for (size_t i = 0; i < d->n; i++) {
        const diff_item *x = &d->v[i];
        if (!x->cert) continue;
        pr("  %s  ", x->case_id);
        pr("%-28s ", x->op);
        pr("%-5s ", x->dtype);
        printf("certified %s\n", x->cert > 0 ? "PASS -> FAIL" : "FAIL -> PASS");
    }
}

static void add_counts(diff_counts *all, const diff_counts *p)
{
    all->cases += p->cases;
    all->common += p->common;
    for (int c = 0; c < UG_CHANGE_COUNT; c++) all->n[c] += p->n[c];
    all->cert_fail += p->cert_fail;
    all->cert_fixed += p->cert_fixed;
}

static void print_group_row(const char *name, const diff_counts *p)
{
    printf("%-11s %7ld %7ld %9ld %6ld %6ld %6ld %10ld %11ld\n", name, p->cases, p->common, p->n[UG_CHANGE_NEW_FAIL],
           p->n[UG_CHANGE_FIXED], p->n[UG_CHANGE_STILL_FAILING], p->n[UG_CHANGE_DRIFT], p->cert_fail, p->cert_fixed);
}

/* "12.50%", or "-" when nothing was counted. */
static const char *rate(long pass, long n, char *buf, size_t len)
{
    if (n)
        snprintf(buf, len, "%.2f%%", 100.0 * (double)pass / (double)n);
    else
        snprintf(buf, len, "-");
    return buf;
}

static void print_table(const diff_state *d)
{
    printf("\n%-11s %7s %7s %9s %6s %6s %6s %10s %11s\n", "group", "cases", "common", "new fail", "fixed", "still",
           "drift", "cert fail", "cert fixed");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (d->per[g].cases) print_group_row(ug_group_name((ug_group)g), &d->per[g]);
    print_group_row("total", &d->all);
    char r1[16], r2[16], r3[16], r4[16];
    printf("pass rate over the %ld common cases: %s -> %s; certified %s -> %s (of %ld -> %ld judged)\n", d->all.common,
           rate(d->pass_a, d->all.common, r1, sizeof r1), rate(d->pass_b, d->all.common, r2, sizeof r2),
           rate(d->cert_pass_a, d->cert_judged_a, r3, sizeof r3), rate(d->cert_pass_b, d->cert_judged_b, r4, sizeof r4),
           d->cert_judged_a, d->cert_judged_b);
}

/* The standard that decided a run's cases: its `sweep --primary`, else each op's own. */
static const char *decided_by(const ug_run_record *rec, char *buf, size_t len)
{
    if (rec->primary_standard[0])
        snprintf(buf, len, "%s (--primary)", rec->primary_standard);
    else
        snprintf(buf, len, "each op's own primary");
    return buf;
}

static const char like_rule[] = "plan hash, backend, selection, sample and deciding standard";

static void print_header(const diff_state *d)
{
    if (d->like && !d->a)
        printf("like for like: run %ld has no earlier finished run of the same %s: nothing to compare\n", d->b,
               like_rule);
    if (d->like && d->a)
        printf("like for like: run %ld compared with run %ld, the last earlier finished run of the same %s\n", d->b,
               d->a, like_rule);
    if (d->a) {
        char da[64], db[64];
        printf("diff run %ld -> run %ld (drift factor %g)\n", d->a, d->b, d->factor);
        decided_by(&d->rec_a, da, sizeof da);
        decided_by(&d->rec_b, db, sizeof db);
        if (strcmp(da, db) != 0) printf("  outcomes decided by %s -> %s\n", da, db);
        if (strcmp(d->rec_a.git_rev, d->rec_b.git_rev) != 0) {
            pr("  code changed: %s -> ", d->rec_a.git_rev);
            pr("%s\n", d->rec_b.git_rev);
        } else
            pr("  same code: %s\n", d->rec_b.git_rev);
    }
    printf("run %ld: %ld cases: %ld pass, %ld not passing, %ld skipped\n", d->b, d->all.cases, d->pass_all_b,
           d->fail_all_b, d->skip_all_b);
    if (d->a)
        printf("%ld new failures, %ld fixed, %ld still failing, %ld drift\n", d->all.n[UG_CHANGE_NEW_FAIL],
               d->all.n[UG_CHANGE_FIXED], d->all.n[UG_CHANGE_STILL_FAILING], d->all.n[UG_CHANGE_DRIFT]);
}

static void print_text(const diff_state *d)
{
    print_header(d);
    if (!d->a) return;
    print_section(d, UG_CHANGE_NEW_FAIL);
    print_section(d, UG_CHANGE_FIXED);
    print_section(d, UG_CHANGE_STILL_FAILING);
    print_section(d, UG_CHANGE_DRIFT);
    print_flips(d);
    print_table(d);
}

/* --list KIND: a header, then one tab-separated line per case (fields escaped: no tab or
 * newline from the database reaches the output). */
static void print_list(const diff_state *d)
{
    size_t n;
    char u1[32], u2[32];
    diff_item **s = select_kind(d, d->list, &n);
    printf("case_id\top\tdtype\tverdict_a\tverdict_b\tused_a\tused_b\tfigure\n");
    for (size_t i = 0; s && i < n; i++) {
        const diff_item *x = s[i];
        pr("%s\t", x->case_id);
        pr("%s\t", x->op);
        pr("%s\t", x->dtype);
        pr("%s\t", x->verdict_a[0] ? x->verdict_a : "-");
        pr("%s\t", x->verdict_b);
        printf("%s\t%s\t", num(x->used_a, u1, sizeof u1), num(x->used_b, u2, sizeof u2));
        pr("%s\n", x->figure ? x->figure : "-");
    }
    free(s);
}

/* --- JSON -------------------------------------------------------------------------------- */

static void add_clean(cJSON *o, const char *key, const char *s)
{
    char *c = s ? ug_failure_clean_utf8(s) : NULL;
    if (c)
        cJSON_AddStringToObject(o, key, c);
    else
        cJSON_AddNullToObject(o, key);
    free(c);
}

static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *item_json(const diff_state *d, const diff_item *x)
{
    cJSON *o = cJSON_CreateObject();
    add_clean(o, "case_id", x->case_id);
    add_clean(o, "op", x->op);
    add_clean(o, "dtype", x->dtype);
    add_clean(o, "verdict_a", x->verdict_a[0] ? x->verdict_a : NULL);
    add_clean(o, "verdict_b", x->verdict_b);
    add_num(o, "used_a", x->used_a);
    add_num(o, "used_b", x->used_b);
    add_clean(o, "figure", x->figure);
    char *line = ug_failure_id_ok(x->case_id) ? ug_triage_line(x->case_id, d->db_path, d->b, d->rec_b.backend) : NULL;
    add_clean(o, "triage", line);
    free(line);
    return o;
}

static void add_kind(cJSON *j, const diff_state *d, int kind, const char *key)
{
    size_t n;
    diff_item **s = select_kind(d, kind, &n);
    cJSON *a = cJSON_AddArrayToObject(j, key);
    for (size_t i = 0; s && i < n; i++) cJSON_AddItemToArray(a, item_json(d, s[i]));
    free(s);
}

static void add_flips(cJSON *j, const diff_state *d)
{
    cJSON *f = cJSON_AddObjectToObject(j, "certified_flips");
    cJSON *pf = cJSON_AddArrayToObject(f, "pass_to_fail"), *fp = cJSON_AddArrayToObject(f, "fail_to_pass");
    for (size_t i = 0; i < d->n; i++) {
        const diff_item *x = &d->v[i];
        if (!x->cert) continue;
        cJSON *o = cJSON_CreateObject();
        add_clean(o, "case_id", x->case_id);
        add_clean(o, "op", x->op);
        add_clean(o, "dtype", x->dtype);
        cJSON_AddItemToArray(x->cert > 0 ? pf : fp, o);
    }
}

static void add_groups(cJSON *j, const diff_state *d)
{
    cJSON *a = cJSON_AddArrayToObject(j, "groups");
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        const diff_counts *p = &d->per[g];
        if (!p->cases) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "group", ug_group_name((ug_group)g));
        cJSON_AddNumberToObject(o, "cases", (double)p->cases);
        cJSON_AddNumberToObject(o, "common", (double)p->common);
        for (int c = UG_CHANGE_NEW_FAIL; c < UG_CHANGE_COUNT; c++)
            cJSON_AddNumberToObject(o, ug_change_key((ug_change)c), (double)p->n[c]);
        cJSON_AddNumberToObject(o, "certified_pass_to_fail", (double)p->cert_fail);
        cJSON_AddNumberToObject(o, "certified_fail_to_pass", (double)p->cert_fixed);
        cJSON_AddItemToArray(a, o);
    }
}

static void add_rates(cJSON *j, const diff_state *d)
{
    cJSON *r = cJSON_AddObjectToObject(j, "pass_rates");
    cJSON_AddNumberToObject(r, "common", (double)d->all.common);
    add_num(r, "a", d->all.common ? 100.0 * (double)d->pass_a / (double)d->all.common : NAN);
    add_num(r, "b", d->all.common ? 100.0 * (double)d->pass_b / (double)d->all.common : NAN);
    add_num(r, "certified_a", d->cert_judged_a ? 100.0 * (double)d->cert_pass_a / (double)d->cert_judged_a : NAN);
    add_num(r, "certified_b", d->cert_judged_b ? 100.0 * (double)d->cert_pass_b / (double)d->cert_judged_b : NAN);
    cJSON *t = cJSON_AddObjectToObject(j, "run_totals");
    cJSON_AddNumberToObject(t, "cases", (double)d->all.cases);
    cJSON_AddNumberToObject(t, "passed", (double)d->pass_all_b);
    cJSON_AddNumberToObject(t, "failing", (double)d->fail_all_b);
    cJSON_AddNumberToObject(t, "skipped", (double)d->skip_all_b);
}

static void add_head(cJSON *j, const diff_state *d)
{
    cJSON_AddStringToObject(j, "format", "ulpgym-diff/1");
    cJSON_AddNumberToObject(j, "run", (double)d->b);
    if (d->a)
        cJSON_AddNumberToObject(j, "compared_run", (double)d->a);
    else
        cJSON_AddNullToObject(j, "compared_run");
    cJSON_AddBoolToObject(j, "like_for_like", d->like);
    cJSON_AddNumberToObject(j, "drift_factor", d->factor);
    cJSON *g = cJSON_AddObjectToObject(j, "git_rev");
    add_clean(g, "run", d->rec_b.git_rev);
    add_clean(g, "compared_run", d->a ? d->rec_a.git_rev : NULL);
    cJSON *c = cJSON_AddObjectToObject(j, "counts");
    for (int k = UG_CHANGE_NEW_FAIL; k < UG_CHANGE_COUNT; k++)
        cJSON_AddNumberToObject(c, ug_change_key((ug_change)k), (double)d->all.n[k]);
}

static void print_json(const diff_state *d)
{
    cJSON *j = cJSON_CreateObject();
    add_head(j, d);
    for (int k = UG_CHANGE_NEW_FAIL; k < UG_CHANGE_COUNT; k++) add_kind(j, d, k, ug_change_key((ug_change)k));
    add_flips(j, d);
    add_groups(j, d);
    add_rates(j, d);
    char *s = cJSON_Print(j);
    printf("%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}

/* --- the command ------------------------------------------------------------------------- */

static int parse_list(diff_state *d)
{
    d->list = -1;
    if (!d->list_s) return 0;
    if (strcmp(d->list_s, "failing") == 0) d->list = DIFF_LIST_FAILING;
    for (int c = UG_CHANGE_NEW_FAIL; c < UG_CHANGE_COUNT; c++)
        if (strcmp(d->list_s, ug_change_key((ug_change)c)) == 0) d->list = c;
    if (d->list < 0) return ug_cli_fail("diff: --list takes new_failures, fixed, still_failing, drift or failing");
    return 0;
}

static int parse(int argc, char **argv, diff_state *d)
{
    const ug_cli_valopt value_opts[] = {{"--db", &d->db_arg},
                                        {"--factor", &d->factor_s},
                                        {"--fail-on", &d->fail_on_s},
                                        {"--list", &d->list_s},
                                        {NULL, NULL}};
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (ug_cli_flag(argv, i, "--json"))
            d->json = 1;
        else if (ug_cli_flag(argv, i, "--like-for-like"))
            d->like = 1;
        else if (argv[i][0] != '-' && d->nruns < 2)
            d->runs[d->nruns++] = argv[i];
        else
            return ug_cli_fail("diff: unexpected argument \"%s\" (see ulpgym diff -h)", argv[i]);
    }
    if (d->like ? d->nruns > 1 : d->nruns != 2)
        return ug_cli_fail("diff: give two runs (ulpgym diff RUN_A RUN_B) or --like-for-like [RUN]");
    if (d->json && d->list_s) return ug_cli_fail("diff: --json and --list exclude each other");
    if (ug_fail_on_parse("diff", d->fail_on_s, &d->policy) || parse_list(d)) return UG_EXIT_USAGE;
    char *end = NULL;
    d->factor = d->factor_s ? strtod(d->factor_s, &end) : UG_DRIFT_FACTOR_DEFAULT;
    if ((end && *end) || !(d->factor > 1.0) || !isfinite(d->factor))
        return ug_cli_fail("diff: --factor must be a number > 1");
    return 0;
}

/* Finds runs a and b (--like-for-like: b is RUN or the latest, a its comparable run, 0 when none). */
static int resolve(ug_db *db, diff_state *d, char *err, size_t errlen)
{
    if (ug_db_resolve_run(db, d->like ? (d->nruns ? d->runs[0] : "latest") : d->runs[1], &d->b, err, errlen)) return -1;
    if (d->like) {
        d->a = ug_db_comparable_run(db, d->b, err, errlen);
        if (d->a < 0) return -1;
    } else if (ug_db_resolve_run(db, d->runs[0], &d->a, err, errlen)) {
        return -1;
    }
    if (ug_db_run_get(db, d->b, &d->rec_b, err, errlen)) return -1;
    if (d->a && ug_db_run_get(db, d->a, &d->rec_a, err, errlen)) return -1;
    return 0;
}

/* Walks every case of run b against run a and reads the deciding figures. */
static int gather(ug_db *db, diff_state *d, char *err, size_t errlen)
{
    if (ug_db_compare_runs(db, d->a, d->b, on_row, d, err, errlen)) {
        if (d->oom) snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int g = 0; g < UG_GROUP_COUNT; g++) add_counts(&d->all, &d->per[g]);
    if (read_failures(db, d->b, &d->fail_b, err, errlen)) return -1;
    if (d->a && read_failures(db, d->a, &d->fail_a, err, errlen)) return -1;
    attach_figures(d);
    return 0;
}

static void free_state(diff_state *d)
{
    for (size_t i = 0; i < d->n; i++) {
        diff_item *x = &d->v[i];
        char *texts[] = {x->case_id, x->op, x->dtype, x->verdict_a, x->verdict_b};
        for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) free(texts[k]);
    }
    free(d->v);
    ug_failures_free(&d->fail_a);
    ug_failures_free(&d->fail_b);
}

static int exit_status(const diff_state *d)
{
    long counted = d->policy == UG_FAIL_ON_NEW    ? d->all.n[UG_CHANGE_NEW_FAIL]
                   : d->policy == UG_FAIL_ON_FAIL ? d->fail_all_b
                                                  : 0;
    return counted ? UG_EXIT_FOUND : UG_EXIT_OK;
}

static int ug_cmd_diff(int argc, char **argv)
{
    diff_state *d = calloc(1, sizeof *d);
    if (!d) return ug_cli_fail("diff: out of memory");
    d->policy = UG_FAIL_ON_NEW; /* diff is about change */
    int rc = parse(argc, argv, d);
    ug_db *db = NULL;
    char err[512];
    if (!rc && ug_cli_open_db(d->db_arg, UG_DB_READONLY, &db)) rc = UG_EXIT_USAGE;
    d->db_path = ug_db_default_path(d->db_arg);
    if (!rc && resolve(db, d, err, sizeof err)) rc = ug_cli_fail("diff: %s", err);
    if (!rc && gather(db, d, err, sizeof err)) {
        ug_cli_fail("diff: %s", err);
        rc = UG_EXIT_ENGINE;
    }
    if (!rc) {
        if (d->json)
            print_json(d);
        else if (d->list >= 0)
            print_list(d);
        else
            print_text(d);
        rc = exit_status(d);
    }
    if (db) ug_db_close(db);
    free_state(d);
    free(d);
    return rc;
}

const ug_command ug_command_diff = {
    "diff", ug_cmd_diff, "what changed between two runs: new failures, fixed, still failing, drift",
    "usage: ulpgym diff RUN_A RUN_B [--factor F] [--json | --list KIND] [--fail-on never|fail|new]\n"
    "                   [--db PATH]\n"
    "       ulpgym diff --like-for-like [RUN] [the same options]\n"
    "  Every case of run B (RUN_B; with --like-for-like RUN, default the latest) against its\n"
    "  result in run A (RUN_A; with --like-for-like the last earlier finished run of the same\n"
    "  plan hash, backend, op/group filters, limit, shard, sample and --primary: the run\n"
    "  scripts/nightly.sh compares with; none: it says so and compares nothing), grouped:\n"
    "    NEW FAILURES   failing in B (neither PASS nor SKIP), passed, skipped or absent in A;\n"
    "                   most severe first, each with the figure that decided it and a triage line\n"
    "    FIXED          passing in B, failing in A (with A's figure)\n"
    "    STILL FAILING  failing in both: the count and the first 5\n"
    "    DRIFT          passing in both, but B used at least 0.25 of what its deciding\n"
    "                   standard allows and more than F times (default 4) what A used: headroom\n"
    "                   lost before anything fails (this replaces the max-ulp \"MOVED\" lines)\n"
    "  then the cases whose certified verdict flipped (PASS -> FAIL, FAIL -> PASS; NA or no\n"
    "  verdict is no flip), a table per group, and the pass rates of both runs over the cases\n"
    "  both hold, of the outcome and of the certified standard (among the cases it judged).\n"
    "  RUN is a number or \"latest\".\n"
    "  --json       one object {\"format\":\"ulpgym-diff/1\", run, compared_run (null: none),\n"
    "               like_for_like, counts, new_failures, fixed, still_failing, drift (each case:\n"
    "               case_id, op, dtype, verdict_a, verdict_b, used_a, used_b, figure: B's deciding\n"
    "               figure, A's for a fixed case, null for drift; triage: a line for run B),\n"
    "               certified_flips, groups, pass_rates, run_totals}; numbers that are not\n"
    "               finite are null\n"
    "  --list KIND  KIND's cases as tab-separated lines under a header (case_id, op, dtype,\n"
    "               verdict_a, verdict_b, used_a, used_b, figure): new_failures, fixed,\n"
    "               still_failing, drift, or failing (every failing case of B, compared or not)\n"
    "  --factor F   the drift factor, a number > 1 (default 4)\n"
    "  --fail-on P  new (default): exit status 1 when B has a new failure; fail: when any case\n"
    "               of B fails; never: not for verdicts\n"
    "  Exit status: 0 --fail-on finds nothing (also when --like-for-like finds no run to compare\n"
    "  with, unless --fail-on fail), 1 it does, 2 bad input (no such run, not a ulpgym\n"
    "  database), 3 the database could not be read.\n"};
