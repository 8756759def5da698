/* commands.h — one entry point per command; the table in main.c lists them sorted. */
#ifndef UG_COMMANDS_H
#define UG_COMMANDS_H
int ug_cmd_bench(int argc, char **argv);
int ug_cmd_case(int argc, char **argv);
int ug_cmd_history(int argc, char **argv);
int ug_cmd_ops(int argc, char **argv);
int ug_cmd_plan(int argc, char **argv);
int ug_cmd_standards(int argc, char **argv);
int ug_cmd_sweep(int argc, char **argv);
int ug_cmd_triage(int argc, char **argv);
#endif
