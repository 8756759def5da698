/* junit.c — the JUnit writer of report.h: one <testsuite> per op ("group.op") with the
 * run's timestamp, host and <properties> (plan, plan hash, git rev, backend, standard,
 * seed when set, the like-for-like run compared against), one <testcase> per case named
 * by its readable part and ended by its ID ("fp32 rows=3 cols=257 [00130a90f2f205f0]",
 * formats.h), so a CI server's "failing since" survives plan edits that leave the case
 * alone. Ops with a failure new against the like-for-like run come first, and within an op
 * its new failures; a new failure's message says so. The output validates against the
 * published Jenkins schemas (tests/fixtures/jenkins-junit-*.xsd, docs/REPORTS.md). */
#include <stdlib.h>
#include <string.h>

#include "core/paths.h"
#include "db/query_report.h"
#include "reports/formats.h"
#include "reports/report.h"
#include "reports/xml.h"

/* One case of the op whose suite is being gathered (copies: row text lives only during the callback). */
typedef struct {
    char *case_id, *dtype, *verdict, *message, *standard, *spec_json;
    double ms;
    int is_new;
} junit_case;

typedef struct {
    const ug_report *r;
    const ug_run_record *run; /* NULL when the run's row could not be read */
    ug_report_index ix;
    FILE *f;
    ug_db *db;
    unsigned char has_new[UG_OP_COUNT]; /* ops with a new failure: written first */
    int pass;                           /* the walk writing the ops whose has_new is this */
    int op;                             /* the op gathered, -1 none */
    junit_case *v;
    size_t n, cap;
    int oom;
} junit_state;

static void property(FILE *f, const char *name, const char *value)
{
    fprintf(f, "      <property name=\"%s\" value=\"", name);
    ug_xml_escape_clean(f, value);
    fprintf(f, "\"/>\n");
}

static void properties(junit_state *js, const char *standard)
{
    const ug_report *r = js->r;
    FILE *f = js->f;
    char num[32];
    fprintf(f, "    <properties>\n");
    property(f, "plan", r->plan);
    property(f, "plan_hash", r->plan_hash);
    property(f, "git_rev", js->run ? js->run->git_rev : r->git_rev); /* in full: the report keeps what fits */
    property(f, "backend", r->backend);
    property(f, "standard", standard);
    if (js->run && js->run->has_options && js->run->seed_set) {
        snprintf(num, sizeof num, "%lld", js->run->seed);
        property(f, "seed", num);
    }
    snprintf(num, sizeof num, "%ld", r->run_id);
    property(f, "run", num);
    if (r->compared_run) {
        snprintf(num, sizeof num, "%ld", r->compared_run);
        property(f, "like_for_like_run", num);
    }
    property(f, "ulpgym", ug_version_line());
    fprintf(f, "    </properties>\n");
}

static int junit_output(const ug_db_output_figures *o, void *ctx)
{
    FILE *f = ctx;
    fprintf(f, "output ");
    ug_xml_escape_clean(f, o->output);
    fprintf(f, ": %ld of %ld elements checked, max abs err %.6g, max rel err %.6g, max ulp %.6g%s\n", o->n_checked,
            o->n_total, o->max_abs, o->max_rel, o->max_ulp, o->nonfinite_mismatch ? ", NaN/Inf mismatches" : "");
    return 0;
}

/* What a change says first, in a message and a body ("" for a failure with no compared run). */
static const char *change_words(const junit_state *js, const junit_case *c, char *buf, size_t len)
{
    const ug_report_change *ch = ug_report_index_change(&js->ix, c->case_id);
    buf[0] = 0;
    if (ch && ch->kind == UG_CHANGE_NEW_FAIL)
        snprintf(buf, len, "NEW since run %ld (like for like: it was %s there): ", js->r->compared_run,
                 ch->verdict_a[0] ? ch->verdict_a : "not run");
    else if (ch && ch->kind == UG_CHANGE_STILL_FAILING)
        snprintf(buf, len, "still failing (also in run %ld): ", js->r->compared_run);
    return buf;
}

