/* test_found.c — the fuzzer findings kept as regression cases (corpus/found/OP/ID.json):
 * each is a valid spec that passes with the correct sim kernel and fails with at least one
 * of its op's beyond-plan mutants, and every beyond-plan mutant is caught by at least one
 * finding. Together with test_plan_<op> (which asserts the plan misses those mutants) this
 * shows the fuzzer reaches what the plan does not. */
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

int main(void)
{
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
                if (ug_op_variants(d->op)[v].beyond_plan && run(spec, ug_op_variants(d->op)[v].name) != UG_OUT_PASS) caught[v] = any = 1;
            CHECK(any || nbeyond == 0, "%s is caught by none of %s's beyond-plan mutants", path, ug_op_name(op));
            free(spec);
        }
        if (dh) closedir(dh);
        for (int v = 0; ug_op_variants(d->op)[v].name && v < 32; v++)
            if (ug_op_variants(d->op)[v].beyond_plan)
                CHECK(caught[v], "no finding in %s catches beyond-plan mutant %s (run `ulpgym fuzz %s --kernel-variant %s`)",
                      dir, ug_op_variants(d->op)[v].name, ug_op_name(op), ug_op_variants(d->op)[v].name);
        if (nfound || nbeyond) printf("%s: %d findings, %d beyond-plan mutants\n", ug_op_name(op), nfound, nbeyond);
    }
    return check_done();
}
