/* bench_kernels.h — `ulpgym bench kernels` (cli/bench_kernels.c): the sim kernels alone,
 * timed, with an optional digest of their outputs (the bit-for-bit guard of speed work). */
#ifndef UG_CLI_BENCH_KERNELS_H
#define UG_CLI_BENCH_KERNELS_H

/* argv[0] "bench", argv[1] "kernels"; returns the process exit status. */
int ug_bench_kernels(int argc, char **argv);

#endif
