/* cmd_case.c — `ulpgym case`: run one spec without a database; the reproduction line
 * triage prints. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
#include "core/canon.h"
#include "cli/report_text.h"
#include "run/exec.h"

static int ug_cmd_case(int argc, char **argv)
{
    const char *spec = NULL, *file = NULL, *backend = NULL, *sample = NULL, *primary = NULL, *mem = NULL,
               *timeout = NULL, *fail_on = NULL;
    int json = 0;
    ug_fail_on policy = UG_FAIL_ON_FAIL;
    const ug_cli_valopt value_opts[] = {{"--spec", &spec},
                                        {"--spec-file", &file},
                                        {"--backend", &backend},
                                        {"--sample", &sample},
                                        {"--primary", &primary},
                                        {"--case-memory", &mem},
                                        {"--case-timeout", &timeout},
                                        {"--fail-on", &fail_on},
                                        {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--json", &json}, {NULL, NULL}};
    const ug_cli_args cli_args = {"case", NULL, value_opts, flags, NULL};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    char err[1024];
    int std = -1;
    if (ug_fail_on_parse("case", fail_on, &policy)) return UG_EXIT_USAGE;
    if (primary && ug_exec_parse_primary(primary, &std, err, sizeof err)) return ug_cli_fail("case: %s", err);
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    double limit = ug_cli_case_timeout("case", timeout);
    if (limit < 0) return UG_EXIT_USAGE;
    char rerr[512];
    char *text = file ? ug_text_file_read(file, rerr, sizeof rerr) : spec ? strdup(spec) : NULL;
    if (!text) return file ? ug_cli_fail("case: %s", rerr) : ug_cli_fail("case: give --spec JSON or --spec-file FILE");
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.primary_set = std >= 0;
    o.primary = std;
    o.contain_s = limit;
    if (sample && (long)(o.oracle.sample = (size_t)ug_cli_sample(sample)) < 0) {
        free(text);
        return ug_cli_fail("case: --sample takes a count or \"all\"");
    }
    ug_backend b;
    if (ug_backend_open(&b, backend, err, sizeof err)) {
        free(text);
        return ug_cli_fail("%s", err);
    }
    ug_result r;
    ug_cli_input_cache_open();
    int rc = ug_exec_case(text, &b, &o, &r, NULL);
    free(text);
    ug_backend_close(&b);
    if (rc) return ug_cli_fail("%s", r.message);
    if (json)
        ug_print_result_json(&r, stdout);
    else
        ug_print_result(&r, stdout);
    /* no database, so no earlier result: new is fail here */
    return ug_fail_on_case(NULL, policy, &r, 0, NULL, err, sizeof err) ? UG_EXIT_FOUND : UG_EXIT_OK;
}

const ug_command ug_command_case = {
    "case", ug_cmd_case, "run one case from its spec JSON and print its verdict",
    "usage: ulpgym case (--spec JSON | --spec-file FILE) [--backend B] [--sample N|all] [--primary STD]\n"
    "                   [--json] [--case-memory BYTES] [--case-timeout SECONDS] [--fail-on never|fail|new]\n"
    "  Runs the kernel and the oracle on the case the spec describes (no database).\n"
    "  --backend sim | sim:VARIANT | plugin:PATH.so   (default sim)\n"
    "  --primary STD  decide the outcome by numeric standard STD, as `sweep --primary` does\n" UG_CLI_INPUT_CACHE_HELP
        UG_CLI_CASE_MEMORY_HELP UG_CLI_CASE_TIMEOUT_HELP UG_FAIL_ON_HELP(
            "fail") "                   (no database here, so new is the same as fail)\n"
                    "  Exit status: 0 the verdict passes --fail-on (default: PASS or SKIP); 1 it does not\n"
                    "  (FAIL, NONFINITE, ERROR, CRASH, TIMEOUT, SHAPE); 2 bad input (a spec or option refused).\n"};