/* The body of a non-PASS testcase: what GitLab and Jenkins show (GitLab ignores the
 * message attribute): the change, the verdict, each output's figures, the thresholds
 * applied, the message and the command that triages it. */
static void junit_body(junit_state *js, const junit_case *c)
{
    FILE *f = js->f;
    char thresholds[4096], err[256], words[160];
    ug_xml_escape_clean(f, change_words(js, c, words, sizeof words));
    ug_xml_escape_clean(f, c->verdict);
    fprintf(f, " by ");
    ug_xml_escape_clean(f, c->standard);
    fprintf(f, " (primary standard)\n");
    ug_db_report_case_figures(js->db, js->r->run_id, c->case_id, c->standard, junit_output, f, thresholds,
                              sizeof thresholds, err, sizeof err);
    if (thresholds[0]) {
        fprintf(f, "thresholds: ");
        ug_xml_escape_clean(f, thresholds);
        fputc('\n', f);
    }
    if (c->message[0]) {
        fprintf(f, "message: ");
        ug_xml_escape_clean(f, c->message);
        fputc('\n', f);
    }
    char *line = ug_failure_id_ok(c->case_id) ? ug_report_triage_line(js->r, c->case_id) : NULL;
    fprintf(f, "triage: ");
    ug_xml_escape_clean(f, line ? line : "");
    fputc('\n', f);
    free(line);
}

static void junit_testcase(junit_state *js, const char *suite, const junit_case *c)
{
    FILE *f = js->f;
    char name[256], words[160];
    ug_report_case_name(c->dtype, c->spec_json, c->case_id, name, sizeof name);
    fprintf(f, "    <testcase classname=\"%s\" name=\"", suite);
    ug_xml_escape_clean(f, name);
    fprintf(f, "\" time=\"%.6f\"", c->ms / 1e3);
    if (strcmp(c->verdict, "PASS") == 0) {
        fprintf(f, "/>\n");
        return;
    }
    if (strcmp(c->verdict, "SKIP") == 0) { /* text only: the published Jenkins schema gives <skipped> no attributes */
        fprintf(f, ">\n      <skipped>");
        ug_xml_escape_clean(f, c->message);
        fprintf(f, "</skipped>\n    </testcase>\n");
        return;
    }
    const ug_failure *x = ug_report_index_failure(&js->ix, c->case_id);
    const char *tag = strcmp(c->verdict, "FAIL") == 0 ? "failure" : "error";
    fprintf(f, ">\n      <%s type=\"", tag);
    ug_xml_escape_clean(f, c->verdict);
    fprintf(f, "\" message=\"");
    ug_xml_escape_clean(f, change_words(js, c, words, sizeof words));
    ug_xml_escape_clean(f, x && x->figure[0] ? x->figure : c->message);
    fprintf(f, "\">");
    junit_body(js, c);
    fprintf(f, "</%s>\n    </testcase>\n", tag);
}

/* New failures first, then by case ID (the order the rows came in). */
static int by_new_then_id(const void *a, const void *b)
{
    const junit_case *x = a, *y = b;
    if (x->is_new != y->is_new) return x->is_new ? -1 : 1;
    return strcmp(x->case_id, y->case_id);
}

static void free_cases(junit_state *js)
{
    for (size_t i = 0; i < js->n; i++) {
        junit_case *c = &js->v[i];
        free(c->case_id), free(c->dtype), free(c->verdict), free(c->message), free(c->standard), free(c->spec_json);
    }
    js->n = 0;
}

