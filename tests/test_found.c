/* test_found.c — the fuzzer findings kept as regression cases (corpus/found/OP/ID.json):
 * each is a valid spec that passes with the correct sim kernel and fails with at least one
 * of its op's beyond-plan mutants, and every beyond-plan mutant is caught by at least one
 * finding. Together with test_plan_<op> (which asserts the plan misses those mutants) this
 * shows the fuzzer reaches what the plan does not. Also unit-tests the failure signature
 * that deduplicates findings and the sorting into kernel and contract findings (a mutant
 * stands in for a "correct" kernel or an oracle that fails, to fabricate contract ones). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "run/exec.h"
#include "run/found.h"

static ug_outcome run(const char *spec, const char *variant)
{
    ug_backend b;
    char err[256], name[96];
    snprintf(name, sizeof name, "sim:%s", variant);
    if (ug_backend_open(&b, name, err, sizeof err)) return UG_OUT_ERROR;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    ug_result r;
    ug_exec_case(spec, &b, &o, &r, NULL);
    ug_backend_close(&b);
    return r.outcome;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    if (buf) fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    return buf;
}

static void test_signature(void)
{
    ug_result r;
    memset(&r, 0, sizeof r);
    r.op = ug_op_find("attn_softmax");
    r.dtype = UG_DT_BF16;
    r.outcome = UG_OUT_NONFINITE;
    r.primary = UG_STD_PYPTO;
    r.n_out = 2;
    snprintf(r.out[0].name, sizeof r.out[0].name, "y");
    snprintf(r.out[1].name, sizeof r.out[1].name, "lse");
    r.out[0].m.n_nonfinite_mismatch = 3;
    r.verdict[UG_STD_PYPTO] = UG_V_FAIL;
    const char *a = "{\"op\":\"attn_softmax\",\"params\":{\"cols\":16,\"rows\":1,\"mask\":\"none\"},\"seed\":1}";
    const char *b = "{\"op\":\"attn_softmax\",\"params\":{\"cols\":64,\"rows\":1,\"mask\":\"none\"},\"seed\":9}";
    char sa[1024], sb[1024], ka[17], kb[17];
    ug_found_signature(&r, a, "sim:mut_x", sa, sizeof sa);
    CHECK(strcmp(sa, "op=attn_softmax backend=sim:mut_x outcome=NONFINITE kind=nonfinite std=pypto outputs=y "
                     "dtype=bf16 shape=rows=1") == 0,
          "signature: %s", sa);
    ug_found_signature(&r, b, "sim:mut_x", sb, sizeof sb); /* other seed and cols: the same bug */
    ug_found_signature_key(sa, ka);
    ug_found_signature_key(sb, kb);
    CHECK(strcmp(ka, kb) == 0 && strlen(ka) == 16, "same signature, keys %s %s", ka, kb);
    r.outcome = UG_OUT_FAIL; /* a numeric failure of the same output is another signature */
    r.out[0].verdict[UG_STD_PYPTO] = UG_V_FAIL;
    ug_found_signature(&r, b, "sim:mut_x", sb, sizeof sb);
    CHECK(strstr(sb, "kind=numeric std=pypto outputs=y ") != NULL, "numeric signature: %s", sb);
    ug_found_signature_key(sb, kb);
    CHECK(strcmp(ka, kb) != 0, "nonfinite and numeric share key %s", ka);
    ug_found_signature(&r, b, "plugin:/x.so", sa, sizeof sa); /* and so is another backend */
    CHECK(strcmp(sa, sb) != 0, "backend not in the signature: %s", sa);
}

/* Sorting a finding that a beyond-plan mutant fails: a kernel finding against the correct
 * kernel and the ideal backend; a contract finding when the "correct" kernel or the
 * "oracle" (here the mutant in their place) fails it too. */
