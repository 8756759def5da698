/* fuzz_db.c — libFuzzer target: a corrupted database file must be refused with a message
 * or, if SQLite accepts it, read without crashing (history and report queries). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "db/store.h"
#include "reports/report.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/ulpgym_fuzz_db_%d.db", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    ug_db *db;
    char err[512] = "";
    if (ug_db_open(path, 0, &db, err, sizeof err) == 0) {
        long run;
        ug_report r;
        if (ug_db_resolve_run(db, "latest", &run, err, sizeof err) == 0 &&
            ug_report_gather(db, run, 10, UG_DRIFT_FACTOR_DEFAULT, &r, err, sizeof err) == 0) {
            FILE *null = fopen("/dev/null", "w");
            if (null) {
                ug_report_write_md(&r, null);
                ug_report_write_html(&r, null);
                fclose(null);
            }
            ug_report_free(&r);
        }
        ug_db_close(db);
    } else if (!err[0]) {
        abort(); /* a refusal must say why */
    }
    unlink(path);
    char wal[80];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    return 0;
}
