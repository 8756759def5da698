/* mutant_scan.c — `ulpgym ops show OP --mutants`: runs the op's default-plan cases with
 * every kernel variant and reports, per mutant, the share of plan cases that catch it and
 * which ones (the first few IDs, each triageable), so a test author sees what the plan
 * covers and what only the fuzzer reaches (beyond-plan mutants). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/mutant_scan.h"
#include "gen/plan.h"
#include "run/exec.h"

int ug_ops_print_mutant_scan(int op, FILE *f)
{
    const ug_op_def *d = ug_op_def_get(op);
    ug_plan p;
    char err[512];
    if (!d || ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s\n", d ? err : "op not implemented");
        return -2;
    }
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    ug_plan_filter(&p, ops, 0);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    fprintf(f, "  plan cases catching each kernel variant (%zu cases of the default plan):\n", p.n);
    for (int v = 0; ug_op_variants(d->op)[v].name; v++) {
        ug_backend b;
        char spec[96];
        snprintf(spec, sizeof spec, "sim:%s", ug_op_variants(d->op)[v].name);
        if (ug_backend_open(&b, spec, err, sizeof err)) continue;
        size_t caught = 0;
        char first[3][UG_ID_LEN + 1];
        for (size_t i = 0; i < p.n; i++) {
            ug_result r;
            ug_exec_case(p.cases[i].spec, &b, &o, &r, NULL);
            if (r.outcome != UG_OUT_PASS && caught < 3) snprintf(first[caught], sizeof first[0], "%s", r.case_id);
            caught += r.outcome != UG_OUT_PASS;
        }
        ug_backend_close(&b);
        fprintf(f, "    %-24s %4zu/%zu (%5.1f%%)%s", ug_op_variants(d->op)[v].name, caught, p.n,
                p.n ? 100.0 * (double)caught / (double)p.n : 0.0, v == 0 ? "  <- the correct kernel: must be 0" : "");
        for (size_t k = 0; k < caught && k < 3; k++) fprintf(f, "%s%s", k ? " " : "  e.g. ", first[k]);
        if (ug_op_variants(d->op)[v].beyond_plan) fprintf(f, "  (beyond the plan by design: see corpus/found/%s)", ug_op_name(op));
        fputc('\n', f);
    }
    ug_plan_free(&p);
    return 0;
}
