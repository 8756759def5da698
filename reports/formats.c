/* formats.c — the markdown writer of report.h. It leads with what changed since the last
 * like-for-like run (new failures with their deciding figure and triage line, fixed, drift
 * of headroom, still failing), then the release report's generalization table (group,
 * operators, cases, pass rate, and the certified standard's pass rate beside it), one row
 * per operator with its passing case nearest the limit, the top failures by severity with
 * their headroom, and last the database's latest kernel-timing table where it holds one
 * (bench_report.c). Every database string is escaped: a database may come from another
 * machine. JSON is in json.c, JUnit in junit.c, CSV in csv.c. */
#include <stdlib.h>
#include <string.h>

#include "reports/bench_report.h"
#include "reports/formats.h"
#include "reports/report.h"

#define STILL_FAILING_SHOWN 5 /* still-failing cases listed; the rest are counted */

/* s as markdown text in a table cell or a sentence: not UTF-8 bytes as \xNN, line breaks
 * as spaces, other control bytes dropped, and every character markdown gives a meaning
 * (| ` * _ [ ] < > ~ & \) backslash-escaped. */
static void md_text(FILE *f, const char *s)
{
    char *clean = ug_failure_clean_utf8(s ? s : "");
    for (const char *p = clean ? clean : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' || c == '\r' || c == '\t')
            fputc(' ', f);
        else if (c < 0x20 || c == 0x7f)
            continue;
        else if (strchr("|`*_[]<>~&\\", c))
            fprintf(f, "\\%c", c);
        else
            fputc(c, f);
    }
    free(clean);
}

/* s as a code span in a table cell: fenced by one backtick more than its longest run of
 * backticks, | escaped (GFM tables split on it even in code), line breaks as spaces. */
static void md_code(FILE *f, const char *s)
{
    char *clean = ug_failure_clean_utf8(s ? s : "");
    const char *t = clean ? clean : "";
    if (!*t) { /* an empty code span would read as stray backticks */
        fputs("–", f);
        free(clean);
        return;
    }
    int run = 0, longest = 0;
    for (const char *p = t; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    int pad = longest > 0; /* a space keeps a backtick at either end apart from the fence */
    for (int i = 0; i <= longest; i++) fputc('`', f);
    if (pad) fputc(' ', f);
    for (const char *p = t; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' || c == '\r' || c == '\t')
            fputc(' ', f);
        else if (c == '|')
            fputs("\\|", f);
        else if (c >= 0x20 && c != 0x7f)
            fputc(c, f);
    }
    if (pad) fputc(' ', f);
    for (int i = 0; i <= longest; i++) fputc('`', f);
    free(clean);
}

/* A database's op or dtype name: as it is when this build knows it, else escaped. */
static void md_name(FILE *f, const char *s)
{
    if (s && (ug_op_find(s) >= 0 || ug_dtype_parse(s) >= 0))
        fputs(s, f);
    else
        md_text(f, s);
}

/* The triage line of a case as a code span ("" for an ID that is not one ulpgym makes). */
static void md_triage(FILE *f, const ug_report *r, const char *case_id)
{
    char *line = ug_failure_id_ok(case_id) ? ug_report_triage_line(r, case_id) : NULL;
    if (line) md_code(f, line);
    free(line);
}

static const char *pass_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_pass_cell(t, "—", buf, len); }

static const char *cert_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_cert_cell(t, "–", buf, len); }

static int ops_in_group(const ug_report *r, int g)
{
    int n = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) n += (int)ug_op_group(op) == g && r->op[op].cases > 0;
    return n;
}

static const char *op_name(int op) { return op >= 0 ? ug_op_name(op) : "?"; }

