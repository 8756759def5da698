/* chunked_gated_delta_rule.c — sim kernel and planted-bug mutants of the chunked (WY)
 * gated delta rule, the prefill form. The same mathematics as gated_delta_rule,
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale,
 * computed chunk by chunk (L tokens, the last chunk T mod L when L does not divide T):
 *   G_r = sum_{c<=r} g_c                 cumulative log-decay within the chunk (fp32)
 *   A[r][c] = beta_r (k_r.k_c) e^{G_r-G_c}   for c < r (strictly lower)
 *   Tinv = (I + A)^{-1}                  forward substitution, unit diagonal
 *   W = Tinv diag(beta e^G) K,  U~ = Tinv diag(beta) V      (the WY representation)
 *   U = U~ - W S0^T                      the chunk's corrected values, S0 the carried state
 *   o_r = scale (e^{G_r} S0 q_r + sum_{c<=r} e^{G_r-G_c} (q_r.k_c) U_c)
 *   S  = e^{G_last} S0 + sum_c e^{G_last-G_c} U_c k_c^T    (carried to the next chunk)
 * (A here is the negative of the (I - A) convention: the same inverse.) Everything is
 * fp32, as a prefill kernel's vector and cube units hold it: inputs, the cumulative sum,
 * expf, every matmul accumulated in fp32 in index order. A NaN or +-inf input loads as
 * NaN (delta_rule_io.c), so it poisons exactly what the recurrent definition says.
 *
 * Varlen (params.seqlens, the reference's act_seq_len): per value head, the sequences in
 * order, each from its own h0 rows, chunked from its own first token (its tail chunk its
 * length mod L), its final state stored to its own ht rows.
 *
 * Mutants: mut_double_decay, mut_drop_tail, mut_diag_in_a, mut_state_across_seqs,
 * mut_chunk_past_seq_end, mut_first_chunk_no_decay (the gate g read as 0 for every token of
 * each sequence's first chunk: no decay there).
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the declared device model rounds every product and sum to fp32 and lets every reduction
 * run in any order, nothing narrower than fp32): legal_fma, every dot product and every
 * accumulation (forward substitution, Tinv application, o, the state update) as fused
 * multiply-adds in index order; legal_lanes16, every Dk dot product in 16 fp32 lanes
 * folded by a pairwise tree (a vector unit's reduction), the rest as the sim; legal_reverse,
 * every dot product and every accumulation in reverse index order (the first term of o and
 * of the state update, e^{G_r} Q_r.s_i and e^{G_last} s_i, added last). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/delta_rule/delta_rule_io.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

/* Working arrays of one chunk (L tokens at most). */
typedef struct {
    size_t L, dk, dv;
    ug_variant_code how; /* a legal variant's order (any other value: the sim's arithmetic) */
    float *G, *beta, *bg, *Q, *K, *V, *A, *Tinv, *W, *U, *P, *Kd, *o;
} chunk_ws;

static void ws_free(chunk_ws *w) { free(w->G); }

static int ws_alloc(chunk_ws *w, size_t L, size_t dk, size_t dv)
{
    size_t n = 3 * L + 4 * L * dk + 3 * L * dv + 3 * L * L; /* G beta bg; Q K W Kd; V U o; A Tinv P */
    w->L = L;
    w->dk = dk;
    w->dv = dv;
    w->G = calloc(n, sizeof(float));
    if (!w->G) return -1;
    w->beta = w->G + L;
    w->bg = w->beta + L;
    w->Q = w->bg + L;
    w->K = w->Q + L * dk;
    w->V = w->K + L * dk;
    w->A = w->V + L * dv;
    w->Tinv = w->A + L * L;
    w->P = w->Tinv + L * L;
    w->W = w->P + L * L;
    w->U = w->W + L * dk;
    w->Kd = w->U + L * dv;
    w->o = w->Kd + L * dk;
    return 0;
}

static float dot32(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t j = 0; j < n; j++) s += a[j] * b[j]; /* rounds: fp32 mul and add */
    return s;
}

