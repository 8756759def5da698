/* internal.h — what the files of db/ share and nothing outside db/ may include.
 *
 * The store is split by concern (store.c: open, migrations, writes; merge.c: joining
 * shard databases; query_*.c: the read-only queries of the commands and reports), and
 * all of them work on the one connection behind ug_db. This header opens that struct
 * and the few statement helpers to those files only, so SQLite stays behind db/. */
#ifndef UG_DB_INTERNAL_H
#define UG_DB_INTERNAL_H
#include <stddef.h>

#include <sqlite3.h>

/* The handle store.h declares (a C11 typedef may be repeated): the struct is opened here
 * without this header depending on store.h, which store.c implements on it. */
typedef struct ug_db ug_db;

struct ug_db {
    sqlite3 *h;
    sqlite3_stmt *put_result, *put_metric, *put_verdict, *put_case;
    char *path; /* as opened: messages name the database */
};

/* Opens path read-only for a reader. A write-protected file (no write bit, or not writable
 * by this process) with no -wal beside it (closed cleanly: every row is in the main file)
 * is opened immutable, so SQLite leaves no -wal/-shm beside it that it could not remove
 * again; otherwise plainly (a -wal may hold rows a crash left un-checkpointed). Returns
 * an SQLite result code. */
int ug_db_sqlite_open_ro(const char *path, sqlite3 **h);
/* Prepares sql on db's connection: 0, or -1 with "database: <sqlite's message>" in err
 * (ug_db_damaged's message when the schema itself is damaged). */
int ug_db_prepare(ug_db *db, sqlite3_stmt **st, const char *sql, char *err, size_t errlen);
/* ug_db_prepare for an INSERT of a run's row (runs, bench_runs): ?1 bound to the time now
 * (ug_db_now) and this host's name in host[hostlen] (for the caller to bind). */
int ug_db_prepare_stamped(ug_db *db, sqlite3_stmt **st, const char *sql, char *host, size_t hostlen, char *err,
                          size_t errlen);
/* Steps a statement that returns no rows, then resets it and clears its bindings (so a
 * cached statement is ready again): 0 on SQLITE_DONE, else -1 with the message in err. */
int ug_db_step_done(ug_db *db, sqlite3_stmt *st, char *err, size_t errlen);
/* Steps a query that returns rows: 1 a row is ready, 0 done; -2 the database is damaged
 * (SQLITE_CORRUPT, met at any row, not only the first), with ug_db_damaged's message in
 * err; -1 another error, "database PATH: <SQLite's message>". Every query loops on it and
 * passes a negative value up (the rows read so far are not the whole answer), so a damaged
 * database never reads as a smaller clean one:
 *     while ((s = ug_db_step_row(db, st, err, errlen)) == 1) { ... }
 *     if (s < 0) return s; */
int ug_db_step_row(ug_db *db, sqlite3_stmt *st, char *err, size_t errlen);
/* "database PATH is damaged: run `sqlite3 PATH 'pragma integrity_check'` (why)" into err:
 * the one wording of a damaged database (why: SQLite's message or quick_check's first line). */
void ug_db_damaged(const char *path, const char *why, char *err, size_t errlen);
/* Whether an SQLite result code says the file is damaged (SQLITE_CORRUPT, any extended form). */
int ug_db_code_damaged(int code);
/* Binds text from outside ulpgym (a kernel's or device's message, a command line, a host
 * name) as valid UTF-8, every other byte kept as \xNN (core/utf8.h): what is stored can be
 * written into every report format. NULL binds NULL. */
void ug_db_bind_outside_text(sqlite3_stmt *st, int i, const char *s);
/* Copies text column i of the current row into buf (len bytes); NULL reads as "". */
void ug_db_col_text(sqlite3_stmt *st, int i, char *buf, size_t len);

#endif
