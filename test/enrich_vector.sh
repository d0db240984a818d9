#!/usr/bin/env bash
# test/enrich_vector.sh: an enrichment that keeps a pgvector column filled
# (run by test/run.sh on its preloaded cluster, after the suite).
#
# 1. A backfill: every row already in the table gets its text's embedding
#    (the scripted model's, 8 dimensions) in a vector(8) column, the very
#    vector llm_embed gives for it.
# 2. A live insert gets its embedding too.
# 3. A vector(3) column, which the model's 8 dimensions do not fit: each
#    row is failed with pgvector's words naming both numbers, its value
#    kept.
#
# pgvector is Debian's postgresql-NN-pgvector, which test/lib.sh installs
# where the release ships it (QC_OPTIONAL_PACKAGES); without it, this says
# so and skips.  sql/090_enrichments.sql shows the same into real[].
#
# Arguments: the work directory, the data directory and the bin directory
# of the running cluster (test/lib.sh's QC_WORK, QC_PGDATA, QC_BINDIR).
# Prints TAP-style "ok - ..." / "not ok - ..." / "skip - ..." lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_PGDATA=$2 QC_BINDIR=$3
db=queryclaw_regression
owner=qc_enrich_vector

sql() { QC_DB=$db qc_sql "$@"; }

if [ "$(sql -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")" != 1 ]; then
	echo "skip - an embedding into a pgvector column: pgvector is not installed (this Debian release ships no postgresql-$QC_PG_MAJOR-pgvector); 090_enrichments shows the same into real[]"
	exit 0
fi

sql >/dev/null <<SQL || { echo "not ok - the test was set up"; exit 1; }
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE ROLE $owner;
GRANT EXECUTE ON FUNCTION
    queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval),
    queryclaw.llm_embed_request(text, text)
    TO $owner;
CREATE TABLE qc_vec_docs (id int PRIMARY KEY, body text, v vector(8), short vector(3));
INSERT INTO qc_vec_docs (id, body) VALUES (1, 'we ship from Lyon'), (2, 'returns are free'),
                                          (3, 'support answers within a day');
UPDATE qc_vec_docs SET short = '[0,0,0]';
ALTER TABLE qc_vec_docs OWNER TO $owner;
SET ROLE $owner;
SELECT queryclaw.create_enrichment('doc_vector', 'qc_vec_docs',
    request => \$\$queryclaw.llm_embed_request(body)\$\$, target => 'v');
SELECT queryclaw.create_enrichment('doc_short', 'qc_vec_docs',
    request => \$\$queryclaw.llm_embed_request(body)\$\$, target => 'short');
SQL

caught_up="SELECT coalesce(sum(stale + running), 1) = 0 FROM queryclaw.enrichments
            WHERE name IN ('doc_vector', 'doc_short')"
# the view shows the owner's own: look as the owner
QC_DB=$db qc_wait_for "SET ROLE $owner; $caught_up" 60
qc_check "the backfill filled the vector column with each text's embedding" \
	"$(sql -c "SELECT count(*) FILTER (WHERE v = queryclaw.llm_embed(body)::real[]::vector) || ' of ' || count(*)
	             FROM qc_vec_docs")" "3 of 3"

sql -c "SET ROLE $owner" -c "INSERT INTO qc_vec_docs (id, body, short) VALUES (4, 'a new document', '[0,0,0]')"
QC_DB=$db qc_wait_for "SET ROLE $owner; $caught_up" 60
qc_check "a live insert got its embedding" \
	"$(sql -c "SELECT v = queryclaw.llm_embed(body)::real[]::vector FROM qc_vec_docs WHERE id = 4")" t

qc_check "a vector(3) column fails every row, naming the dimensions" \
	"$(sql -c "SET ROLE $owner" -c "SELECT count(*) FILTER (WHERE r.state = 'failed' AND r.error LIKE '%expected 3 dimensions, not 8%')
	             FROM queryclaw.enrichment_rows r JOIN queryclaw.enrichment_definitions d ON d.id = r.enrichment
	            WHERE d.name = 'doc_short'")" 4
qc_check "the failed rows kept their values" \
	"$(sql -c "SELECT count(*) FROM qc_vec_docs WHERE short = '[0,0,0]'")" 4

sql >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE qc_vec_docs CASCADE;
DROP OWNED BY $owner;
DROP ROLE $owner;
SQL
