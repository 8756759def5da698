/* tile_simd.h — what the oracle's vector loops (arith_tile.c, naive_f32.c) share: loads and
 * stores of GCC vector types through memcpy, and the clones they are compiled to.
 *
 * The loops are written with GCC/Clang vector types; on x86-64 each exported loop is also
 * compiled for AVX2 and for x86-64-v4 (AVX-512) and picked at run time (target_clones):
 * the same IEEE operations per lane whatever the width (-ffp-contract=off: no FMA), so the
 * same bits. No clones under the sanitizers (the fuzz build): an ifunc resolver runs before
 * they are set up. Include it in .c files only: its pragma silences GCC's note on vector
 * arguments, which concerns nobody when every vector-valued function is static. */
#ifndef UG_TILE_SIMD_H
#define UG_TILE_SIMD_H
#include <string.h>

#pragma GCC diagnostic ignored "-Wpsabi"

#define UG_VLD(v, p) memcpy(&(v), (p), sizeof(v))
#define UG_VST(p, v) memcpy((p), &(v), sizeof(v))

#if defined(__SANITIZE_ADDRESS__) && !defined(UG_TILE_NO_CLONES) /* gcc's ASan */
#define UG_TILE_NO_CLONES
#endif
#if defined(__has_feature) && !defined(UG_TILE_NO_CLONES) /* clang's (the libFuzzer build) */
#if __has_feature(address_sanitizer)
#define UG_TILE_NO_CLONES
#endif
#endif
/* On static functions only: clang 14 emits no symbol for an exported target_clones one. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(UG_TILE_NO_CLONES)
#if __has_attribute(target_clones)
#define UG_TILE_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef UG_TILE_CLONES
#define UG_TILE_CLONES
#endif

#endif
