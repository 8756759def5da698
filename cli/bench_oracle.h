/* bench_oracle.h — `ulpgym bench oracle` (cli/bench_oracle.c): the oracle engine timed
 * against plain float64 and naive MPFR per op, or with --digest the bits of its values per
 * case (the bit-for-bit guard of oracle speed work). */
#ifndef UG_CLI_BENCH_ORACLE_H
#define UG_CLI_BENCH_ORACLE_H

/* argv[0] "bench", argv[1] "oracle"; returns the process exit status. */
int ug_bench_oracle(int argc, char **argv);

#endif
