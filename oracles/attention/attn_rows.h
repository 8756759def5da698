/* attn_rows.h — the exact reference of one attention query row, shared by the attention
 * oracles gqa_decode_attn, incre_flash_attention_mla and sparse_flash_attention.
 *
 * Each oracle finds a row's keys its own way (window, paged cache, top-k indices) and
 * gathers their exact values; the scores, the softmax, the weighted sum of values and the
 * special-value rule are this one piece of code, written on oracles/mp/arith.h so it runs
 * in every arithmetic.
 *
 * Special values (what the three ops' semantics text promises): a key whose score
 * scale*q·k is -inf is dead (weight exactly 0, its value row ignored even if NaN); a NaN
 * or +inf score makes the whole row NaN; a row with no live key is zeros; among live keys
 * a NaN value makes its output column NaN, and +-inf values make it +-inf (NaN when both
 * signs occur). Scores are classified from q·k in double, which for finite bf16 inputs
 * never overflows, so the class is exact. */
#ifndef UG_ATTN_ROWS_H
#define UG_ATTN_ROWS_H
#include <stddef.h>
#include <stdint.h>

#include "oracles/mp/arith.h"
#include "oracles/oracle.h"

/* Emits o[row, d] = sum_j softmax(s)_j * v[j*ldv + d], s_j = scale * q·k_j, over the n keys
 * k_j = k + j*ldk (dk long), for every selected element of output out that lies in row
 * `row` (dv elements per row), advancing *pos past them; special values as above. The
 * selection must be sorted and *pos must not point before row's first element. s is
 * scratch for 2n numbers. scale must be positive. Returns 0, or -1 out of memory. */
/* Sampling geometry of a [rows, heads, d] attention output: one row's heads form a row
 * tile, 64-element column tiles (the decode kernels' tiling). */
void ug_gl_attn_geometry(const ug_case *c, int out, ug_geom *g);

int ug_gl_attn_emit_query(ug_ar *ar, const double *q, const double *k, size_t ldk, size_t dk, size_t n, ug_num scale,
                          const double *v, size_t ldv, size_t dv, ug_num *s, int out, const ug_selection *sel,
                          size_t *pos, size_t row);

/* The same, with the keys also held transposed: kt[d*ldkt + j] = k_j[d] (ug_gl_keys_transpose),
 * from which the plain arithmetics take every score in one pass over the keys (ug_dot_d_tile,
 * ug_dot_d per key bit for bit): the same numbers. kt NULL: ug_gl_attn_emit_query. */
int ug_gl_attn_emit_query_kt(ug_ar *ar, const double *q, const double *k, size_t ldk, const double *kt, size_t ldkt,
                             size_t dk, size_t n, ug_num scale, const double *v, size_t ldv, size_t dv, ug_num *s,
                             int out, const ug_selection *sel, size_t *pos, size_t row);
/* kt[d*ldkt + j] = k[j*ldk + d] for d < dk, j < n. */
void ug_gl_keys_transpose(const double *k, size_t ldk, size_t dk, size_t n, double *kt, size_t ldkt);
/* Room for up to n keys of dk transposed, *ldkt = n + 8 (padded, so that the rows of a key
 * chunk do not all fall in the same cache sets); NULL in the MPFR arithmetics, where the copy
 * would not be read, above UG_GL_KT_MAX_BYTES (the copy doubles the keys' memory: past it the
 * scores go key by key, the same numbers), or without memory. ug_gl_kt_scratch: its bytes,
 * for a case memory estimate. */
#define UG_GL_KT_MAX_BYTES ((size_t)16 << 20)
double *ug_gl_kt_alloc(const ug_ar *ar, size_t dk, size_t n, size_t *ldkt);
double ug_gl_kt_scratch(double dk, double n);

/* ug_gl_attn_emit_query_kt, and the row's softmax statistics: max_sum[0] = m = max_j s_j and
 * max_sum[1] = sum_j exp(s_j - m) over the live keys, the very values its o divides by (so
 * their device bound is the row's); a NaN row gives NaN for both, a row with no live key
 * -inf and 0. Valid until the caller releases the arena mark it took before the call. */
int ug_gl_attn_emit_query_max_sum(ug_ar *ar, const double *q, const double *k, size_t ldk, const double *kt,
                                  size_t ldkt, size_t dk, size_t n, ug_num scale, const double *v, size_t ldv,
                                  size_t dv, ug_num *s, int out, const ug_selection *sel, size_t *pos, size_t row,
                                  ug_num max_sum[2]);

