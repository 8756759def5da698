/* cmd_ops.c — `ulpgym ops`: the operator catalogue and each op's contract.
 *
 * `ops show OP --json` is what a plugin author codes against (run/op_contract.c builds it,
 * from the same declaration the case builder allocates from, so it cannot drift from the
 * code); `ops show OP` prints the same as text. Every key is documented in docs/PLUGINS.md. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "oracles/verdict.h"
#include "run/mutant_scan.h"
#include "run/op_contract.h"

static const char *cmp_name(ug_cmp c) { return ug_cmp_name((int)c); }

static int n_variants(const ug_op_def *d)
{
    int n = 0;
    while (ug_op_variants(d->op)[n].name) n++;
    return n;
}

static int print_json(cJSON *j)
{
    char *s = cJSON_Print(j);
    puts(s ? s : "null");
    free(s);
    cJSON_Delete(j);
    return 0;
}

/* The declaration as text: params (type, default, range), derived sizes, tensors. */
static void print_decl(const ug_op_def *d)
{
    cJSON *j = ug_decl_json(&d->decl, d->dtypes);
    printf("  params (missing ones get their default, written into params_json):\n");
    for (const cJSON *p = cJSON_GetObjectItem(j, "params")->child; p; p = p->next) {
        const cJSON *def = cJSON_GetObjectItem(p, "default"), *ch = cJSON_GetObjectItem(p, "choices");
        const cJSON *lo = cJSON_GetObjectItem(p, "min"), *hi = cJSON_GetObjectItem(p, "max");
        char range[96] = "";
        if (ch) snprintf(range, sizeof range, " in %s", ch->valuestring);
        else if (lo || hi) snprintf(range, sizeof range, " in [%.17g, %.17g]", lo ? lo->valuedouble : -INFINITY,
                                    hi ? hi->valuedouble : INFINITY);
        printf("    %-12s %-9s default %s%s: %s\n", cJSON_GetObjectItem(p, "name")->valuestring,
               cJSON_GetObjectItem(p, "type")->valuestring, def ? def->valuestring : "(required)", range,
               cJSON_GetObjectItem(p, "doc") ? cJSON_GetObjectItem(p, "doc")->valuestring : "");
    }
    for (const cJSON *x = cJSON_GetObjectItem(j, "derived")->child; x; x = x->next)
        printf("    derived %-12s = %s\n", x->string, cJSON_GetObjectItem(x, "formula")->valuestring);
    printf("  tensors (C order; shapes as formulas of the params; dtype per case dtype):\n");
    for (const cJSON *t = cJSON_GetObjectItem(j, "tensors")->child; t; t = t->next) {
        char shape[256] = "[", dts[128] = "";
        size_t n = 1, m = 0;
        for (const cJSON *x = cJSON_GetObjectItem(t, "shape")->child; x && n < sizeof shape; x = x->next)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%s", x->prev && x != cJSON_GetObjectItem(t, "shape")->child ? ", " : "", x->valuestring);
        if (n < sizeof shape) snprintf(shape + n, sizeof shape - n, "]");
        for (const cJSON *x = cJSON_GetObjectItem(t, "dtype")->child; x && m < sizeof dts; x = x->next)
            m += (size_t)snprintf(dts + m, sizeof dts - m, "%s%s->%s", m ? " " : "", x->string, x->valuestring);
        const cJSON *when = cJSON_GetObjectItem(t, "when"), *doc = cJSON_GetObjectItem(t, "doc");
        printf("    %-6s %-14s %-34s %s%s%s\n", cJSON_GetObjectItem(t, "role")->valuestring,
               cJSON_GetObjectItem(t, "name")->valuestring, shape, dts, when ? "  when " : "", when ? when->valuestring : "");
        if (cJSON_IsTrue(cJSON_GetObjectItem(t, "optional"))) /* its math and rounding: the contract of an extra */
            printf("           optional (judged when the kernel writes it, else NA: docs/PLUGINS.md): %s\n",
                   doc ? doc->valuestring : "");
    }
    cJSON_Delete(j);
    if (d->semantics) printf("  semantics: %s\n", d->semantics);
}

/* `ops show OP --mutants`: per kernel variant, the share of the op's default-plan cases
 * that catch it and the first few catching IDs (each triageable), so a test author sees
 * what the plan covers and what only the fuzzer reaches (beyond-plan mutants). ERROR and
 * SKIP outcomes are not catches (run/mutant_scan.h); their counts follow when non-zero.
 * -2 if the op or the plan is unusable. */
