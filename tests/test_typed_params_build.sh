# test_typed_params_build.sh — a misspelt typed param fails the build (core/opdecl.h, "Typed
# params"): code reading UG_P(op, p)->field compiles where the op declares the field and the
# enum choice, and does not compile with a param name or a choice the declaration lacks.
# Exits 77 (skipped) without a C compiler or the generated op_params.h.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
GEN=$(dirname "$UG_BIN")/generated
command -v "$CC" >/dev/null && [ -f "$GEN/op_params.h" ] || { echo "no $CC or $GEN/op_params.h: skipped"; exit 77; }
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}
compiles() { # BODY: a function reading page_attention's typed params
    printf '#include "op_params.h"\nlong f(const ug_params *p) { %s }\n' "$1" >"$T/t.c"
    "$CC" -std=c11 -fsyntax-only -Werror -I"$SRC" -I"$SRC/include" -I"$GEN" "$T/t.c" 2>"$T/cc.err"
}
if compiles 'return UG_P(page_attention, p)->heads_kv + (UG_P(page_attention, p)->quant == UG_PAGE_ATTENTION_QUANT_FP8);'
then ok; else bad "a declared param and choice did not compile: $(head -3 "$T/cc.err")"; fi
if compiles 'return UG_P(page_attention, p)->heads_kvv;'; then bad "a misspelt param compiled"
else ok; expect_grep "heads_kvv" "$T/cc.err"; fi
if compiles 'return UG_P(page_attention, p)->quant == UG_PAGE_ATTENTION_QUANT_FP9;'; then bad "a misspelt choice compiled"
else ok; expect_grep "UG_PAGE_ATTENTION_QUANT_FP9" "$T/cc.err"; fi
if compiles 'return UG_P(page_atention, p)->heads_kv;'; then bad "a misspelt op compiled"; else ok; fi
finish
