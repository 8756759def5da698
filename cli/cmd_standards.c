/* cmd_standards.c — `ulpgym standards`: every precision standard with its thresholds. */
#include "cli/cli.h"
#include "oracles/verdict.h"

static const char *thresholds[UG_STD_COUNT] = {
    [UG_STD_PYPTO] = "per op/output atol, rtol (docs/STANDARDS.md table; default 1e-3/1e-3), budget 0.005",
    [UG_STD_ALLCLOSE] = "fp16 rtol 1e-3 atol 1e-5; bf16 1.6e-2/1e-5; fp32 1.3e-6/1e-5",
    [UG_STD_DUAL_THOUSANDTH] = "t = 1e-3 fp16, 4e-3 bf16, 1e-4 fp32",
    [UG_STD_MIXED_TOLERANCE] = "rtol/atol/floor: fp16 2^-9/2^-9/0.1; bf16 2^-6/2^-6/1; fp32 2^-10/2^-16/1e-2; "
                               "e4m3 2^-2/2^-4/1; e5m2 2^-1/2^-3/0.1",
    [UG_STD_MERE_MARE] = "T: fp16 2^-10, bf16 2^-7, fp32 2^-13, e4m3 2^-3, e5m2 2^-2",
    [UG_STD_ULP] = "fp16/bf16 1 ulp, < 0.1% above; fp32 32 ulp, mean < 64 or < 5% above",
    [UG_STD_BENCHMARK] = "min_err fp16 2^-11, bf16 2^-8, fp32 2^-14; MARE/MERE/RMSE ratio limits L0 10/2/2, "
                         "L1 5/1.5/1.5, L2 2/1.2/1.2; small-value errors <= 2x (threshold/atol fp32 1e-6/1e-9, "
                         "fp16/bf16 1e-3/1e-5)",
    [UG_STD_CERTIFIED] = "c = 2 (UG_CERT_C); device model: fp32, u = 2^-24, reductions gamma_n * sum|terms|, "
                         "functions within 4 fp32 ulps, declared intermediate roundings; no budget",
    [UG_STD_REFERENCE] = "per op/output reference_atol, reference_rtol, reference_budget (0 = every element), "
                         "as the reference test applies them (`ulpgym ops show OP`); NA where the op has none",
    [UG_STD_EXACT] = "bitwise",
    [UG_STD_BOUNDARY_AWARE] = "budget per output, in quanta",
    [UG_STD_TOPK_SET] = "budget per output, in score units",
};

static int ug_cmd_standards(int argc, char **argv)
{
    if (argc > 1) return ug_cli_fail("standards: takes no arguments");
    for (int s = 0; s < UG_STD_COUNT; s++)
        printf("%-16s %s\n  rule:       %s\n  thresholds: %s\n\n", ug_standard_name(s), ug_standard_source(s),
               ug_standard_rule(s), thresholds[s]);
    printf("A NaN/Inf mismatch fails every standard.\n");
    return 0;
}

const ug_command ug_command_standards = {
    "standards", ug_cmd_standards, "list the precision standards and their thresholds", "usage: ulpgym standards\n"};
