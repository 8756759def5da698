# test_thresholds_json.sh — every stored thresholds text is JSON, also where a figure is not
# finite: an fp16 flash_attention_mha case whose v values (30000..65000) overflow the naive fp16
# benchmark evaluation gives o an infinite benchmark max_abs_limit, stored as null (it was the
# bare token `inf`, which no JSON reader parses: sqlite's json_extract refused the whole text).
. "$(dirname "$0")/lib.sh"
DB=$T/t.db
q() { sqlite3 "$DB" "$1"; }
command -v sqlite3 >/dev/null || { echo "sqlite3 missing: skipped"; exit 77; }
cat >"$T/plan.json" <<'JSON'
{"name":"thresholds_json","version":1,"seed":2571601493866232,"cases":[
 {"op":"flash_attention_mha","dtype":"fp16","params":{"head_dim":64,"heads":1,"seqlens":"20:129"},
  "dist":{"q":{"kind":"normal","mean":0,"std":1},"k":{"kind":"normal","mean":0,"std":1},
          "v":{"kind":"uniform","lo":30000,"hi":65000}}}]}
JSON
expect_status 0 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --quiet -j1
expect_eq "$(q "select count(*) >= 9 from verdicts")" 1 "a verdict row per standard"
expect_eq "$(q "select count(*) from verdicts where not json_valid(thresholds)")" 0 "thresholds texts that are not JSON"
expect_eq "$(q "select json_type(thresholds, '$.o.max_abs_limit') from verdicts where standard = 'benchmark'")" null \
    "o's infinite benchmark limit"
expect_eq "$(q "select json_type(thresholds, '$.lse.max_abs_limit') from verdicts where standard = 'benchmark'")" real \
    "lse's finite limit stays a number"
finish
