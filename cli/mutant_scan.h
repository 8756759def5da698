/* mutant_scan.h — which default-plan cases catch each kernel variant of an op. */
#ifndef UG_MUTANT_SCAN_H
#define UG_MUTANT_SCAN_H
#include <stdio.h>
/* Runs the scan and prints it; -2 if the op or the plan is unusable. */
int ug_ops_print_mutant_scan(int op, FILE *f);
#endif
