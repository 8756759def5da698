/* paths.h — where ulpgym is: its data folder, the command that runs it, its version.
 *
 * The same code runs as the `ulpgym` program and as libulpgym.so (loaded by Python). Both
 * find their files from where their own image lies, never from the folder they were built
 * in alone, so an installed tree works from any prefix, moved or with the sources gone:
 *   PREFIX/bin/ulpgym, PREFIX/lib/libulpgym.so  ->  data in PREFIX/share/ulpgym
 *   BUILD/ulpgym, BUILD/libulpgym.so (a build folder) -> data in the source tree it was built from
 * and a printed command line names the program so that it pastes: "ulpgym" when that name
 * on $PATH is this very program, else its absolute path, shell-quoted. */
#ifndef UG_PATHS_H
#define UG_PATHS_H
#include <stddef.h>

/* The data folder (gen/plans, gen/ops, corpus/found): $ULPGYM_DATA, else the installed
 * PREFIX/share/ulpgym beside this image, else the source tree of the build folder it lies in
 * (or, last, the source tree it was built from when that still exists); "" when none is
 * found (a plan then fails to load, naming $ULPGYM_DATA). Static; computed once. */
const char *ug_data_dir(void);
/* How this image was found: "env" ($ULPGYM_DATA), "installed", "build" or "none". */
const char *ug_data_dir_origin(void);
/* The shell word that runs the ulpgym command line: "ulpgym" when $PATH finds this program
 * (or, from the library, the program installed beside it), else that program's absolute
 * path, shell-quoted. Static; computed once. */
const char *ug_self_command(void);
/* s as one POSIX shell word: in single quotes, each ' written as '\'' (malloc'd; NULL
 * without memory). */
char *ug_shell_quote(const char *s);
/* The paste-ready command that triages case_id as run `run` judged it:
 *   SELF triage ID --db /abs/db [--run R] [--backend PLUGIN]
 * every argument shell-quoted (the ID too: it may come from a database made elsewhere);
 * db_path made absolute (NULL: left out, the default database); run <= 0 left out;
 * backend given only when it loads code (a plugin: triage never runs a database's plugin
 * unasked); a replay run's stored outputs are found by triage itself. malloc'd; NULL
 * without memory. */
char *ug_triage_line(const char *case_id, const char *db_path, long run, const char *backend);
/* s as it is when every character is safe in a shell word (letters, digits, / . _ - + , : @ % =),
 * else ug_shell_quote(s); "" quoted. malloc'd; NULL without memory. */
char *ug_shell_word(const char *s);
/* "ulpgym VERSION (git REV, plugin ABI N, API N)". Static. */
const char *ug_version_line(void);

#endif