/* Live context length of sequence b of `batch`: given[b] when the op's context_lens param
 * lists the lengths (given non-NULL); else ctx when not ragged; when ragged a seeded draw
 * in lo..ctx, with the last sequence at ctx so the longest context is always exercised.
 * lo is the query tokens per step (q_per_step), so every query row of an MTP step sees at
 * least one key; lo = 1 makes exactly the draws made before MTP existed (same case, same
 * lengths). Builders store it as the op's seq_lens input. */
long ug_gl_attn_seq_len(uint64_t seed, const long *given, int ragged, long lo, long b, long batch, long ctx);

/* The lengths listed by the decode ops' int-list param context_lens, or NULL when it holds its
 * default "0" (not given: an empty list cannot be written, and no length is 0). */
const long *ug_gl_attn_given_lens(const ug_params *P);

/* Checks the decode ops' shared params batch, ctx, lens, q_per_step and context_lens: at most
 * ctx query tokens per step; a given context_lens has batch entries, each in q_per_step..ctx
 * (a query row ends at key L_b - q_per_step + 1 + i, which must be >= 1), and is not
 * combined with lens "ragged" (the two would name one case twice). 0, or -2 with a message
 * naming op. */
int ug_gl_attn_check_lens(const ug_params *P, const char *op, char *err, size_t errlen);

/* The paged decode ops' params (glm_attention, lightning_indexer_quant): actual_seqs
 * (int list, one context length per sequence), block_size, max_blocks_per_seq,
 * num_blocks, q_per_step and the derived blocks_needed. Checks that the pool holds the
 * blocks the sequences need (else the table would point past the cache), that each length
 * fits the table (max_blocks_per_seq * block_size) and is at least q_per_step (each query
 * row sees a token). 0, or -2 with a message naming op and the param. */
int ug_gl_attn_check_paged(const ug_params *P, const char *op, char *err, size_t errlen);

/* Builds the paged ops' built inputs block_tables [batch, max_blocks_per_seq] and
 * actual_seqs [batch] (the reference suite's gen_block_table): a seeded Fisher-Yates
 * shuffle of the num_blocks pool handed out in sequence order, -1 past each sequence's
 * last block; actual_seqs the param. 0, or -1 out of memory. */
int ug_gl_attn_build_paged(ug_case *c, char *err, size_t errlen);

/* Paged decode attention (glm_attention's math, over its block table): q [batch*sq, hq,
 * dim], caches [nb, bs, hkv, dim] and the table [batch, mb] are case tensors, inputs or
 * outputs a kernel wrote (read with ug_tload); lens the context lengths; scale the fp32
 * attribute's value. Row r = (b*sq + i)*hq + h sees tokens t < ug_gl_attn_mtp_end(lens[b],
 * sq, i) of kv head h / (hq/hkv), token t at slot t % bs of block table[b, t / bs]. */
typedef struct {
    const ug_tensor *q, *kc, *vc, *bt;
    const long *lens;
    long batch, hq, hkv, dim, bs, mb, sq;
    double scale;
} ug_gl_paged;

/* Emits every selected element of output out (o [batch*sq, hq, dim]) with the shared
 * exact row (ug_gl_attn_emit_query, values token-major). 0, or -1 out of memory. */
int ug_gl_attn_paged_emit(ug_ar *ar, const ug_gl_paged *p, int out, const ug_selection *sel);

/* Gathers the first n tokens of sequence b, kv head g of p's caches: keys token-major into
 * kg (n*dim), values with element (token t, column d) at v[t*ldv + d*ldc]: token-major
 * (ldv dim, ldc 1: a dense row's sums in one pass over the rows) or column-major (ldv 1,
 * ldc n: each output column one contiguous run). Exact: the case's values as doubles. */
void ug_gl_paged_gather(const ug_gl_paged *p, long b, long g, long n, double *kg, double *v, size_t ldv, size_t ldc);

/* Multi-token prediction: query row i (0-based) of the q_per_step rows of a sequence with
 * len live keys sees keys [.., len - q_per_step + 1 + i): the last row sees every key,
 * each earlier row one fewer (causal among the step's own tokens). */
static inline long ug_gl_attn_mtp_end(long len, long q_per_step, long i) { return len - q_per_step + 1 + i; }

#endif
