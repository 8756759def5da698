/* replay.h — the replay bridge: a case's inputs out to files, a device's outputs back in.
 *
 * For kernels that live in a stack ulpgym cannot load (PyTorch on an NPU, a CUDA
 * program on another machine) the case travels as files. One case is one folder:
 *     D/case.json          format "ulpgym-replay/1": case ID, full spec, and for every
 *                          tensor its name, dtype, shape, .npy type and file
 *     D/inputs/<name>.npy  the inputs, bit for bit (bf16 as '<u2', fp8/e8m0 as '|u1' raw bits)
 *     D/outputs/<name>.npy written by the device, one file per output, same conventions
 *     D/outputs/unsupported.txt | error.txt   instead, when the device declines or fails
 * (mirroring the plugin ABI's 1 "unsupported" and <0 "error"). Inputs and outputs live in
 * separate folders so an output named like an input (a cache updated in place) can never
 * be mistaken for it, and re-exporting clears stale outputs. The spec in case.json is
 * authoritative: checking rebuilds the case from it (inputs regenerate bit for bit) and
 * verifies that it still hashes to the recorded ID. */
#ifndef UG_REPLAY_H
#define UG_REPLAY_H
#include <stddef.h>

#include "core/registry.h"

#define UG_REPLAY_FORMAT "ulpgym-replay/1"

/* Writes case.json and inputs/ into dir (created with parents), creates outputs/ and
 * removes any output files a previous export left there. -1 on an I/O error. */
int ug_replay_export(const ug_case *c, const char *dir, char *err, size_t errlen);

/* Keeps a judged case's outputs where `ulpgym triage` finds them again (the library's
 * recorder): dir/case.json and dir/outputs/<name>.npy for each output the kernel provided,
 * or outputs/unsupported.txt (status 1) / error.txt (status -1) holding reason; no inputs
 * (they regenerate from the spec). Stale output files are removed first; nothing is
 * written through a link. -1 on an I/O error. */
int ug_replay_keep_outputs(const ug_case *c, int status, const char *reason, const char *dir, char *err, size_t errlen);

/* Reads dir/case.json: the spec as text (malloc'd) and the recorded case ID, after
 * checking that the spec still hashes to that ID. -2 with a message naming the file. */
int ug_replay_read_spec(const char *dir, char **spec_text, char id[UG_ID_LEN + 1], char *err, size_t errlen);

/* Fills every output of c from dir/outputs/<name>.npy, checking .npy type and shape
 * against the case; an optional output without a file keeps its sentinel (not provided,
 * core/registry.h). Returns 0 loaded, 1 the device wrote outputs/unsupported.txt, -1 it
 * wrote outputs/error.txt (err holds the file's first line in both cases), -2 when a
 * required output file is missing or a file is malformed (err names the file and the problem). */
int ug_replay_load_outputs(ug_case *c, const char *dir, char *err, size_t errlen);

/* The folder of case id under root: root itself when root/case.json is that case, else
 * root/<id> (what `ulpgym export --plan` writes). -2 when neither exists. */
int ug_replay_case_dir(const char *root, const char *id, char *out, size_t outlen, char *err, size_t errlen);

#endif
