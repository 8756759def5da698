/* fa_mha_check.h — the flash_attention_mha cases that test_op_flash_attention_mha and
 * test_optional_outputs both run: the spec builder (seed 7, bf16), normal inputs, and the
 * uniform-score case (q = 0 over 3 queries and 40 keys: every score is 0, so M = 0, L = 40,
 * lse = ln 40 and o the mean of v), whose known values each test checks on its own outputs. */
#ifndef UG_FA_MHA_CHECK_H
#define UG_FA_MHA_CHECK_H

#define SPEC(dist, params)                                                                                             \
    "{\"v\":1,\"op\":\"flash_attention_mha\",\"dtype\":\"bf16\",\"seed\":7,\"params\":" params ",\"dist\":" dist "}"
#define NORMAL                                                                                                         \
    "{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"              \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"
#define FA_UNIFORM_SCORES                                                                                              \
    SPEC("{\"q\":{\"kind\":\"const\",\"value\":0},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"                   \
         "\"v\":{\"kind\":\"randint\",\"lo\":-8,\"hi\":8}}",                                                           \
         "{\"seqlens\":\"3:40\",\"heads\":1,\"head_dim\":8}")

#endif
