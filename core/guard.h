/* guard.h — guarded buffers: how every input and output tensor of a case is laid out in
 * memory so that a kernel writing (or reading) outside it is caught, and named.
 *
 * A buffer is its own mapping:
 *
 *     [PROT_NONE page][head canary >= 64 B][data, 64-byte aligned][tail canary 64..127 B][PROT_NONE page]
 *
 * The data ends UG_GUARD_SLACK bytes (plus its rounding up to UG_GUARD_ALIGN) before the
 * trailing guard page, so a vector load that reads a few bytes past the last element is
 * harmless, a stray write near either end lands in a canary (checked after the kernel:
 * "wrote before/after output y", an ERROR), and a long overrun or underrun faults in a
 * guard page at once (the worker's CRASH; ug_guard_describe_fault names the buffer). An
 * input's data is also summed before the kernel and compared after ("modified input x").
 * docs/SWEEP.md, "What a plugin can and cannot do to a sweep", states the guarantees. */
#ifndef UG_GUARD_H
#define UG_GUARD_H
#include <stddef.h>
#include <stdint.h>

#define UG_GUARD_ALIGN 64 /* the data's alignment, promised by kernel_abi.h */
#define UG_GUARD_SLACK 64 /* canary bytes at least, before and after the data */

typedef struct {
    void *map; /* the whole mapping, guard pages included; NULL when none */
    size_t map_len;
    void *data; /* bytes of zeros at allocation, UG_GUARD_ALIGN aligned */
    size_t bytes;
    uint64_t sum; /* ug_guard_seal's digest of the data */
    int sealed;
} ug_guard_buf;

/* Maps a guarded buffer of bytes zeroed bytes (or reuses a freed one of about its size,
 * up to 1 MiB, zeroed again); what ("output y", "input x", at most 47 characters kept)
 * names it in fault reports. 0, or -1 with errno set. Not thread-safe: cases are built and
 * freed by one thread, never while a kernel runs. */
int ug_guard_alloc(ug_guard_buf *g, size_t bytes, const char *what);
void ug_guard_free(ug_guard_buf *g); /* safe on a zeroed buffer; keeps up to 16 MiB for reuse */
/* Quarantine from now on (off until called): a buffer freed is handed out again only after
 * the next 8 frees and, when ms > 0, ms milliseconds, and meanwhile stays inaccessible, so a
 * thread of a plugin still writing through an old pointer faults (named) instead of landing
 * in a later case's tensor. Off, a freed buffer stays accessible and may be handed out again
 * at once (no mprotect per tensor): right for built-in kernels, which run no threads. */
void ug_guard_quarantine(double ms);
/* The most resident bytes a freshly mapped buffer costs beyond its data (canaries, rounding
 * to a page), for the case memory estimate; the guard pages themselves are never resident.
 * A reused buffer may be a little larger: the excess comes out of the 16 MiB kept. */
size_t ug_guard_overhead(void);

/* Canary damage: bit 1 if bytes before the data changed, bit 2 if bytes after it. */
#define UG_GUARD_BEFORE 1
#define UG_GUARD_AFTER 2
int ug_guard_canaries(const ug_guard_buf *g);
/* Records the digest of the data (before a kernel runs); ug_guard_changed says whether the
 * data differs from it now (0 for a buffer never sealed). */
void ug_guard_seal(ug_guard_buf *g);
int ug_guard_changed(const ug_guard_buf *g);
/* A malloc'd copy of the data, and the seal of that copy: the data as it was, which a later
 * write into the buffer cannot change, while ug_guard_changed still watches the buffer for
 * one. NULL (and the buffer sealed as it stands) without memory. */
void *ug_guard_snapshot(ug_guard_buf *g);

/* For a fault handler (async-signal-safe: no locks, no allocation, no stdio): when addr
 * lies in a guard page of a live buffer, writes "wrote past the end of output y" (access
 * "wrote", "read" or "accessed" when the fault does not say which; "before the start of"
 * for the leading page) into buf and returns 1; else 0 and buf is untouched. */
int ug_guard_describe_fault(const void *addr, const char *access, char *buf, size_t len);

#endif
