# test_plugin_install.sh — `cmake --install` (with DESTDIR) puts the public header where
# a plugin author's compiler finds it, and a plugin compiled against the installed
# header alone (no ulpgym source tree) loads and answers: its "unsupported" is SKIP.
. "$(dirname "$0")/lib.sh"
BUILD=$(dirname "$UG_BIN")
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null || ! command -v cmake >/dev/null; then
    echo "no C compiler or cmake on PATH: the installed header is not checked (skipped)"
    exit 77
fi
expect_status 0 env DESTDIR="$T/dest" cmake --install "$BUILD" --prefix /opt/ug
P=$T/dest/opt/ug
for f in include/ulpgym/kernel_abi.h bin/ulpgym bin/ulpgym_replay_plugin lib/ulpgym/libulpgym_plugin_sim.so \
    share/ulpgym/examples/replay_numpy.py share/doc/ulpgym/PLUGINS.md; do
    if [ -e "$P/$f" ]; then ok; else bad "not installed: $f"; fi
done
cat >"$T/mine.c" <<'EOC'
#include <stdio.h>
#include <ulpgym/kernel_abi.h>
ULPGYM_EXPORT int ulpgym_abi_version(void) { return ULPGYM_ABI_VERSION; }
ULPGYM_EXPORT int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen)
{
    snprintf(err, errlen, "mine: %s has %d inputs, first %s", call->op, (int)call->n_inputs, call->inputs[0].name);
    return ULPGYM_UNSUPPORTED;
}
EOC
expect_status 0 "$CC" -std=c99 -Wall -Werror -fvisibility=hidden -shared -fPIC -I"$P/include" "$T/mine.c" -o "$T/libmine.so"
expect_status 0 "$P/bin/ulpgym" sweep --db "$T/i.db" --quiet --op attn_softmax --limit 2 --backend "plugin:$T/libmine.so"
expect_eq "$(sqlite3 "$T/i.db" "select group_concat(verdict || ' ' || message, '|') from results")" \
    "SKIP unsupported: mine: attn_softmax has 2 inputs, first x|SKIP unsupported: mine: attn_softmax has 2 inputs, first x" \
    "a plugin built from the installed header"
expect_status 0 "$P/bin/ulpgym" sweep --db "$T/i.db" --quiet --limit 3 --backend "plugin:$P/lib/ulpgym/libulpgym_plugin_sim.so"
expect_eq "$(sqlite3 "$T/i.db" "select n_pass from runs where run_id = 2")" 3 "the installed sample plugin passes"
finish
