/* gl_attn_rows.h — the exact reference of one attention query row, shared by the
 * GreenLight attention oracles (gqa_decode_attn, incre_flash_attention_mla,
 * sparse_flash_attention).
 *
 * Each oracle finds a row's keys its own way (window, paged cache, top-k indices) and
 * gathers their exact values; the softmax and the weighted sum of values are this one
 * piece of code, written on oracles/mp/arith.h so it runs in every arithmetic. */
#ifndef UG_GL_ATTN_ROWS_H
#define UG_GL_ATTN_ROWS_H
#include <stddef.h>
#include <stdint.h>

#include "oracles/mp/arith.h"
#include "oracles/oracle.h"

/* Scores s_j = scale * q·k_j for n keys k_j = k + j*ldk (exact doubles, dk long), into s. */
void ug_gl_attn_scores(ug_ar *ar, const double *q, const double *k, size_t ldk, size_t dk, size_t n, ug_num scale,
                       ug_num *s);

/* Emits o[row, d] = sum_j softmax(s)_j * v[j*ldv + d] for every selected element of output
 * out that lies in row `row` (dv elements per row), advancing *pos past them. The
 * selection must be sorted and *pos must not point before row's first element. n == 0
 * (no key) emits zeros. e is scratch for n numbers. */
void ug_gl_attn_emit_row(ug_ar *ar, const ug_num *s, ug_num *e, size_t n, const double *v, size_t ldv, size_t dv,
                         int out, const ug_selection *sel, size_t *pos, size_t row);

/* Live context length of sequence b of `batch`: ctx when not ragged; when ragged a
 * seeded draw in 1..ctx, with the last sequence at ctx so the longest context is always
 * exercised. Builders store it as the op's seq_lens input. */
long ug_gl_attn_seq_len(uint64_t seed, int ragged, long b, long batch, long ctx);

/* Whether output out's selection has an element in row `row` at or after *pos. */
int ug_gl_attn_row_selected(const ug_selection *sel, int out, size_t pos, size_t row, size_t dv);

#endif
