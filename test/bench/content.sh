#!/usr/bin/env bash
# test/bench/content.sh: quality and speed of the HTML formats
# (`make bench-content CORPUS=dir`).
#
# Usage: test/bench/content.sh CORPUS [--pages]
#
# CORPUS is a directory of real pages with ground truth: NNN.html (the
# page's bytes, in whatever charset it came in), NNN.txt (the page's main
# text, UTF-8) and optionally manifest.tsv (tab-separated, with a header
# line; columns id, http_content_type — the Content-Type the page is served
# with — and page_type are used).  The development split of the WCXB
# benchmark (Web Content eXtraction Benchmark) has this shape.
#
# Serves the pages on loopback with their Content-Type, starts a scratch
# cluster with a private install of the extension, and then
#   1. fetches every page with web_fetch() in each format (text, article,
#      markdown), so charset detection is part of what is scored, and
#      scores the output against NNN.txt by bag of words (test/bench/bow.py);
#   2. times html_to_text() over the same pages stored in a table, inside
#      the server (no network, no transfer to psql): MB of HTML per second
#      of the backend's CPU time (one core; other work on the machine does
#      not count), the median of QC_RUNS runs (default 3) of QC_REPEAT
#      passes (default 5) over the pages.
#   3. re-encodes every page whose manifest gives its file_encoding into each
#      of QC_CHARSETS (default: 13 charsets of East Asian, Cyrillic, Central
#      European and Greek pages, and UTF-16), declared only by a <meta> at
#      the top (see corpus_server.py), fetches each with web_fetch(url,
#      'article') and counts the outputs that are identical to the page's
#      own: what a page becomes must not depend on its charset.
# It is a benchmark, not a test: it prints figures and asserts nothing.
# QC_BENCH_OUT=dir keeps every output as dir/FORMAT/NNN.out; --pages prints
# per-page figures too; QC_FORMATS="article" scores only the formats named.
# Besides the means it prints F1 by page type and by half (odd and even page
# numbers).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

corpus=${1:-}
if [ -z "$corpus" ] || [ ! -d "$corpus" ] || ! ls "$corpus"/[0-9]*.txt >/dev/null 2>&1; then
	echo "usage: $0 CORPUS [--pages]  (CORPUS holds NNN.html, NNN.txt, manifest.tsv)" >&2
	exit 2
fi
corpus=$(cd "$corpus" && pwd)
pages_flag=${2:-}
RUNS=${QC_RUNS:-3}
FORMATS=${QC_FORMATS:-text article markdown}
CHARSETS=${QC_CHARSETS:-shift_jis euc-jp iso-2022-jp euc-kr gbk gb18030 big5 koi8-r windows-1251 iso-8859-2 windows-1250 iso-8859-7 utf-16}

qc_setup_private || exit 1

port=$(qc_start_server "$QC_ROOT/test/bench/corpus_server.py" corpus --corpus "$corpus") || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.max_bytes = '64MB'
queryclaw.max_chars = 100000000
queryclaw.timeout = '60s'
CONF
base="http://127.0.0.1:$port"
ids=$(cd "$corpus" && ls [0-9]*.html | sed 's/\.html$//' | paste -sd, -)

qc_psql -q -d postgres <<SQL || exit 1
CREATE EXTENSION queryclaw_ext;
CREATE TABLE pages AS
    SELECT id, '$base/' || id || '.html' AS url
      FROM unnest(string_to_array('$ids', ',')) AS id;
