/* attn_tiles.c — the tile loop of attention query rows that share their keys (see
 * attn_tiles.h).
 *
 * Per tile of keys: scores s_j = (q·k_j summed in fp32; bf16 products are exact in fp32)
 * times scale; the running max m grows to cover the tile, the running sum l and the
 * unnormalised output acc are rescaled by exp(m_old - m_new); p_j = exp(s_j - m_new) in
 * fp32 feeds l, and (cast to bf16 when the kernel says so) the P·V products summed in
 * fp32 into acc. At the end o = acc / l. This is the FlashAttention-2 forward of one row,
 * with each place a device rounds marked. Special values: a -inf score gives weight 0 and
 * its value row is skipped; a live key's non-finite value is recorded per column and
 * replaces that column at the end (an underflowed weight times inf would give NaN).
 * Several rows sharing the keys run tile by tile together: the tile's keys are transposed
 * and scored for all of them at once (attn_vec.h), then each row takes its own step.
 * Legal variants (attn_tiles.h flags): every exp moved by UG_SIM_FN_ULPS fp32 ulps
 * (FN_ULPS); a two-pass softmax (TWO_PASS: the tiles scored once for each row's max, then
 * walked as above with the running max starting there, so alpha is exp(0) = 1). */
#include <math.h>
#include <string.h>

#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"

/* acc += P·V over one tile (acc already rescaled); raw[j] -inf marks a dead key. Records
 * in special[d] the non-finite value column d takes (0: none; NaN when they disagree).
 * Without the bf16-accumulator bug the update runs across d with acc kept in registers
 * over the keys, added key after key (attn_vec.h: the same fp32 multiply and add per
 * element, in the same order); the non-finite values are recorded after. */
static void tile_pv(const ug_gl_attn_cfg *cfg, const float *s, const float *raw, const float *v, size_t len, float *acc,
                    float *special, const unsigned char *vbad)
{
    enum { CHUNK = 128 };
    int bf16_acc = (cfg->flags & UG_GL_ATTN_BUG_PV_BF16) != 0;
    float p[CHUNK];
    long live[CHUNK];
    for (size_t j0 = 0; j0 < len; j0 += CHUNK) {
        size_t n = len - j0 < CHUNK ? len - j0 : CHUNK;
        const float *vt = v + j0 * cfg->ldv;
        for (size_t j = 0; j < n; j++) {
            live[j] = raw[j0 + j] != -INFINITY; /* dead key: weight 0, value ignored */
            p[j] = cfg->flags & UG_GL_ATTN_P_BF16 ? ug_av_round_bf16(s[j0 + j]) : s[j0 + j]; /* rounds: bf16 P */
        }
        if (!bf16_acc) /* acc += p_j v_j key after key, acc held across the keys (rounds: fp32 product, add) */
            ug_av_outer_rows(acc, 1, p, 1, live, n, vt, cfg->ldv, cfg->dv);
        for (size_t j = 0; j < n; j++) {
            const float *vj = vt + j * cfg->ldv;
            for (size_t d = 0; live[j] && d < cfg->dv && (bf16_acc || vbad[j0 + j]); d++) {
                if (bf16_acc)
                    acc[d] = ug_sim_round_bf16(acc[d] + p[j] * vj[d]); /* bug: bf16 accumulator (rounds: fp32, bf16) */
                if (!isfinite(vj[d])) special[d] = special[d] == 0.0f || special[d] == vj[d] ? vj[d] : NAN;
            }
        }
    }
}

/* The running state of one query row: max m, sum l, the output accumulator o and the
 * non-finite value each column takes (special). */
typedef struct {
    float m, l, *o, *special;
} row_state;
_Static_assert(sizeof(row_state) <= 8 * sizeof(float), "UG_GL_ATTN_ROWS_SCRATCH keeps 8 floats a row for its state");

static void row_begin(const ug_gl_attn_cfg *cfg, row_state *st, float *o, float *special)
{
    st->m = -INFINITY, st->l = 0.0f, st->o = o, st->special = special;
    if (cfg->flags & UG_GL_ATTN_BUG_MAX_ZERO) st->m = 0.0f; /* bug: running max initialised to 0 */
    memset(o, 0, cfg->dv * sizeof *o);
    memset(special, 0, cfg->dv * sizeof *special);
}

/* vbad[j] = 1 where value row j of a tile (len rows) holds a non-finite value. */
static void tile_vbad(const ug_gl_attn_cfg *cfg, const float *v, size_t len, unsigned char *vbad)
{
    for (size_t j = 0; j < len; j++) {
        const float *vj = v + j * cfg->ldv;
        unsigned char bad = 0;
        for (size_t d = 0; d < cfg->dv; d++) bad |= !isfinite(vj[d]);
        vbad[j] = bad;
    }
}

/* One tile of a row: s[0..len) its scores (overwritten with p), tm their max, raw scratch
 * of len, v the tile's first value row, vbad its rows with a non-finite value. */