static void md_header(const ug_report *r, FILE *f)
{
    fprintf(f, "# ulpgym run %ld\n\nplan ", r->run_id);
    md_code(f, r->plan);
    fprintf(f, " (hash ");
    md_text(f, r->plan_hash);
    fprintf(f, "), backend ");
    md_code(f, r->backend);
    fprintf(f, ", build ");
    md_text(f, r->git_rev);
    fprintf(f, ", host ");
    md_text(f, r->host);
    fprintf(f, ", ");
    md_text(f, r->started);
    fprintf(f, " – ");
    md_text(f, r->finished[0] ? r->finished : "…");
    fprintf(f, " (");
    md_text(f, r->status);
    fprintf(f, ")\n\n");
    if (r->primary[0]) {
        fprintf(f, "Every case's outcome was decided by the `");
        md_text(f, r->primary);
        fprintf(f, "` standard (`sweep --primary ");
        md_text(f, r->primary);
        fprintf(f, "`), not by its op's own primary standard.\n\n");
    }
}

/* "| case | op | dtype |" cells of a change. */
static void change_cells(FILE *f, const ug_report_change *c)
{
    fputs("| ", f);
    md_text(f, c->case_id);
    fprintf(f, " | %s | ", op_name(c->op));
    md_name(f, c->dtype);
    fputs(" |", f);
}

static void new_failures_md(const ug_report *r, const ug_report_index *ix, const ug_report_change **v, size_t n,
                            FILE *f)
{
    char u[32];
    fprintf(f,
            "### New failures (%zu)\n\n| case | op | dtype | verdict | what decided | headroom used | triage |\n"
            "|---|---|---|---|---|---:|---|\n",
            n);
    for (size_t i = 0; i < n && i < (size_t)r->top; i++) {
        const ug_failure *x = ug_report_index_failure(ix, v[i]->case_id);
        change_cells(f, v[i]);
        fputc(' ', f);
        md_text(f, v[i]->verdict_b);
        fputs(" | ", f);
        md_text(f, x ? x->figure : v[i]->message);
        fprintf(f, " | %s | ", ug_report_used_text(v[i]->used_b, "–", u));
        md_triage(f, r, v[i]->case_id);
        fputs(" |\n", f);
    }
    if (n > (size_t)r->top) fprintf(f, "\n… and %zu more (`--top all` lists every one).\n", n - (size_t)r->top);
    fputc('\n', f);
}

static void fixed_md(const ug_report *r, const ug_report_change **v, size_t n, FILE *f)
{
    char u[32];
    fprintf(f, "### Fixed (%zu)\n\n| case | op | dtype | was | headroom used now |\n|---|---|---|---|---:|\n", n);
    for (size_t i = 0; i < n && i < (size_t)r->top; i++) {
        change_cells(f, v[i]);
        fputc(' ', f);
        md_text(f, v[i]->verdict_a);
        fprintf(f, " | %s |\n", ug_report_used_text(v[i]->used_b, "–", u));
    }
    if (n > (size_t)r->top) fprintf(f, "\n… and %zu more.\n", n - (size_t)r->top);
    fputc('\n', f);
}

static void drift_md(const ug_report *r, const ug_report_change **v, size_t n, FILE *f)
{
    char a[32], b[32];
    fprintf(f,
            "### Drift (%zu)\n\nPassing cases whose headroom used grew past a quarter of what their deciding "
            "standard allows and by the drift factor since run %ld: nothing fails yet.\n\n"
            "| case | op | dtype | headroom used then → now |\n|---|---|---|---|\n",
            n, r->compared_run);
    for (size_t i = 0; i < n && i < (size_t)r->top; i++) {
        change_cells(f, v[i]);
        fprintf(f, " %s → %s |\n", ug_report_used_text(v[i]->used_a, "–", a),
                ug_report_used_text(v[i]->used_b, "–", b));
    }
    if (n > (size_t)r->top) fprintf(f, "\n… and %zu more.\n", n - (size_t)r->top);
    fputc('\n', f);
}