/* Writes the gathered op's <testsuite>. */
static void flush_suite(junit_state *js)
{
    if (!js->n) return;
    FILE *f = js->f;
    const ug_report *r = js->r;
    long fail = 0, skip = 0, err = 0;
    double secs = 0;
    for (size_t i = 0; i < js->n; i++) {
        const char *v = js->v[i].verdict;
        fail += strcmp(v, "FAIL") == 0;
        skip += strcmp(v, "SKIP") == 0;
        err += strcmp(v, "FAIL") && strcmp(v, "SKIP") && strcmp(v, "PASS");
        secs += js->v[i].ms / 1e3;
    }
    qsort(js->v, js->n, sizeof *js->v, by_new_then_id);
    char suite[96], stamp[32];
    snprintf(suite, sizeof suite, "%s.%s", ug_group_name(ug_op_group(js->op)), ug_op_name(js->op));
    snprintf(stamp, sizeof stamp, "%.19s", r->started); /* ISO 8601 in UTC, without the Z as Ant writes it */
    fprintf(f,
            "  <testsuite name=\"%s\" tests=\"%zu\" failures=\"%ld\" errors=\"%ld\" skipped=\"%ld\" time=\"%.3f\" "
            "timestamp=\"",
            suite, js->n, fail, err, skip, secs);
    ug_xml_escape_clean(f, stamp);
    fprintf(f, "\" hostname=\"");
    const char *host = js->run ? js->run->host : r->host;
    ug_xml_escape_clean(f, host[0] ? host : "unknown");
    fprintf(f, "\">\n");
    properties(js, js->v[0].standard);
    for (size_t i = 0; i < js->n; i++) junit_testcase(js, suite, &js->v[i]);
    fprintf(f, "  </testsuite>\n");
    free_cases(js);
}

static char *dup(const char *s) { return strdup(s ? s : ""); }

/* Gathers one case; a new op writes the previous op's suite first. */
static int junit_row(const ug_db_case_row *row, void *ctx)
{
    junit_state *js = ctx;
    int op = ug_op_find(row->op);
    if (op < 0 || js->has_new[op] != js->pass) return 0;
    if (op != js->op) flush_suite(js);
    js->op = op;
    if (js->n == js->cap) {
        size_t cap = js->cap ? 2 * js->cap : 256;
        junit_case *v = realloc(js->v, cap * sizeof *v);
        if (!v) return js->oom = 1;
        js->v = v, js->cap = cap;
    }
    const ug_report_change *ch = ug_report_index_change(&js->ix, row->case_id);
    junit_case c = {
        dup(row->case_id),          dup(row->dtype),     dup(row->verdict), dup(row->message),
        dup(row->primary_standard), dup(row->spec_json), row->ms,           ch && ch->kind == UG_CHANGE_NEW_FAIL};
    js->v[js->n++] = c;
    if (!c.case_id || !c.dtype || !c.verdict || !c.message || !c.standard || !c.spec_json) return js->oom = 1;
    return 0;
}

int ug_report_write_junit(ug_db *db, const ug_report *r, FILE *f, char *err, size_t errlen)
{
    ug_run_record run;
    junit_state js = {.r = r, .f = f, .db = db, .op = -1};
    js.run = ug_db_run_get(db, r->run_id, &run, err, errlen) == 0 ? &run : NULL;
    ug_report_index_build(r, &js.ix);
    for (size_t i = 0; i < r->n_changes; i++)
        if (r->changes[i].kind == UG_CHANGE_NEW_FAIL && r->changes[i].op >= 0) js.has_new[r->changes[i].op] = 1;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"ulpgym run %ld\" tests=\"%ld\" failures=\"%ld\" errors=\"%ld\" time=\"%.3f\">\n",
            r->run_id, r->total.cases, r->total.fail, r->total.other - r->total.skip,
            r->seconds_kernel + r->seconds_oracle);
    int rc = 0;
    for (js.pass = 1; js.pass >= 0 && !rc; js.pass--) { /* the ops with a new failure, then the others */
        rc = ug_db_report_cases(db, r->run_id, junit_row, &js, err, errlen);
        if (!rc) flush_suite(&js);
        js.op = -1;
    }
    if (js.oom) snprintf(err, errlen, "out of memory writing the JUnit report");
    free_cases(&js);
    free(js.v);
    ug_report_index_free(&js.ix);
    if (rc) return -1;
    fprintf(f, "</testsuites>\n");
    return 0;
}