-- a page that fails is reported and scores 0, and the run goes on
CREATE FUNCTION fetch_or_warn(url text, format text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    RETURN queryclaw.web_fetch(url, format);
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING '%: %', url, SQLERRM;
    RETURN '';
END \$\$;
-- the stored HTML that html_to_text() is timed on, uncompressed so that
-- what is timed is the conversion, not pglz
ALTER TABLE pages ADD COLUMN html text;
ALTER TABLE pages ALTER COLUMN html SET STORAGE EXTERNAL;
UPDATE pages SET html = fetch_or_warn(url, 'raw');
SQL

out=${QC_BENCH_OUT:-$QC_WORK/out}
for format in $FORMATS; do
	mkdir -p "$out/$format"
	qc_psql -d postgres -c "COPY (SELECT id, fetch_or_warn(url, '$format') FROM pages ORDER BY id) TO STDOUT (FORMAT csv)" |
		python3 -c '
import csv, os, sys
csv.field_size_limit(1 << 30)
for page, text in csv.reader(sys.stdin):
    with open(os.path.join(sys.argv[1], page + ".out"), "w", encoding="utf-8") as f:
        f.write(text)
' "$out/$format" || exit 1
done

# CPU seconds the backend spends on a statement (user + system time from
# /proc/PID/stat, so that other work on the machine does not count): the
# median of RUNS runs.  Each run converts every page REPEAT times, long
# enough for the clock's 10 ms ticks.
REPEAT=${QC_REPEAT:-5}
ticks=$(getconf CLK_TCK)
qc_psql -q -d postgres <<SQL || exit 1
CREATE FUNCTION cpu_ticks() RETURNS bigint LANGUAGE sql
AS \$\$ SELECT $(qc_sql_cpu_ticks 'pg_backend_pid()') \$\$;
SQL
seconds() {
	local values=()
	for _ in $(seq "$RUNS"); do
		values+=("$(qc_psql -d postgres -c "DO \$\$ DECLARE t0 bigint := cpu_ticks(); BEGIN $1; RAISE NOTICE '%', cpu_ticks() - t0; END \$\$;" 2>&1 | sed -n 's/.*NOTICE:  //p')")
	done
	printf '%s\n' "${values[@]}" | sort -g | awk -v t="$ticks" '{v[NR]=$1} END {print v[int((NR+1)/2)] / t}'
}

bytes=$(qc_psql -At -d postgres -c "SELECT sum(octet_length(html)) FROM pages")
: >"$QC_WORK/speed.tsv"
for format in $FORMATS; do
	s=$(seconds "PERFORM sum(length(queryclaw.html_to_text(html, '$format', url))) FROM pages, generate_series(1, $REPEAT)")
	printf '%s\t%s\n' "$format" "$(awk -v b="$bytes" -v r="$REPEAT" -v s="$s" 'BEGIN {printf "%.1f", b * r / 1e6 / s}')" >>"$QC_WORK/speed.tsv"
done

echo "corpus: $corpus ($(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}') MB of HTML); speed: html_to_text, MB of HTML per CPU second of the backend, median of $RUNS runs"
python3 "$QC_ROOT/test/bench/bow.py" "$corpus" "$out" $FORMATS --speed "$QC_WORK/speed.tsv" $pages_flag

# 3. The charset round trip, for the pages the manifest gives an encoding of
case " $FORMATS " in *" article "*) ;; *) exit 0 ;; esac
encoded=$(python3 -c '
import csv, sys
with open(sys.argv[1], encoding="utf-8", newline="") as f:
    print(",".join(r["id"] for r in csv.DictReader(f, delimiter="\t") if r.get("file_encoding")))
' "$corpus/manifest.tsv" 2>/dev/null)
[ -n "$encoded" ] || exit 0
charsets=$(echo $CHARSETS | tr ' ' ',')
qc_psql -d postgres -c "COPY (SELECT id, cs, fetch_or_warn('$base/as/' || cs || '/' || id || '.html', 'article')
    FROM unnest(string_to_array('$encoded', ',')) AS id, unnest(string_to_array('$charsets', ',')) AS cs
    ORDER BY id, cs) TO STDOUT (FORMAT csv)" 2>"$QC_WORK/recode.err" |
	python3 -c '
import csv, os, sys
csv.field_size_limit(1 << 30)
same, differ, charsets = 0, [], set()
for page, charset, text in csv.reader(sys.stdin):
    charsets.add(charset)
    with open(os.path.join(sys.argv[1], page + ".out"), encoding="utf-8") as f:
        if f.read() == text:
            same += 1
        else:
            differ.append(page + " " + charset)
pages = same + len(differ)
print("charset round trip (article, %d pages x %d charsets, <meta> only): %d identical, %d differ%s"
      % (pages // max(len(charsets), 1), len(charsets), same, len(differ),
         (": " + ", ".join(differ[:20])) if differ else ""))
' "$out/article"
grep WARNING "$QC_WORK/recode.err" | head -5 || true
