/* xml.h — escaping text for XML and HTML attributes/content (&, <, >, ", '); with
 * ug_xml_escape_clean, text from a database (which may come from another machine) made
 * valid UTF-8 first, so the document stays well-formed whatever bytes were stored. */
#ifndef UG_XML_H
#define UG_XML_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

static inline void ug_xml_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') fputc(*s, f);
        }
    }
}

/* s as valid UTF-8 (core/utf8.h: every other byte as \xNN), escaped; without memory its
 * ASCII only. */
static inline void ug_xml_escape_clean(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    char *clean = malloc(4 * n + 1);
    if (clean) {
        ug_utf8_sanitize(s ? s : "", clean, 4 * n + 1);
        ug_xml_escape(f, clean);
        free(clean);
        return;
    }
    for (char c[2] = {0, 0}; s && *s; s++)
        if ((unsigned char)*s < 0x80) c[0] = *s, ug_xml_escape(f, c);
}

#endif
