/* build_rev.h — the revision of the sources this binary was built from, taken at every
 * build by cmake/build_rev.cmake ("<commit>", "<commit>-dirty-<hash of the changes>" or
 * "unknown"); stored with every run (runs.git_rev). */
#ifndef UG_BUILD_REV_H
#define UG_BUILD_REV_H
extern const char ug_build_rev[];
#endif
