#!/usr/bin/env bash
# test_report_html.sh — the HTML report is a page people navigate, checked in a real headless
# browser (Debian's chromium; scripts/deps.sh installs it with ULPGYM_WITH_BROWSER=1; exit 77
# when none is installed). Two nights of one small plan through the same plugin backend
# (examples/plugin_sim, the sim kernels behind the public ABI): the first clean, the second
# with the plugin misbehaving (ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile leaves the tail tile
# out of the row sum), which only the one case whose length is not a multiple of 256 meets:
# a like-for-like run with one new failure. In the DOM Chromium builds of the second night's
# report: the changes section comes first and holds the new failure, linked to its triage
# block; every in-page link has its target; the heatmap cell leads to the failure list and
# the list to the triage block, which holds the case's triage line (pasted, it reproduces
# the failure); the trend keeps 100 % and 80 % apart and each op has a sparkline; nothing
# is wider than the window at 1400 and 800 px; nothing refers to anything outside the file.
. "$(dirname "$0")/lib.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no chromium: skipped (scripts/deps.sh installs it with ULPGYM_WITH_BROWSER=1)"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
PLUG=plugin:$(dirname "$UG_BIN")/examples/libulpgym_plugin_sim.so
db=$T/n.db
{
    echo '{"name":"html_nights","version":1,"seed":7,"cases":['
    sep=""
    for c in fp32:4:256 fp32:4:300 fp32:3:512 bf16:4:256 bf16:2:512; do
        IFS=: read -r dt rows cols <<<"$c"
        echo "$sep{\"op\":\"attn_softmax\",\"dtype\":\"$dt\",\"params\":{\"rows\":$rows,\"cols\":$cols},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
        sep=,
    done
    echo ']}'
} >"$T/plan.json"
night() { ug sweep --plan "$T/plan.json" --no-regressions --db "$db" --backend "$PLUG" --quiet --fail-on never; }
night >"$T/night1" 2>&1 || bad "night 1: $(tail -3 "$T/night1")"
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile night >"$T/night2" 2>&1 || bad "night 2: $(tail -3 "$T/night2")"
new=$(sqlite3 "$db" "select case_id from results where run_id = 2 and verdict <> 'PASS'")
expect_eq "$(sqlite3 "$db" "select count(*) from results where run_id = 1 and verdict = 'PASS'"):$(echo "$new" | wc -w)" \
    "5:1" "night 1 all PASS, night 2 one failure"

