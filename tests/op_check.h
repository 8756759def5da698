/* op_check.h — helpers shared by the per-operator tests (tests/test_op_<op>.c): run one
 * case spec end to end with every element checked and keep its tensors, read them back,
 * and assert that a bad spec is refused with a message naming what is wrong.
 *
 * Per-op tests then only hold what is specific to their op: the independent naive
 * evaluation, the hand-computed values and the invariants. Include after check.h. */
#ifndef UG_OP_CHECK_H
#define UG_OP_CHECK_H
#include <string.h>

#include "run/exec.h"

/* Runs spec with sim variant `variant`, every output element checked by the oracle
 * (self-check on). Fills r and d (free d with ug_exec_detail_free). Returns
 * ug_exec_case's status, or -1 if the backend does not open. */
static inline int opc_run(const char *spec, const char *variant, ug_result *r, ug_exec_detail *d)
{
    ug_backend b;
    char err[256], bs[96];
    snprintf(bs, sizeof bs, "sim:%s", variant);
    if (ug_backend_open(&b, bs, err, sizeof err)) {
        fprintf(stderr, "backend %s: %s\n", bs, err);
        return -1;
    }
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    o.oracle.self_check = 1;
    o.keep = 1;
    int rc = ug_exec_case(spec, &b, &o, r, d);
    ug_backend_close(&b);
    return rc;
}

/* Element i of input `name` / of output o of a kept case, as an exact double. */
static inline double opc_in(const ug_exec_detail *d, const char *name, size_t i)
{
    const ug_tensor *t = ug_case_input(&d->c, name);
    return t ? ug_dtype_load(t->dtype, t->data, i) : 0.0 / 0.0;
}

static inline double opc_out(const ug_exec_detail *d, int o, size_t i)
{
    return ug_dtype_load(d->c.out[o].dtype, d->c.out[o].data, i);
}

/* A spec the op must refuse: ug_exec_case() < 0 or an ERROR outcome, and a message
 * holding `needle` (the param's name). */
static inline void opc_expect_refused(const char *spec, const char *needle)
{
    ug_backend b;
    char err[256];
    if (ug_backend_open(&b, "sim", err, sizeof err)) return;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    ug_result r;
    int rc = ug_exec_case(spec, &b, &o, &r, NULL);
    ug_backend_close(&b);
    CHECK(rc < 0 || r.outcome == UG_OUT_ERROR, "spec %s was not refused (outcome %s)", spec,
          ug_outcome_name(r.outcome));
    CHECK(strstr(r.message, needle) != NULL, "message \"%s\" does not name %s", r.message, needle);
}

#endif
