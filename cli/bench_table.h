/* bench_table.h — `ulpgym bench kernels --backend B --baseline A` (cli/bench_table.c): the
 * release report's kernel-timing table, B's kernel timed against A's on the same cases,
 * scene by scene, by kernel-only and by end-to-end time (docs/PERFORMANCE.md). */
#ifndef UG_CLI_BENCH_TABLE_H
#define UG_CLI_BENCH_TABLE_H

/* Whether argv (a `bench kernels` command line) asks for the timing table: it names
 * --backend or --baseline. */
int ug_bench_kernel_table_wanted(int argc, char **argv);
/* argv[0] "bench", argv[1] "kernels"; returns the process exit status: 0, 1 when a case
 * was left out (a backend declined or failed it), 2 on bad input, 3 when the table could
 * not be stored. */
int ug_bench_kernel_table(int argc, char **argv);

#endif
