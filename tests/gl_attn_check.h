/* gl_attn_check.h — helpers of the GreenLight attention tests (test_op_gqa_decode_attn,
 * test_op_incre_flash_attention_mla, test_op_sparse_flash_attention): run one spec on a
 * sim variant with every output element checked and the case kept, and an independent
 * long-double softmax(s)·V that the tests compare the oracle against.
 *
 * Static functions in a header so each test program stays one file and shares no state. */
#ifndef UG_GL_ATTN_CHECK_H
#define UG_GL_ATTN_CHECK_H
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "op_check.h" /* opc_run: a spec on a sim variant, every element checked */
#include "run/exec.h"


/* Independent reference: sum_j softmax(s)_j v[j*ldv + col], in long double. */
static long double gl_ref_softmax_pv(const long double *s, size_t n, const double *v, size_t ldv, size_t col)
{
    if (!n) return 0.0L;
    long double m = s[0], num = 0.0L, den = 0.0L;
    for (size_t j = 1; j < n; j++) m = s[j] > m ? s[j] : m;
    for (size_t j = 0; j < n; j++) {
        long double e = expl(s[j] - m);
        num += e * v[j * ldv + col];
        den += e;
    }
    return num / den;
}

/* Expects a case with an invalid param to be refused with a message naming it. */
static void gl_expect_bad_param(const char *spec, const char *param)
{
    ug_result r;
    ug_exec_detail d;
    int rc = opc_run(spec, "sim", &r, &d);
    CHECK(rc < 0 || r.outcome == UG_OUT_ERROR, "a spec with a bad %s ran: %s", param, ug_outcome_name(r.outcome));
    CHECK(strstr(r.message, param) != NULL, "message \"%s\" does not name %s", r.message, param);
    ug_exec_detail_free(&d);
}

#endif