/* s + a*b as the variant accumulates it: fp32 mul and add (the sim's), or one fmaf. */
static float mac(ug_variant_code how, float s, float a, float b)
{
    return how == UG_VAR_LEGAL_FMA ? fmaf(a, b, s) /* rounds: fp32, once */
                                   : s + a * b;    /* rounds: fp32 mul and add */
}

/* The i-th of n summation indices from lo: lo + i, or from the top with UG_VAR_LEGAL_REVERSE. */
static size_t ord(ug_variant_code how, size_t lo, size_t n, size_t i)
{
    return how == UG_VAR_LEGAL_REVERSE ? lo + n - 1 - i : lo + i;
}

/* a.b over n as the variant reduces it (the sim: dot32). */
static float dotv(ug_variant_code how, const float *a, const float *b, size_t n)
{
    if (how == UG_VAR_LEGAL_FMA || how == UG_VAR_LEGAL_REVERSE) {
        float s = 0.0f;
        for (size_t i = 0; i < n; i++) {
            size_t j = ord(how, 0, n, i);
            s = mac(how, s, a[j], b[j]);
        }
        return s;
    }
    if (how == UG_VAR_LEGAL_LANES16) return ug_lanes_dot_f32(a, b, n); /* rounds: fp32, 16 lanes folded pairwise */
    return dot32(a, b, n);
}

/* A (strictly lower; with the bug, the diagonal too) and Tinv = (I + A)^{-1}. */
static void wy_inverse(chunk_ws *w, size_t n, ug_variant_code bug)
{
    size_t L = w->L;
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < n; c++) {
            int in = c < r || (bug == UG_VAR_MUT_DIAG_IN_A && c == r); /* bug: tril instead of strict tril */
            w->A[r * L + c] = in ? w->beta[r] * dotv(w->how, w->K + r * w->dk, w->K + c * w->dk, w->dk) *
                                       expf(w->G[r] - w->G[c]) /* rounds: fp32 */
                                 : 0.0f;
        }
    for (size_t r = 0; r < n; r++) /* forward substitution, row by row */
        for (size_t c = 0; c <= r; c++) {
            float s = r == c ? 1.0f : 0.0f;
            if (w->how == UG_VAR_LEGAL_FMA ||
                w->how == UG_VAR_LEGAL_REVERSE) { /* legal: fmaf, or m from r-1 down to c */
                for (size_t i = 0; i < r - c; i++) {
                    size_t m = ord(w->how, c, r - c, i);
                    s = mac(w->how, s, -w->A[r * L + m], w->Tinv[m * L + c]);
                }
            } else
                for (size_t m = c; m < r; m++) s -= w->A[r * L + m] * w->Tinv[m * L + c]; /* rounds: fp32 */
            w->Tinv[r * L + c] = s / (1.0f + w->A[r * L + r]);                            /* exact unless bug */
        }
}

/* dst[r][:] = sum_{c<=r} Tinv[r][c] * f[c] * src[c][:]  (row width d). */
static void tinv_apply(const chunk_ws *w, size_t n, const float *f, const float *src, size_t d, float *dst)
{
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < d; j++) {
            float s = 0.0f;
            if (w->how == UG_VAR_LEGAL_FMA || w->how == UG_VAR_LEGAL_REVERSE) /* legal: fmaf, or c from r down to 0 */
                for (size_t i = 0; i <= r; i++) {
                    size_t c = ord(w->how, 0, r + 1, i);
                    s = mac(w->how, s, w->Tinv[r * w->L + c], f[c] * src[c * d + j]); /* rounds: fp32 */
                }
            else
                for (size_t c = 0; c <= r; c++) s += w->Tinv[r * w->L + c] * (f[c] * src[c * d + j]); /* rounds: fp32 */
            dst[r * d + j] = s;
        }
}

