#!/usr/bin/env bash
# tightness_table.sh DB... — the tightness table of docs/STANDARDS.md from sweep databases:
# per op and numeric output, the worst headroom used ("used" in the stored thresholds) by a
# legal kernel (backend sim or sim:legal_*; mutant runs are left out) under the case's
# deciding standard and under certified, over every case of every database given, with the
# case that reached it. Fill the databases with `ulpgym sweep --seed S --no-regressions` and
# one `ulpgym sweep --op OP --backend sim:legal_X` per legal variant (what nightly.sh's
# self-check does); `ulpgym ops show OP --tightness` gives the same figures for one op and seed.
# Needs the sqlite3 shell. Output: a markdown table on stdout.
set -eu
[ $# -ge 1 ] || { echo "usage: scripts/tightness_table.sh DB..." >&2; exit 2; }
for db in "$@"; do
    [ -f "$db" ] && [ ! -L "$db" ] || { echo "tightness_table: $db is not a database file" >&2; exit 2; }
    sqlite3 -readonly -separator ' ' "file:$db?mode=ro" "
        select c.op, j.key, k.kind, json_extract(j.value, '$.used'), v.case_id, n.backend, r.primary_standard
        from verdicts v join results r using (run_id, case_id) join runs n using (run_id)
             join cases c using (case_id), json_each(v.thresholds) j,
             (select 'primary' as kind union all select 'certified') k
        where v.standard = (case k.kind when 'primary' then r.primary_standard else 'certified' end)
          and (n.backend = 'sim' or n.backend like 'sim:legal\_%' escape '\\')
          and json_type(j.value, '$.used') in ('integer', 'real')"
done | awk '
    { k = $1 " " $2 " " $3; if (!(k in w) || $4 + 0 > w[k] + 0) { w[k] = $4; at[k] = $5 " " $6 }
      prim[$1] = $7; outs[$1 " " $2] = 1 }
    END {
        print "| op | output | primary | worst under it (case, kernel) | worst under certified (case, kernel) |"
        print "|----|--------|---------|-------------------------------|--------------------------------------|"
        n = 0; for (o in outs) keys[++n] = o
        for (i = 2; i <= n; i++) { x = keys[i]; for (j = i - 1; j >= 1 && keys[j] > x; j--) keys[j + 1] = keys[j]; keys[j + 1] = x }
        for (i = 1; i <= n; i++) {
            split(keys[i], a, " "); p = keys[i] " primary"; c = keys[i] " certified"
            printf "| `%s` | `%s` | %s | %s | %s |\n", a[1], a[2], prim[a[1]],
                   (p in w) ? sprintf("%.3g (%s)", w[p], at[p]) : "-", (c in w) ? sprintf("%.3g (%s)", w[c], at[c]) : "-"
        }
    }'