static void still_failing_md(const ug_report *r, const ug_report_index *ix, const ug_report_change **v, size_t n,
                             FILE *f)
{
    size_t shown = n < STILL_FAILING_SHOWN ? n : STILL_FAILING_SHOWN;
    if (shown > (size_t)r->top) shown = (size_t)r->top;
    fprintf(f, "### Still failing (%zu)\n\n", n);
    if (shown) fprintf(f, "| case | op | dtype | verdict | what decided |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < shown; i++) {
        const ug_failure *x = ug_report_index_failure(ix, v[i]->case_id);
        change_cells(f, v[i]);
        fputc(' ', f);
        md_text(f, v[i]->verdict_b);
        fputs(" | ", f);
        md_text(f, x ? x->figure : v[i]->message);
        fputs(" |\n", f);
    }
    if (n > shown) fprintf(f, "\n… and %zu more (the top failures below, `ulpgym failures` for all).\n", n - shown);
    fputc('\n', f);
}

/* The section the report leads with: what changed against the last like-for-like run. */
static void changes_md(const ug_report *r, const ug_report_index *ix, FILE *f)
{
    if (!r->compared_run) {
        fprintf(f, "## Since the last like-for-like run\n\nThere is no like-for-like run before this one (a finished "
                   "run of the same plan hash, selection, backend, sample and standard): nothing to compare.\n\n");
        return;
    }
    const long *k = r->n_change;
    fprintf(f,
            "## Since run %ld (like for like)\n\nRun %ld is the last finished run of the same plan hash, selection, "
            "backend, sample and standard. **%ld new failure%s**, %ld fixed, %ld still failing, %ld drifting; %ld "
            "unchanged.\n\n",
            r->compared_run, r->compared_run, k[UG_CHANGE_NEW_FAIL], k[UG_CHANGE_NEW_FAIL] == 1 ? "" : "s",
            k[UG_CHANGE_FIXED], k[UG_CHANGE_STILL_FAILING], k[UG_CHANGE_DRIFT], k[UG_CHANGE_NONE]);
    static const ug_change order[] = {UG_CHANGE_NEW_FAIL, UG_CHANGE_FIXED, UG_CHANGE_DRIFT, UG_CHANGE_STILL_FAILING};
    for (size_t o = 0; o < sizeof order / sizeof *order; o++) {
        size_t n;
        const ug_report_change **v = ug_report_changes_of(r, ix, order[o], &n);
        if (!n) continue;
        if (order[o] == UG_CHANGE_NEW_FAIL)
            new_failures_md(r, ix, v, n, f);
        else if (order[o] == UG_CHANGE_FIXED)
            fixed_md(r, v, n, f);
        else if (order[o] == UG_CHANGE_DRIFT)
            drift_md(r, v, n, f);
        else
            still_failing_md(r, ix, v, n, f);
        free(v);
    }
}

static void groups_md(const ug_report *r, FILE *f)
{
    char cert[24], pass[24];
    fprintf(f, "## Generalization results\n\n"
               "| group | operators | cases | passed | failed | other | pass rate | certified pass rate |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases)
            fprintf(f, "| %s | %d | %ld | %ld | %ld | %ld | %s | %s |\n", ug_group_name((ug_group)g),
                    ops_in_group(r, g), r->group[g].cases, r->group[g].pass, r->group[g].fail, r->group[g].other,
                    pass_cell(&r->group[g], pass, sizeof pass), cert_cell(&r->group[g], cert, sizeof cert));
    int nops = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) nops += r->op[op].cases > 0;
    fprintf(f, "| **total** | %d | %ld | %ld | %ld | %ld | %s | %s |\n\n", nops, r->total.cases, r->total.pass,
            r->total.fail, r->total.other, pass_cell(&r->total, pass, sizeof pass),
            cert_cell(&r->total, cert, sizeof cert));
    fprintf(f,
            "Pass rate: cases whose outcome is PASS, decided by %s, among the cases not skipped (%ld SKIP, counted "
            "under other, are no verdict and left out of the denominator; — where every case was skipped). "
            "Certified pass rate: cases whose `certified` verdict is PASS among the %ld it judged (PASS or FAIL); "
            "NA cases (no numeric output) and cases without verdicts (SKIP, ERROR, CRASH, TIMEOUT) are left "
            "out.\n\n",
            r->primary[0] ? "the run's `--primary` standard" : "each op's primary standard", r->total.skip,
            r->total.cert_judged);
    fprintf(f,
            "Judged: %lld of %lld output elements (every element by default; `--sample N` or a case over the "
            "case memory budget judges a sample).\n\n",
            r->elems_judged, r->elems_total);
    if (r->regressions)
        fprintf(
            f,
            "Cases include %ld regression cases found by fuzzing (corpus/found/, origin fuzz) beside the plan's.\n\n",
            r->regressions);
}