static int print_mutant_scan(int op, FILE *f)
{
    ug_plan p;
    char err[512];
    if (ug_mutant_scan_plan(op, &p, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s\n", err);
        return -2;
    }
    int n;
    ug_variant_scan *s = ug_mutant_scan(op, &p, NULL, &n);
    fprintf(f, "  plan cases catching each kernel variant (%zu cases of the default plan), under the primary "
               "standard (%s) and under certified:\n",
            p.n, ug_standard_name(ug_op_def_get(op)->primary));
    for (int v = 0; v < n; v++) {
        if (s[v].unavailable) continue;
        fprintf(f, "    %-24s %4zu/%zu (%5.1f%%)  certified %4zu/%zu (%5.1f%%)%s", s[v].variant, s[v].caught, p.n,
                p.n ? 100.0 * (double)s[v].caught / (double)p.n : 0.0, s[v].caught_certified, p.n,
                p.n ? 100.0 * (double)s[v].caught_certified / (double)p.n : 0.0,
                v == 0 ? "  <- the correct kernel: must be 0 and 0" : s[v].legal ? "  <- legal: must be 0 and 0" : "");
        for (size_t k = 0; k < s[v].n_first; k++) fprintf(f, "%s%s", k ? " " : "  e.g. ", s[v].first[k]);
        if (s[v].beyond_plan) fprintf(f, "  (beyond the plan by design: see corpus/found/%s)", ug_op_name(op));
        fputc('\n', f);
        if (s[v].errors || s[v].skips || s[v].other)
            fprintf(f, "      not counted as caught: %zu ERROR, %zu SKIP, %zu other; first: %s\n", s[v].errors,
                    s[v].skips, s[v].other, s[v].message);
    }
    free(s);
    ug_plan_free(&p);
    return 0;
}

static int show(const char *name, int json, int mutants)
{
    int op = ug_op_find(name);
    if (op < 0) return ug_cli_fail("unknown op \"%s\" (see `ulpgym ops`)", name);
    if (json) return print_json(ug_op_contract_json(op, 1));
    const ug_op_def *d = ug_op_def_get(op);
    printf("%s  (%s)\n", ug_op_name(op), ug_group_name(ug_op_group(op)));
    if (!d) {
        printf("  status: planned — not implemented yet; see docs/OPERATORS.md for its math\n");
        return 0;
    }
    char digest[17];
    if (ug_op_contract_digest(op, digest)) snprintf(digest, sizeof digest, "?");
    printf("  %s\n  dtypes: %s\n  primary standard: %s\n", d->summary, d->dtypes, ug_standard_name(d->primary));
    printf("  contract: %s (a plugin names it in ulpgym_implements; docs/PLUGINS.md)\n", digest);
    print_decl(d);
    printf("  outputs:\n");
    for (int i = 0; i < d->n_outputs; i++) {
        const ug_output_rule *o = &d->outputs[i];
        printf("    %-8s %-14s pypto atol %g rtol %g budget %g\n", o->name, cmp_name(o->cmp), o->pypto_atol,
               o->pypto_rtol, o->pypto_budget);
        if (o->source) printf("    %-8s %-14s why: %s\n", "", "", o->source);
        if (o->has_reference) {
            printf("    %-8s %-14s reference atol %g rtol %g budget %g (%s)\n", "", "", o->reference_atol,
                   o->reference_rtol, o->reference_budget, o->reference_source);
            if (o->reference_golden) /* within the rule of the exact value or of this golden passes */
                printf("    %-8s %-14s reference golden (an element passes within the rule of it or of the exact "
                       "value): %s\n", "", "", o->reference_golden);
        } else
            printf("    %-8s %-14s reference: none (no reference test judges this output)\n", "", "");
    }
    printf("  kernel variants (--kernel-variant NAME):\n");
    for (int i = 0; ug_op_variants(d->op)[i].name; i++) printf("    %-18s %s\n", ug_op_variants(d->op)[i].name, ug_op_variants(d->op)[i].desc);
    return mutants && print_mutant_scan(op, stdout) ? UG_EXIT_USAGE : 0;
}

static int ug_cmd_ops(int argc, char **argv)
{
    int json = 0, mutants = 0;
    ug_cli_filter f = {0};
    const char *show_op = NULL;
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if (ug_cli_flag(argv, i, "--json")) json = 1;
        else if (ug_cli_flag(argv, i, "--mutants")) mutants = 1;
        else if (strcmp(argv[i], "show") == 0 && i + 1 < argc) show_op = argv[++i];
        else return ug_cli_fail("ops: unexpected argument \"%s\" (see ulpgym ops -h)", argv[i]);
    }
    if (show_op) return show(show_op, json, mutants);
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json) printf("%-11s %-38s %-12s %-16s %-10s %s\n", "group", "op", "status", "dtypes", "primary", "variants");
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (f.groups && !(f.groups >> ug_op_group(op) & 1u)) continue;
        if (f.any_op && !f.ops[op]) continue;
        const ug_op_def *d = ug_op_def_get(op);
        if (json) {
            cJSON_AddItemToArray(arr, ug_op_contract_json(op, 0));
            continue;
        }
        printf("%-11s %-38s %-12s %-16s %-10s %d\n", ug_group_name(ug_op_group(op)), ug_op_name(op),
               d ? "implemented" : "planned", d ? d->dtypes : "-", d ? ug_standard_name(d->primary) : "-",
               d ? n_variants(d) : 0);
    }
    return json ? print_json(arr) : 0;
}

const ug_command ug_command_ops = {
    "ops", ug_cmd_ops, "list the 34 operators, or show one",
     "usage: ulpgym ops [--group G] [--json]\n"
     "       ulpgym ops show OP [--json] [--mutants]\n"
     "  show: the math, dtypes, tensors and params (the plugin contract), output rules,\n"
     "  primary standard and kernel variants (mutants).\n"
     "  --mutants  also run the op's plan cases with every variant and report which catch\n"
     "             each mutant (share and example case IDs)\n"};
