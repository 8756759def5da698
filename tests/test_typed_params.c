/* test_typed_params.c — each op's typed params (op_params.h, generated from its declaration
 * by cmake/op_params.cmake; core/opdecl.h "Typed params") hold what the by-name reads give,
 * on every case of the default plan: every int, fp32/number, enum (choice and text), list
 * (values and length) and derived size of every op, compared field by field. Also: an op
 * whose layout is missing, or a field the declaration lacks, would abort the parse, so the
 * test covers every op the build implements; the UG_P of another op aborts (checked in a
 * child). That a misspelt field fails the build is checked by tests/test_typed_params_build.sh. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/ops.h"
#include "core/spec.h"
#include "gen/plan.h"
#include "op_params.h"

static void compare_fields(const ug_params *p, const char *id)
{
    const ug_typed_layout *l = p->layout;
    for (const ug_typed_field *f = l->fields; f->name; f++) {
        const unsigned char *at = p->typed + f->offset;
        if (f->kind == UG_TF_INT || f->kind == UG_TF_DERIVED) {
            long v;
            memcpy(&v, at, sizeof v);
            CHECK(v == ug_p_int(p, f->name), "%s %s.%s: typed %ld, by name %ld", id, l->op, f->name, v,
                  ug_p_int(p, f->name));
        } else if (f->kind == UG_TF_REAL) {
            double v;
            memcpy(&v, at, sizeof v);
            CHECK(memcmp(&(double){ug_p_num(p, f->name)}, &v, sizeof v) == 0, "%s %s.%s: typed %.17g, by name %.17g",
                  id, l->op, f->name, v, ug_p_num(p, f->name));
        } else if (f->kind == UG_TF_LIST) {
            ug_plist v;
            memcpy(&v, at, sizeof v);
            const long *vals;
            size_t n = ug_p_list(p, f->name, &vals);
            CHECK(v.n == n && v.v == vals, "%s %s.%s: typed list of %zu, by name %zu", id, l->op, f->name, v.n, n);
        } else {
            int choice;
            const char *text;
            memcpy(&choice, at, sizeof choice);
            memcpy(&text, p->typed + f->offset_name, sizeof text);
            const char *by_name = ug_p_str(p, f->name);
            CHECK(text == by_name, "%s %s.%s: typed text %s, by name %s", id, l->op, f->name, text, by_name);
            int k = 0; /* the choice's position in the declared list */
            for (int i = 0; p->decl->params[i].name; i++)
                if (strcmp(p->decl->params[i].name, f->name) == 0) {
                    const char *c = p->decl->params[i].choices;
                    for (size_t len = strlen(by_name); strncmp(c, by_name, len) || (c[len] && c[len] != '|');) {
                        c = strchr(c, '|') + 1;
                        k++;
                    }
                    break;
                }
            CHECK(choice == k, "%s %s.%s: typed choice %d, declared position %d", id, l->op, f->name, choice, k);
        }
    }
}

int main(void)
{
    ug_plan plan;
    char err[512];
    if (ug_plan_load(ug_plan_default_path(), -1, &plan, err, sizeof err)) {
        fprintf(stderr, "plan: %s\n", err);
        return 1;
    }
    int seen[UG_OP_COUNT] = {0};
    char *page_attention_spec = NULL; /* for the abort check below */
    for (size_t i = 0; i < plan.n; i++) {
        ug_spec s;
        if (ug_spec_parse(plan.cases[i].spec, &s, err, sizeof err)) {
            CHECK(0, "%s: %s", plan.cases[i].id, err);
            continue;
        }
        const ug_op_def *d = ug_op_def_get(s.op);
        ug_params p;
        if (s.op == UG_OP_PAGE_ATTENTION && !page_attention_spec) page_attention_spec = strdup(plan.cases[i].spec);
        if (d && ug_params_parse(&d->decl, s.params, &p, err, sizeof err) == 0) {
            CHECK(p.layout && strcmp(p.layout->op, d->decl.op) == 0, "%s: no typed layout for %s", s.id, d->decl.op);
            if (p.layout) compare_fields(&p, s.id);
            seen[s.op]++;
            ug_params_free(&p);
        } else if (d) {
            CHECK(0, "%s: %s", s.id, err);
        }
        ug_spec_free(&s);
    }
    int ops = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) ops += seen[op] > 0;
    CHECK(ops == UG_OP_COUNT, "%d of %d ops have plan cases compared", ops, UG_OP_COUNT);
    printf("typed params equal the by-name reads on %zu plan cases of %d ops\n", plan.n, ops);
    ug_plan_free(&plan);

    pid_t pid = fork(); /* the typed params of another op: a programming error that aborts */
    if (pid == 0) {
        close(2);
        const ug_op_def *d = ug_op_def_get(UG_OP_PAGE_ATTENTION);
        ug_spec s;
        ug_params p;
        if (!d || !page_attention_spec || ug_spec_parse(page_attention_spec, &s, err, sizeof err) ||
            ug_params_parse(&d->decl, s.params, &p, err, sizeof err))
            _exit(3);
        (void)UG_P(glm_attention, &p)->heads_q;
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "UG_P of another op did not abort (status %d)", st);
    free(page_attention_spec);
    return check_done();
}
