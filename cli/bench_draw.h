/* bench_draw.h — `ulpgym bench draw` (cli/bench_draw.c): input drawing timed, the blocked
 * fill against the element-by-element definition (docs/PERFORMANCE.md). */
#ifndef UG_CLI_BENCH_DRAW_H
#define UG_CLI_BENCH_DRAW_H

/* argv[0] "bench", argv[1] "draw"; returns the process exit status. */
int ug_bench_draw(int argc, char **argv);

#endif
