/* found.c — see found.h. */
#include "run/found.h"
#include "gen/case.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef UG_SOURCE_DIR
#define UG_SOURCE_DIR "."
#endif

const char *ug_found_dir(void)
{
    static char buf[1024];
    const char *d = getenv("ULPGYM_DATA");
    snprintf(buf, sizeof buf, "%s/corpus/found", d && *d ? d : UG_SOURCE_DIR);
    return buf;
}

static int mkdirs(const char *path)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

size_t ug_found_append(ug_plan *plan, const unsigned char *ops, unsigned groups)
{
    size_t added = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!ug_op_def_get(op) || (ops && !ops[op]) || (groups && !(groups >> ug_op_group(op) & 1u))) continue;
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/%s", ug_found_dir(), ug_op_name(op));
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strstr(e->d_name, ".json")) continue;
            char path[1400], *text = NULL;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            FILE *f = fopen(path, "rb");
            if (f) {
                text = calloc(1, 1 << 16);
                if (text && fread(text, 1, (1 << 16) - 1, f) == 0) text[0] = 0;
                fclose(f);
            }
            ug_spec s;
            char err[256];
            if (!text || ug_spec_parse(text, &s, err, sizeof err)) {
                free(text);
                continue; /* test_found reports unreadable findings */
            }
            int dup = 0;
            for (size_t i = 0; i < plan->n && !dup; i++) dup = strcmp(plan->cases[i].id, s.id) == 0;
            ug_plan_case *grown = dup ? NULL : realloc(plan->cases, (plan->n + 1) * sizeof *plan->cases);
            if (grown) {
                plan->cases = grown;
                ug_plan_case *c = &plan->cases[plan->n++];
                c->spec = strdup(s.canonical);
                snprintf(c->id, sizeof c->id, "%s", s.id);
                c->op = s.op;
                c->origin = "fuzz";
                added++;
            }
            ug_spec_free(&s);
            free(text);
        }
        if (d) closedir(d);
    }
    return added;
}

int ug_found_store(const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err, size_t errlen)
{
    ug_spec s;
    ug_case c;
    char inner[512];
    if (ug_spec_parse(spec_text, &s, inner, sizeof inner)) {
        snprintf(err, errlen, "not a case spec: %s", inner);
        return -2;
    }
    snprintf(id, UG_ID_LEN + 1, "%s", s.id);
    char *canonical = strdup(s.canonical);
    int op = s.op;
    int rc = ug_case_build(&c, &s, inner, sizeof inner);
    ug_case_free(&c);
    if (rc) {
        snprintf(err, errlen, "case %s does not build: %s", id, inner);
        free(canonical);
        return -2;
    }
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s/%s", ug_found_dir(), ug_op_name(op));
    snprintf(path, sizeof path, "%s/%s.json", dir, id);
    FILE *f = mkdirs(dir) == 0 ? fopen(path, "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        free(canonical);
        return -1;
    }
    fprintf(f, "%s\n", canonical);
    rc = fclose(f) ? -1 : 0;
    if (!rc && db) rc = ug_db_put_case(db, id, canonical, "fuzz", err, errlen);
    free(canonical);
    return rc;
}
