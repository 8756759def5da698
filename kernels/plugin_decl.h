/* plugin_decl.h — a plugin's optional declaration of what its kernel for an op implements
 * (ulpgym_implements, kernel_abi.h), held against one case's params: a kernel written to an
 * older contract gets SKIP for a param it never knew, never a FAIL or CRASH it did not earn. */
#ifndef UG_PLUGIN_DECL_H
#define UG_PLUGIN_DECL_H
#include <stddef.h>

/* decl: the plugin's text for op (NULL: none, every case runs); params_json: the case's
 * params with every default written in (what ulpgym_run receives). Returns 0 the case is
 * inside the declaration; 1 it is not, with the reason in err (the case is SKIP); -1 the
 * declaration is malformed, with the reason in err (the case is ERROR). */
int ug_plugin_declines(const char *decl, const char *op, const char *params_json, char *err, size_t errlen);

#endif
