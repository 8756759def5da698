#!/usr/bin/env bash
# test_layering.sh — the module layering holds in the code, not just in the docs:
#   include (the public headers: plugin ABI, library API) → core → gen → kernels / oracles → db
#   → run → reports / cli / api (libulpgym)
# 1. no source file includes a header of a module above its own (kernels and oracles,
#    peers, include neither of each other; cli may include reports, not the reverse);
# 2. no object file of the core library calls a function defined in a module above its
#    own (read off `nm`: undefined symbols against the objects defining them; the weak
#    references core/ops.c uses to register ops and variants are not calls);
# 3. no two source files call each other, directly or through a longer loop;
# 4. no two units (a .c with the .h of its name; a header alone is a unit of its own) include
#    each other, directly or through a longer loop: the loops item 3 cannot see, through
#    inline functions, macros and types (checked on the tree and on a planted two-unit loop).
# Exits 77 (skipped) when nm or python3 is missing or the objects are not where CMake puts them.
source "$(dirname "$0")/lib.sh"
command -v nm >/dev/null && command -v python3 >/dev/null || { echo "nm or python3 missing: skipped"; exit 77; }
OBJ="$(dirname "$UG_BIN")/CMakeFiles/ulpgym_core.dir"
LIBOBJ="$(dirname "$UG_BIN")/CMakeFiles/ulpgym_lib.dir" # the library's api/ objects, checked with the core's
[ -d "$OBJ" ] && [ -d "$LIBOBJ" ] || { echo "no object folder $OBJ or $LIBOBJ: skipped"; exit 77; }
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}

T="$T" python3 - "$SRC" "$OBJ" "$LIBOBJ" >"$T/report" 2>&1 <<'EOF'
import os, re, subprocess, sys
src, objdirs = sys.argv[1], sys.argv[2:]
level = {"include": -1, "core": 0, "gen": 1, "kernels": 2, "oracles": 2, "db": 3, "run": 4, "reports": 5, "cli": 5, "api": 5}
peers_apart = {("kernels", "oracles"), ("oracles", "kernels"), ("reports", "cli"),
               ("api", "cli"), ("cli", "api"), ("api", "reports"), ("reports", "api")}
def module(path): return path.split("/")[0]
def allowed(a, b):
    ma, mb = module(a), module(b)
    if ma == mb: return True
    if (ma, mb) in peers_apart: return False
    return level[ma] >= level[mb]
bad = 0
# 1. includes
for mod in level:
    for root, _, files in os.walk(os.path.join(src, mod)):
        for f in files:
            if not f.endswith((".c", ".h")): continue
            rel = os.path.relpath(os.path.join(root, f), src)
            for n, line in enumerate(open(os.path.join(src, rel), errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                # "ulpgym/..." is a public header of include/, the bottom floor
                target = m and ("include" if m.group(1) == "ulpgym" else m.group(1))
                if target in level and not allowed(rel, target + "/"):
                    print(f"include up: {rel}:{n} includes {target}/"); bad += 1
# 2. calls, from the objects
defined, uses = {}, {}
for obj, root, files in ((d, r, fs) for d in objdirs for r, _, fs in os.walk(d)):
    for f in files:
        if not f.endswith(".c.o"): continue
        o = os.path.join(root, f)
        rel = os.path.relpath(o, obj)[:-2]
        if module(rel) not in level or not os.path.exists(os.path.join(src, rel)): continue  # stale object
        out = subprocess.run(["nm", o], capture_output=True, text=True).stdout
        uses[rel] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRB": defined[parts[2]] = rel
            elif len(parts) == 2 and parts[0] == "U": uses[rel].add(parts[1])
edges = {a: {defined[s] for s in syms if s in defined and defined[s] != a} for a, syms in uses.items()}
for a, bs in sorted(edges.items()):
    for b in sorted(bs):
        if not allowed(a, b): print(f"call up: {a} calls into {b}"); bad += 1
# 3. loops between files (Tarjan's strongly connected components), of calls here, of includes in 4.
def loops(edges):
    index, low, stack, on, found = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: found.append(sorted(comp))
    for v in sorted(edges):
        if v not in index: visit(v)
    return found
sys.setrecursionlimit(10000)
for comp in loops(edges): print("call loop: " + " <-> ".join(comp)); bad += 1
# 4. include loops between units (a .c with its .h); an include resolves against the root, the
#    including file's folder, then include/
def include_edges(root, mods):
    files = set()
    for mod in mods:
        for r, _, fs in os.walk(os.path.join(root, mod)):
            files.update(os.path.relpath(os.path.join(r, f), root) for f in fs if f.endswith((".c", ".h")))
    unit = lambda p: os.path.splitext(p)[0]
    out = {}
    for rel in sorted(files):
        for line in open(os.path.join(root, rel), errors="replace"):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m: continue
            t = next((c for c in (m.group(1), os.path.join(os.path.dirname(rel), m.group(1)),
                                  os.path.join("include", m.group(1))) if c in files), None)
            if t and unit(t) != unit(rel): out.setdefault(unit(rel), set()).add(unit(t))
    return out
inc = include_edges(src, list(level) + ["fuzz"])
for comp in loops(inc): print("include loop: " + " <-> ".join(comp)); bad += 1
planted = os.environ["T"] + "/planted"  # x.c includes y.h and y.c x.h: one loop, named
os.makedirs(planted + "/core", exist_ok=True)
for a, b in (("x", "y"), ("y", "x")):
    open(f"{planted}/core/{a}.c", "w").write(f'#include "core/{b}.h"\n')
    open(f"{planted}/core/{a}.h", "w").write("")
if loops(include_edges(planted, ["core"])) != [["core/x", "core/y"]]:
    print("the include-loop check missed a planted loop"); bad += 1
print(f"{len(edges)} objects, {sum(len(b) for b in edges.values())} file-level call edges, "
      f"{sum(len(b) for b in inc.values())} unit include edges, {bad} violations")
sys.exit(1 if bad else 0)
EOF
status=$?
cat "$T/report"
if [ $status = 0 ]; then ok; else bad "layering violations (above)"; fi
expect_grep '^[0-9]+ objects, [1-9][0-9]* file-level call edges, [1-9][0-9]* unit include edges' "$T/report"
finish