/* One chunk of n tokens on the carried state S [dv][dk]: writes w->o [n][dv] and updates S. */
static void chunk_step(chunk_ws *w, size_t n, float *S, ug_variant_code bug)
{
    size_t L = w->L, dk = w->dk, dv = w->dv;
    for (size_t r = 0; r < n; r++) w->bg[r] = w->beta[r] * expf(w->G[r]); /* rounds: fp32 */
    wy_inverse(w, n, bug);
    tinv_apply(w, n, w->bg, w->K, dk, w->W);
    tinv_apply(w, n, w->beta, w->V, dv, w->U);
    for (size_t r = 0; r < n; r++) /* U = U~ - W S0^T */
        for (size_t i = 0; i < dv; i++)
            w->U[r * dv + i] -= dotv(w->how, w->W + r * dk, S + i * dk, dk); /* rounds: fp32 */
    for (size_t r = 0; r < n; r++) /* P[r][c] = (q_r.k_c) e^{G_r-G_c}, causal with the diagonal */
        for (size_t c = 0; c <= r; c++)
            w->P[r * L + c] =
                dotv(w->how, w->Q + r * dk, w->K + c * dk, dk) * expf(w->G[r] - w->G[c]); /* rounds: fp32 */
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < dv; i++) {
            float s = expf(w->G[r]) * dotv(w->how, w->Q + r * dk, S + i * dk, dk); /* rounds: fp32 */
            if (w->how == UG_VAR_LEGAL_FMA)                                        /* legal: fmaf */
                for (size_t c = 0; c <= r; c++) s = mac(w->how, s, w->P[r * L + c], w->U[c * dv + i]);
            else if (w->how == UG_VAR_LEGAL_REVERSE) { /* legal: c from r down to 0, the state term added last */
                float t = 0.0f;
                for (size_t c = r + 1; c-- > 0;) t += w->P[r * L + c] * w->U[c * dv + i]; /* rounds: fp32 */
                s = t + s;                                                                /* rounds: fp32 */
            } else
                for (size_t c = 0; c <= r; c++) s += w->P[r * L + c] * w->U[c * dv + i]; /* rounds: fp32 */
            w->o[r * dv + i] = s;
        }
    float gl = expf(w->G[n - 1]); /* rounds: fp32 */
    for (size_t c = 0; c < n; c++)
        for (size_t j = 0; j < dk; j++) w->Kd[c * dk + j] = expf(w->G[n - 1] - w->G[c]) * w->K[c * dk + j];
    for (size_t i = 0; i < dv; i++)
        for (size_t j = 0; j < dk; j++) {
            float s = gl * S[i * dk + j];   /* rounds: fp32 */
            if (w->how == UG_VAR_LEGAL_FMA) /* legal: fmaf */
                for (size_t c = 0; c < n; c++) s = mac(w->how, s, w->U[c * dv + i], w->Kd[c * dk + j]);
            else if (w->how == UG_VAR_LEGAL_REVERSE) { /* legal: c from n-1 down to 0, the decayed state added last */
                float t = 0.0f;
                for (size_t c = n; c-- > 0;) t += w->U[c * dv + i] * w->Kd[c * dk + j]; /* rounds: fp32 */
                s = t + s;                                                              /* rounds: fp32 */
            } else
                for (size_t c = 0; c < n; c++) s += w->U[c * dv + i] * w->Kd[c * dk + j]; /* rounds: fp32 */
            S[i * dk + j] = s;
        }
}

/* Loads chunk [t0, t0+n) of value head h (qk head hk) into w; q pre-scaled. */
static void chunk_load(chunk_ws *w, const ug_delta_io *io, size_t h, size_t hk, size_t t0, size_t n, int no_decay)
{
    size_t dk = io->dk, dv = io->dv;
    for (size_t r = 0; r < n; r++) {
        size_t t = t0 + r, th = t * io->hv + h, tk = (t * io->hqk + hk) * dk;
        float g;
        ug_delta_io_load(io->q, tk, dk, w->Q + r * dk);
        ug_delta_io_load(io->k, tk, dk, w->K + r * dk);
        ug_delta_io_qk_norm(io, w->Q + r * dk, dk); /* qk_norm l2 only, before the scale */
        ug_delta_io_qk_norm(io, w->K + r * dk, dk);
        ug_delta_io_load(io->v, th * dv, dv, w->V + r * dv);
        ug_delta_io_load(io->g, th, 1, &g);
        if (no_decay) g = 0.0f; /* bug (mut_first_chunk_no_decay): the gate is not applied */
        ug_delta_io_load(io->beta, th, 1, w->beta + r);
        w->G[r] = r ? w->G[r - 1] + g : g;                             /* rounds: fp32 cumulative sum */
        for (size_t j = 0; j < dk; j++) w->Q[r * dk + j] *= io->scale; /* rounds: fp32 */
    }
}

