/* utf8.h — text from outside (a plugin's or a device's message, a command line) made
 * safe for every report format before it is stored: valid UTF-8 is kept, every other
 * byte is written as the four characters \xNN, so JUnit stays well-formed XML and JSON
 * stays UTF-8 while no byte of the original is lost. */
#ifndef UG_UTF8_H
#define UG_UTF8_H
#include <stddef.h>

/* Writes in's sanitised text into out (outlen > 0; always NUL-terminated, cut only
 * between characters). Kept: tab, newline, carriage return and every valid UTF-8
 * character XML 1.0 allows; escaped as \xNN: other control bytes, bytes of invalid,
 * overlong, surrogate or truncated sequences, and U+FFFE / U+FFFF. Returns 1 when it
 * changed or cut anything, else 0. */
int ug_utf8_sanitize(const char *in, char *out, size_t outlen);
/* What is wrong with s as a name or text that reaches the database and every report (a
 * plan's name, a case's source or note, a spec's strings): NULL when it is valid UTF-8
 * without control characters (C0, DEL, C1 U+0080..U+009F), else "holds a control
 * character" or "is not valid UTF-8". Input is refused with it; nothing is rewritten. */
const char *ug_utf8_plain_problem(const char *s);

#endif