static void test_sort(const char *spec, const char *mutant)
{
    char why[700], bad[96];
    snprintf(bad, sizeof bad, "sim:%s", mutant);
    int k = ug_found_sort_case(spec, "sim", "ideal", why, sizeof why);
    CHECK(k == UG_FOUND_KERNEL, "sorted %d, not kernel: %s", k, why);
    k = ug_found_sort_case(spec, bad, "ideal", why, sizeof why);
    CHECK(k == UG_FOUND_CONTRACT_SIM, "sorted %d, not contract-sim: %s", k, why);
    CHECK(strstr(why, bad) != NULL, "the reason names the backend: %s", why);
    k = ug_found_sort_case(spec, "sim", bad, why, sizeof why);
    CHECK(k == UG_FOUND_CONTRACT_IDEAL, "sorted %d, not contract-ideal: %s", k, why);
    CHECK(strcmp(ug_found_sort_name(UG_FOUND_CONTRACT_IDEAL), "contract-ideal") == 0, "sort name");
    k = ug_found_sort_case(spec, "no_such_backend", "ideal", why, sizeof why);
    CHECK(k == -2, "a bad backend sorts as %d", k);
    k = ug_found_sort_case("{\"op\":1}", "sim", "ideal", why, sizeof why);
    CHECK(k == -2, "a bad spec sorts as %d", k);
}

int main(void)
{
    int sorted = 0;
    test_signature();
    setenv("ULPGYM_FINDINGS", "/tmp/x-findings", 1);
    CHECK(strcmp(ug_found_out_dir(), "/tmp/x-findings") == 0, "ULPGYM_FINDINGS: %s", ug_found_out_dir());
    unsetenv("ULPGYM_FINDINGS");
    CHECK(strcmp(ug_found_out_dir(), "./ulpgym-found") == 0, "default findings dir: %s", ug_found_out_dir());
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        if (!d) continue;
        int nbeyond = 0, caught[32] = {0}, nfound = 0;
        for (int v = 0; ug_op_variants(d->op)[v].name; v++) nbeyond += ug_op_variants(d->op)[v].beyond_plan;
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s", ug_found_dir(), ug_op_name(op));
        DIR *dh = opendir(dir);
        struct dirent *e;
        while (dh && (e = readdir(dh))) {
            if (!strstr(e->d_name, ".json")) continue;
            char path[1500];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            char *spec = slurp(path);
            ug_spec s;
            char err[256] = "unreadable";
            int parsed = spec && ug_spec_parse(spec, &s, err, sizeof err) == 0;
            CHECK(parsed, "%s: %s", path, err);
            if (parsed) { /* the file is named after the case it holds */
                CHECK(strncmp(e->d_name, s.id, 16) == 0, "%s holds case %s", path, s.id);
                ug_spec_free(&s);
            }
            if (!spec) continue;
            nfound++;
            CHECK(run(spec, "sim") == UG_OUT_PASS, "%s fails with the correct kernel", path);
            int any = 0;
            for (int v = 0; ug_op_variants(d->op)[v].name && v < 32; v++)
                if (ug_op_variants(d->op)[v].beyond_plan && run(spec, ug_op_variants(d->op)[v].name) != UG_OUT_PASS) {
                    caught[v] = any = 1;
                    if (!sorted++) test_sort(spec, ug_op_variants(d->op)[v].name);
                }
            CHECK(any || nbeyond == 0, "%s is caught by none of %s's beyond-plan mutants", path, ug_op_name(op));
            free(spec);
        }
        if (dh) closedir(dh);
        for (int v = 0; ug_op_variants(d->op)[v].name && v < 32; v++)
            if (ug_op_variants(d->op)[v].beyond_plan)
                CHECK(caught[v],
                      "no finding in %s catches beyond-plan mutant %s (run `ulpgym fuzz %s --kernel-variant %s`)", dir,
                      ug_op_variants(d->op)[v].name, ug_op_name(op), ug_op_variants(d->op)[v].name);
        if (nfound || nbeyond) printf("%s: %d findings, %d beyond-plan mutants\n", ug_op_name(op), nfound, nbeyond);
    }
    CHECK(sorted, "no finding to test the sorting with");
    return check_done();
}
