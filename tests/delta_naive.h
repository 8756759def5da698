/* delta_naive.h — an independent double-precision gated delta rule for the tests of
 * gated_delta_rule and chunked_gated_delta_rule, and a runner that keeps a case's oracle.
 *
 * It evaluates the matrix form as docs/OPERATORS.md writes it, S_t = e^g S_{t-1}(I - beta k k^T) +
 * beta v k^T (S (I - beta k k^T) formed first), on the whole state, unlike the oracle's
 * row form; agreement to ~1e-9 is a differential check of the oracle's mathematics. With
 * chunked_gated_delta_rule's seqlens it runs each sequence on its own, from its own h0
 * block to its own ht block (h0, ht [B*Hv, Dv, Dk]), as the reference's golden loops over
 * act_seq_len. */
#ifndef UG_TEST_DELTA_NAIVE_H
#define UG_TEST_DELTA_NAIVE_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "run/exec.h"

/* o[T*Hv*Dv] and ht[B*Hv*Dv*Dk] in double from case c's inputs; scale as given. */
static void delta_naive(const ug_case *c, double scale, double *o, double *ht)
{
    const long *lens = NULL;
    size_t seqs = 1;
    if (ug_p_has(&c->params, "seqlens")) {
        seqs = ug_p_list(&c->params, "seqlens", &lens);
        if (seqs == 1 && lens[0] == 0) lens = NULL;
    }
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    const ug_tensor *g = ug_case_input(c, "g"), *b = ug_case_input(c, "beta"), *h0 = ug_case_input(c, "h0");
    size_t T = (size_t)q->shape[0], hqk = (size_t)q->shape[1], dk = (size_t)q->shape[2];
    size_t hv = (size_t)v->shape[1], dv = (size_t)v->shape[2];
    double *S = malloc(dv * dk * sizeof *S), *P = malloc(dk * dk * sizeof *P), *N = malloc(dv * dk * sizeof *N);
    for (size_t sq = 0, first = 0; sq < seqs; sq++) {
        size_t end = first + (lens ? (size_t)lens[sq] : T);
        for (size_t h = 0; h < hv; h++) {
            size_t hk = h / (hv / hqk), blk = (sq * hv + h) * dv * dk; /* sequence sq's h0 and ht block */
            memcpy(S, h0->values + blk, dv * dk * sizeof *S);
            for (size_t t = first; t < end; t++) {
                const double *kt = k->values + (t * hqk + hk) * dk, *qt = q->values + (t * hqk + hk) * dk;
                double a = exp(g->values[t * hv + h]), beta = b->values[t * hv + h];
                for (size_t x = 0; x < dk; x++) /* P = I - beta k k^T */
                    for (size_t y = 0; y < dk; y++) P[x * dk + y] = (x == y) - beta * kt[x] * kt[y];
                for (size_t i = 0; i < dv; i++)
                    for (size_t y = 0; y < dk; y++) {
                        double s = 0.0;
                        for (size_t x = 0; x < dk; x++) s += S[i * dk + x] * P[x * dk + y];
                        N[i * dk + y] = a * s + beta * v->values[(t * hv + h) * dv + i] * kt[y];
                    }
                memcpy(S, N, dv * dk * sizeof *S);
                for (size_t i = 0; i < dv; i++) {
                    double s = 0.0;
                    for (size_t y = 0; y < dk; y++) s += S[i * dk + y] * qt[y];
                    o[(t * hv + h) * dv + i] = s * scale;
                }
            }
            memcpy(ht + blk, S, dv * dk * sizeof *S);
        }
        first = end;
    }
    free(S);
    free(P);
    free(N);
}

/* Runs spec on the sim backend variant with every element checked and the oracle kept. */
static int delta_run(const char *spec, const char *variant, ug_result *r, ug_exec_detail *d)
{
    ug_backend b;
    char err[256], name[64];
    snprintf(name, sizeof name, "sim:%s", variant);
    if (ug_backend_open(&b, name, err, sizeof err)) return -1;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    o.keep = 1;
    memset(d, 0, sizeof *d);
    int rc = ug_exec_case(spec, &b, &o, r, d);
    ug_backend_close(&b);
    return rc;
}

/* Checks the kept oracle values of outputs o (0) and ht (1) against delta_naive. */
static void delta_check_oracle(const ug_exec_detail *d, double scale, double tol)
{
    const ug_case *c = &d->c;
    double *o = calloc(c->out[0].numel, sizeof *o), *ht = calloc(c->out[1].numel, sizeof *ht);
    delta_naive(c, scale, o, ht);
    double *ref[2] = {o, ht};
    for (int k = 0; k < 2; k++) {
        CHECK(d->oracle.sel.n[k] == c->out[k].numel, "output %d: %zu of %zu elements checked", k, d->oracle.sel.n[k],
              c->out[k].numel);
        double worst = 0.0;
        for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
            double x = ref[k][d->oracle.sel.idx[k][i]], err = fabs(d->oracle.gstar[k][i] - x) / (1.0 + fabs(x));
            if (err > worst) worst = err;
        }
        CHECK(worst < tol, "output %d: oracle differs from the naive double reference by %g", k, worst);
    }
    free(o);
    free(ht);
}

#endif