static void ops_md(const ug_report *r, FILE *f)
{
    char cert[24], pass[24], u[32];
    fprintf(f,
            "## Per operator\n\n| group | operator | cases | passed | failed | other | pass rate | certified pass rate "
            "| closest passing case (headroom used) |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!r->op[op].cases) continue;
        fprintf(f, "| %s | %s | %ld | %ld | %ld | %ld | %s | %s | ", ug_group_name(ug_op_group(op)), ug_op_name(op),
                r->op[op].cases, r->op[op].pass, r->op[op].fail, r->op[op].other,
                pass_cell(&r->op[op], pass, sizeof pass), cert_cell(&r->op[op], cert, sizeof cert));
        if (r->closest_used[op] >= 0) {
            fprintf(f, "%s ", ug_report_used_text(r->closest_used[op], "–", u));
            md_text(f, r->closest_case[op]);
        } else
            fputs("–", f);
        fputs(" |\n", f);
    }
    fprintf(f, "\nHeadroom used: of what its deciding standard allows, the share a case used (at most 1 passes; "
               "docs/STANDARDS.md). The closest passing case is the one nearest its limit.\n");
}

static void top_failures_md(const ug_report *r, const ug_report_index *ix, FILE *f)
{
    size_t shown = r->failures.n < (size_t)r->top ? r->failures.n : (size_t)r->top;
    if (!shown) return;
    char u[32];
    fprintf(f,
            "\n## Top failures\n\n%zu of %zu failing cases, most severe first (by how far the deciding figure is "
            "past its limit).\n\n| case | op | dtype | verdict | what decided | headroom used | triage |\n"
            "|---|---|---|---|---|---:|---|\n",
            shown, r->failures.n);
    for (size_t i = 0; i < shown; i++) {
        const ug_failure *x = &r->failures.v[i];
        const ug_report_change *c = ug_report_index_change(ix, x->case_id);
        fputs("| ", f);
        md_text(f, x->case_id);
        fputs(" | ", f);
        md_name(f, x->op);
        fputs(" | ", f);
        md_name(f, x->dtype);
        fputs(" | ", f);
        md_text(f, x->verdict);
        fputs(" | ", f);
        if (c && c->kind == UG_CHANGE_NEW_FAIL) fputs("**new** ", f);
        md_text(f, x->figure);
        fprintf(f, " | %s | ", ug_report_used_text(x->used, "–", u));
        md_triage(f, r, x->case_id);
        fputs(" |\n", f);
    }
}

void ug_report_write_md(const ug_report *r, FILE *f)
{
    ug_report_index ix;
    ug_report_index_build(r, &ix); /* without memory: empty, the tables then fall back to messages */
    md_header(r, f);
    changes_md(r, &ix, f);
    groups_md(r, f);
    ops_md(r, f);
    top_failures_md(r, &ix, f);
    if (r->has_bench) {
        fputc('\n', f);
        ug_bench_write_md(&r->bench, f);
    }
    ug_report_index_free(&ix);
}