static void row_tile(const ug_gl_attn_cfg *cfg, row_state *st, float *s, float *raw, float tm, const float *v,
                     size_t len, const unsigned char *vbad)
{
    float m_new = cfg->flags & UG_GL_ATTN_BUG_LOCAL_MAX ? tm : fmaxf(st->m, tm);
    int fn = cfg->flags & UG_GL_ATTN_FN_ULPS ? UG_SIM_FN_ULPS : 0; /* legal_fn_ulps: each exp fn ulps off */
    float za = st->m - m_new;                                      /* rounds: fp32 sub */
    float alpha = st->m == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(za), za, fn); /* rounds: fp32 exp */
    if (cfg->flags & UG_GL_ATTN_BUG_LOCAL_MAX) alpha = 1.0f; /* bug: earlier tiles keep their own max */
    float ts = 0.0f;
    memcpy(raw, s, len * sizeof *raw);
    for (size_t j = 0; j < len; j++) {
        float z = raw[j] - m_new;                                           /* rounds: fp32 sub */
        s[j] = raw[j] == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(z), z, fn); /* rounds: fp32 exp */
        ts += s[j];                                                         /* rounds: fp32 */
    }
    st->l = (cfg->flags & UG_GL_ATTN_BUG_NO_SUM_RESCALE ? st->l : st->l * alpha) + ts; /* rounds: fp32 */
    for (size_t d = 0; d < cfg->dv; d++) st->o[d] *= alpha;                            /* rounds: fp32 */
    tile_pv(cfg, s, raw, v, len, st->o, st->special, vbad);
    st->m = m_new;
}

static void row_end(const ug_gl_attn_cfg *cfg, const row_state *st)
{
    float *o = st->o, l = st->l;
    for (size_t d = 0; d < cfg->dv; d++) {
        o[d] = l == 0.0f ? 0.0f : o[d] / l; /* rounds: fp32 div; no live key: zeros */
        if (st->special[d] != 0.0f && !isnan(l) && l != 0.0f) o[d] = st->special[d]; /* a non-finite live value */
        if (cfg->flags & UG_GL_ATTN_BUG_SCALE_AFTER) o[d] *= cfg->scale;             /* bug: scale after softmax */
    }
}

/* The rows' final max and sum where the caller asks for them (cfg->row_max, row_sum): l is
 * NaN exactly on a row with a NaN or +inf score, whose max is then NaN too. */
static void rows_max_sum(const ug_gl_attn_cfg *cfg, const row_state *st, size_t nr)
{
    for (size_t r = 0; cfg->row_max && r < nr; r++) {
        cfg->row_max[r] = isnan(st[r].l) ? NAN : st[r].m;
        cfg->row_sum[r] = st[r].l;
    }
}

void ug_gl_attn_rows(const ug_gl_attn_cfg *cfg, const float *q, size_t ldq, size_t nr, const float *k, const float *v,
                     size_t n, float *o, size_t ldo, float *scratch)
{
    size_t w = ug_av_cols(cfg->tile);
    row_state *st = (row_state *)(void *)scratch; /* first: malloc alignment; 8 floats a row hold it */
    float *s = scratch + 8 * nr, *raw = s + w, *special = raw + w, *kt = special + nr * cfg->dv,
          *dots = kt + cfg->dk * w;
    unsigned char *vbad = (unsigned char *)(dots + nr * w);
    for (size_t r = 0; r < nr; r++) row_begin(cfg, &st[r], o + r * ldo, special + r * cfg->dv);
    int two_pass = (cfg->flags & UG_GL_ATTN_TWO_PASS) != 0;
    for (int pass = !two_pass; pass < 2; pass++) { /* pass 0 (two-pass only): the rows' max over all keys */
        for (size_t t = 0; t < n; t += cfg->tile) {
            size_t len = n - t < cfg->tile ? n - t : cfg->tile;
            ug_av_stage_kt(k + t * cfg->ldk, cfg->ldk, len, cfg->dk, kt, w);
            ug_av_scores(q, ldq, nr, kt, w, ug_av_cols(len), cfg->dk, dots, w); /* rounds: fp32 acc, in d order */
            if (pass) tile_vbad(cfg, v + t * cfg->ldv, len, vbad);
            for (size_t r = 0; r < nr; r++) {
                float tm = -INFINITY;
                for (size_t j = 0; j < len; j++) {
                    float d = dots[r * w + j];
                    s[j] = cfg->flags & UG_GL_ATTN_BUG_SCALE_AFTER ? d : d * cfg->scale; /* rounds: fp32 */
                    tm = fmaxf(tm, s[j]);
                }
                if (pass)
                    row_tile(cfg, &st[r], s, raw, tm, v + t * cfg->ldv, len, vbad);
                else
                    st[r].m = fmaxf(st[r].m, tm); /* NaN scores skipped: they still make the row NaN in pass 1 */
            }
        }
        for (size_t r = 0; !pass && r < nr; r++)
            if (isinf(st[r].m)) st[r].m = -INFINITY; /* +inf score (a NaN row) or no live key: the one-pass walk */
    }
    for (size_t r = 0; r < nr; r++) row_end(cfg, &st[r]);
    rows_max_sum(cfg, st, nr);
}