expect_status 0 ug report --db "$db" --run 1 --format html -o "$T/r1.html"
expect_grep 'No like-for-like run before this one' "$T/r1.html"
expect_status 0 ug report --db "$db" --run 2 --format html -o "$T/r2.html"
# nothing outside the file: no script, stylesheet, image, font or frame; every link in the page
if grep -qiE '<script|<link|<img|<iframe|src=|@import|url\(|href="[^#]' "$T/r2.html"; then
    bad "the report refers to something outside itself: $(grep -oiE '<script|<link|<img|<iframe|src=[^ ]*|@import|url\(|href="[^#][^"]*' "$T/r2.html" | head -3)"
else ok; fi

flags="--headless --no-sandbox --disable-gpu --user-data-dir=$T/chrome"
timeout 120 "$browser" $flags --dump-dom "file://$T/r2.html" >"$T/dom.html" 2>"$T/chrome.err"
[ -s "$T/dom.html" ] && ok || bad "chromium dumped no DOM: $(tail -3 "$T/chrome.err")"
python3 - "$T/dom.html" "$new" <<'PY' >"$T/dom.check" 2>&1 && ok || bad "the page's structure: $(cat "$T/dom.check")"
import sys
from html.parser import HTMLParser

class Page(HTMLParser):
    """Element ids and hrefs in document order, and each element with an id's text and tag path."""
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs, self.order, self.stack, self.text = {}, [], [], [], {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in ("br", "meta", "input", "hr", "img", "link"):  # HTML's void elements
            self.stack.append((tag, a.get("id")))
        if a.get("id"):
            self.ids[a["id"]] = tag
            self.order.append(a["id"])
            self.text.setdefault(a["id"], "")
        if "href" in a:
            self.hrefs.append((a["href"], [i for _, i in self.stack if i]))
    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids[a["id"]] = tag
        if "href" in a:
            self.hrefs.append((a["href"], [i for _, i in self.stack if i]))
    def handle_endtag(self, tag):
        while any(t == tag for t, _ in self.stack):
            if self.stack.pop()[0] == tag:
                break
    def handle_data(self, data):
        for _, i in self.stack:
            if i:
                self.text[i] += data

p = Page()
p.feed(open(sys.argv[1], encoding="utf-8").read())
new = sys.argv[2]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

# every in-page link resolves
for href, _ in p.hrefs:
    check(href.startswith("#") and href[1:] in p.ids, f"link {href} has no target")
# the changes section leads, and the new failure is in it, linked to its triage block
sections = [i for i in p.order if p.ids[i] == "section"]
check(sections[:2] == ["changes", "summary"], f"sections in order {sections}")
check("Since run 1 (like for like)" in p.text.get("changes", ""), "no 'Since run 1 (like for like)'")
check("1 new failures" in " ".join(p.text.get("changes", "").split()), "the changes do not count 1 new failure")
in_changes = [h for h, inside in p.hrefs if "changes" in inside]
check(f"#case-{new}" in in_changes, f"the changes section does not link the new failure {new}")
# heatmap cell -> that op x dtype's list -> the triage block
cell = "fail-attn_softmax-fp32"
check(any(h == "#" + cell and "heatmap" in inside for h, inside in p.hrefs), "the fp32 heatmap cell has no link")
check(any(h == f"#case-{new}" and "by-cell" in inside for h, inside in p.hrefs), "the cell's list does not link the case")
check(any(h == f"#case-{new}" and "failures" in inside for h, inside in p.hrefs), "the top failures do not link the case")
# the triage block: its deciding figure, thresholds, the triage line, the reproduce line
block = " ".join(p.text.get(f"case-{new}", "").split())
check(p.ids.get(f"case-{new}") == "article", "no triage block for the new failure")
for want in (f"triage {new} --db ", " --run 2", "What decided: y: ", "outside the certified bound", "certified: thresholds",
             "used ", "case --backend ", "--spec "):
    check(want in block, f"the triage block lacks {want!r}: {block[:300]}")
# the trend keeps 100 % and 80 % apart; one sparkline per op
check("run 1 GreenLight: 100.00%" in open(sys.argv[1]).read() and "run 2 GreenLight: 80.00%" in open(sys.argv[1]).read(),
      "the trend's points")
if errors:
    print("\n".join(errors))
    sys.exit(1)
PY
# the triage line in the block, pasted into sh with the plugin misbehaving again, reproduces the failure
line=$(python3 -c 'import sys,re,html; d=open(sys.argv[1]).read(); b=d[d.index("id=\"case-"+sys.argv[2]+"\""):]; print(html.unescape(re.search(r"<pre class=\"cmd triage-line\">(.*?)</pre>", b, re.S).group(1)))' \
    "$T/dom.html" "$new")
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile sh -c "$line" >"$T/pasted" 2>&1
expect_grep 'reproduced exactly' "$T/pasted"
# the trend's two points sit apart on the zoomed axis; the op table has a sparkline
ys=$(grep -o '<circle cx="[0-9.]*" cy="[0-9.]*" r="3"[^>]*><title>run [12] ' "$T/r2.html" | sed 's/.*cy="\([0-9.]*\)".*/\1/' | sort -u | wc -l)
expect_eq "$ys" 2 "the trend's 100 % and 80 % at different heights"
expect_eq "$(grep -o 'class="spark"' "$T/r2.html" | wc -l)" 1 "one sparkline per op"

# nothing wider than the window
expect_page_fits "$browser" "$T/r2.html" 1400 800
finish
