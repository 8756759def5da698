/* fp_round_trip.c — configure-time probe (CMakeLists.txt try_run), not part of ulpgym.
 *
 * Every value that crosses a format boundary in ulpgym is rounded with a (double)(float)
 * round trip or a bit-level routine (core/dtype.c). GCC 12.2 at -O2 has been seen to drop
 * the in-place round trip of two adjacent doubles (SLP vectorizer): 0.1 came back
 * unchanged. An oracle built by such a compiler would silently use unrounded fp32
 * attributes. This program exits 0 when the round trip rounds and 1 when it does not;
 * the build then adds -fno-tree-slp-vectorize, or stops. */
#include <stdio.h>

__attribute__((noinline)) static void round_pair(double *a)
{
    a[0] = (float)a[0];
    a[1] = (float)a[1];
}

int main(void)
{
    volatile double seed = 0.1;
    double a[2] = {seed, seed * 3};
    round_pair(a);
    int ok = a[0] == (double)0.1f && a[1] == (double)(float)(0.1 * 3) && a[0] != 0.1;
    printf("%s\n", ok ? "rounds" : "does not round");
    return ok ? 0 : 1;
}