/* Head h of the sequence of tokens [first, end) on the state S (loaded by the caller):
 * writes its o rows and leaves its final state in S. */
static void sequence_head(chunk_ws *w, const ug_delta_io *io, size_t h, size_t first, size_t end, float *S,
                          ug_variant_code bug)
{
    size_t L = w->L, dv = io->dv, hk = ug_delta_io_qk_head(io, h);
    if (bug == UG_VAR_MUT_DROP_TAIL) { /* bug: the partial chunk is dropped; its o rows keep the zeros the kernel */
        size_t kept = first + (end - first) / L * L; /* initialised them to, its state is never taken in */
        for (size_t i = 0; i < dv; i++) w->o[i] = 0.0f;
        for (size_t t = kept; t < end; t++) ug_sim_store(io->o, (t * io->hv + h) * dv, dv, w->o);
        end = kept;
    }
    /* bug: the chunk is cut at the end of all tokens, not of its sequence, so a sequence's tail chunk takes in
     * the next sequence's first tokens (their o is rewritten when that sequence runs; the state is not) */
    size_t limit = bug == UG_VAR_MUT_CHUNK_PAST_SEQ_END ? io->tokens : end;
    for (size_t t0 = first; t0 < end; t0 += L) {
        size_t n = limit - t0 < L ? limit - t0 : L; /* the tail chunk is explicit */
        chunk_load(w, io, h, hk, t0, n, bug == UG_VAR_MUT_FIRST_CHUNK_NO_DECAY && t0 == first);
        chunk_step(w, n, S, bug);
        for (size_t r = 0; r < n; r++) ug_sim_store(io->o, ((t0 + r) * io->hv + h) * dv, dv, w->o + r * dv);
        if (bug == UG_VAR_MUT_DOUBLE_DECAY && t0 + n < end) { /* bug: the carried state decayed again */
            float gl = expf(w->G[n - 1]);
            for (size_t x = 0; x < dv * io->dk; x++) S[x] *= gl;
        }
    }
}

static int cgdr_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_delta_io io;
    if (ug_delta_io_open(&io, call, err, errlen)) return -2;
    long chunk = UG_P(chunked_gated_delta_rule, &io.params)->chunk; /* 32, 64 or 128: the declaration checks it */
    size_t L = (size_t)chunk, dk = io.dk, dv = io.dv, state = dv * dk;
    chunk_ws w;
    float *S = malloc((state > 0 ? state : 1) * sizeof *S);
    if (!S || ws_alloc(&w, L, dk, dv)) {
        free(S);
        ug_delta_io_close(&io);
        return -1;
    }
    w.how = bug; /* dotv and the accumulations read it: the legal variants' orders */
    for (size_t h = 0; h < io.hv; h++)
        for (size_t b = 0, first = 0; b < io.seqs; b++) {
            size_t end = first + ug_delta_io_seq_len(&io, b), row = (b * io.hv + h) * state; /* h0, ht [b*Hv + h] */
            if (b == 0 || bug != UG_VAR_MUT_STATE_ACROSS_SEQS) ug_delta_io_load(io.h0, row, state, S);
            /* bug (mut_state_across_seqs): the previous sequence's final state carried on instead of its own h0 */
            sequence_head(&w, &io, h, first, end, S, bug);
            ug_sim_store(io.ht, row, state, S);
            first = end;
        }
    ws_free(&w);
    free(S);
    ug_delta_io_close(&io);
    return 0;
}

const ug_kernel_fn ug_sim_chunked_gated_delta_rule = cgdr_kernel;
