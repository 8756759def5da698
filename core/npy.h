/* npy.h — a small, strict reader and writer of NumPy .npy files (format 1.0, 2.0, 3.0).
 *
 * The replay bridge hands a case's tensors to any device stack as .npy and reads the
 * outputs it wrote back the same way. Only what that needs is accepted: C-order arrays
 * of one little-endian scalar type ('<f4', '<f2', '<u2', '|u1', '|i1', '<i4', and '<f8'
 * for the exact values triage dumps); bf16 and the fp8 formats travel as their raw
 * unsigned bits ('<u2', '|u1'), named in case.json.
 * Everything else (bad magic, a header that is not the documented dict, Fortran order,
 * big-endian or structured dtypes, a truncated or overlong data block) is refused with a
 * sentence saying what is wrong. The parser is a pure function over a byte buffer so a
 * fuzz target can drive it; it never reads past len and never allocates. */
#ifndef UG_NPY_H
#define UG_NPY_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UG_NPY_MAX_DIMS 8

typedef struct {
    char descr[8]; /* normalised: "<f4", "<f2", "<u2", "|u1", "|i1", "<i4", "<f8" */
    int itemsize;  /* bytes per element */
    int ndim;      /* 0 for a scalar array */
    int64_t shape[UG_NPY_MAX_DIMS];
    size_t numel;
    const void *data; /* points into the parsed buffer */
    size_t data_len;  /* numel * itemsize */
} ug_npy;

/* Parses a whole .npy file held in buf[0..len). 0 ok (out->data points into buf), -2
 * with a sentence in err on any malformed or unsupported input. */
int ug_npy_parse(const void *buf, size_t len, ug_npy *out, char *err, size_t errlen);

/* Files are read by their header first: ug_npy_open opens path, refuses anything but a
 * regular file (a link to /dev/zero, a FIFO, a folder), parses the header (at most
 * UG_NPY_MAX_HEADER bytes) and checks the file's size against it without reading the
 * data; *fd is then at the data (out->data NULL, out->data_len its bytes), for the caller
 * to check descr and shape against what it expects before ug_npy_read_data reads exactly
 * len bytes into dst and closes fd. Errors name the file; -2 on any. */
#define UG_NPY_MAX_HEADER (1u << 20)
int ug_npy_open(const char *path, ug_npy *out, int *fd, char *err, size_t errlen);
int ug_npy_read_data(const char *path, int fd, void *dst, size_t len, char *err, size_t errlen);
/* Both in one: *buf receives the file's bytes (free it when done with out->data). */
int ug_npy_read_file(const char *path, void **buf, ug_npy *out, char *err, size_t errlen);

/* Writes a C-order array (format 1.0, header padded to 64 bytes). descr must be one of
 * the supported type strings; data holds prod(shape) elements. -1 on an I/O error. */
int ug_npy_write_file(const char *path, const char *descr, int ndim, const int64_t *shape, const void *data, char *err,
                      size_t errlen);

/* Opens path for writing ("wb"), created or truncated, never through a symbolic link: a link
 * at path is refused (errno ELOOP), so a folder from another machine cannot redirect a write.
 * Every file the replay bridge and the library write goes through it. NULL with errno set. */
FILE *ug_file_create(const char *path);

/* The .npy type string that stores elements of ulpgym dtype dt (enum ug_dtype /
 * enum ulpgym_dtype numbering) bit for bit, or NULL. */
const char *ug_npy_descr_of_dtype(int dt);

#endif
