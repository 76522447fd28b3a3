#!/usr/bin/env bash
# heat.sh times the console heatmap's median query (the second query of
# heatOf in internal/console/data.go, read from that file so that it is the
# query the console runs) on a log of ROWS rows: RUNS runs of 4 types, each
# with ROWS/RUNS log rows (a created row, transitions S1 -> S2 -> ..., and a
# step row after every second transition), 80% of the runs finished.
#
#	DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
#	  ROWS=2000000 RUNS=200000 REPEAT=7 bench/console/heat.sh
#
# It creates a scratch database (fsmgen_heat_<pid>) on the server, migrates
# it (go run ./cmd/fsmctl migrate), loads the rows with triggers off
# (session_replication_role = replica: a bulk load, the schema's checks are
# not what is measured), runs VACUUM ANALYZE, then in one session prepares
# the query and runs EXPLAIN (ANALYZE, BUFFERS) REPEAT times: the first is
# the cold-ish one when the server was just started; then the query
# REPEAT times more without EXPLAIN (psql \timing, median). LOAD=0 with
# DB=name reuses a database kept by KEEP=1. KEEP=1 keeps the
# database; otherwise it is dropped. The server must be a superuser's.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DATABASE_URL:?set DATABASE_URL to a server to make a scratch database on}"
ROWS=${ROWS:-2000000} RUNS=${RUNS:-200000} REPEAT=${REPEAT:-7}
per_run=$((ROWS / RUNS))
if ((per_run < 3)); then echo "heat.sh: ROWS/RUNS must be at least 3" >&2; exit 2; fi
db=${DB:-fsmgen_heat_$$}
psql=(psql -X -q -v ON_ERROR_STOP=1)
url_of() { # the URL with its database replaced
	python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$1" "$2"
}
dburl=$(url_of "$DATABASE_URL" "$db")
query=$(awk '/rows, err = s.pool.Query\(ctx, `/{f=1;next} f&&/^ GROUP BY s.state`/{sub(/`.*/,"");print;exit} f{print}' internal/console/data.go)
if [[ $query != *workflow_step_logs* ]]; then echo "heat.sh: the heat query was not found in internal/console/data.go" >&2; exit 1; fi

if [[ ${LOAD:-1} == 1 ]]; then
	"${psql[@]}" "$DATABASE_URL" -c "CREATE DATABASE $db"
	[[ ${KEEP:-0} == 1 ]] || trap '"${psql[@]}" "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
	go run ./cmd/fsmctl migrate -database "$dburl" >/dev/null
	start=$(date +%s)
	"${psql[@]}" "$dburl" <<SQL
SET session_replication_role = replica;
INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition)
SELECT 'heat_' || t, 1, 'S1', 'bench', '{}' FROM generate_series(1, 4) t;
-- Run g: type heat_(g%4+1); its change rows are row versions 1..n (created,
-- then transitions S1 -> S2 -> ...), a step row after every second
-- transition; each stay lasts 1-600 s.
CREATE TEMP TABLE r AS
SELECT gen_random_uuid() AS id, 'heat_' || (g % 4 + 1) AS typ,
       now() - interval '30 days' * random() AS t0, g
FROM generate_series(1, $RUNS) g;
CREATE TEMP TABLE l AS
SELECT r.id, r.typ, i,
       -- row i of the run: every third row (i % 3 = 0) is a step row
       (i - i / 3) AS rv,
       CASE WHEN i = 1 THEN 'created' WHEN i % 3 = 0 THEN 'step' ELSE 'transition' END AS kind,
       r.t0 + (i * (1 + (hashint4(r.g * 31 + i) & 1023) % 600)) * interval '1 second' AS at
FROM r, generate_series(1, $per_run) i;
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT id, typ, 1, CASE kind WHEN 'step' THEN 'work' ELSE 'fire' END,
       CASE WHEN kind = 'created' THEN NULL WHEN kind = 'step' THEN 'S' || rv ELSE 'S' || (rv - 1) END,
       'S' || rv, NULL, at, kind, CASE kind WHEN 'transition' THEN 'next' END, rv, 1
FROM l ORDER BY at;
INSERT INTO workflow_runs (id, workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
    definition_version, created_at, updated_at, attempt_started_at, row_version, status, finished_at, next_run_at)
SELECT r.id, r.typ, 'S' || m.rv, 'bench', gen_random_uuid(), 'k' || r.g, 1, r.t0, m.at, r.t0, m.rv,
       CASE WHEN r.g % 5 = 0 THEN 'running' ELSE 'succeeded' END,
       CASE WHEN r.g % 5 = 0 THEN NULL ELSE m.at END,
       CASE WHEN r.g % 5 = 0 THEN m.at + interval '1 hour' END
FROM r JOIN (SELECT id, max(rv) AS rv, max(at) AS at FROM l GROUP BY id) m USING (id);
SQL
	"${psql[@]}" "$dburl" -c "VACUUM ANALYZE workflow_step_logs" -c "VACUUM ANALYZE workflow_runs"
	echo "loaded in $(($(date +%s) - start)) s"
fi
"${psql[@]}" "$dburl" -Atc "SELECT count(*) || ' log rows, ' || (SELECT count(*) FROM workflow_runs) || ' runs, log ' || pg_size_pretty(pg_total_relation_size('workflow_step_logs')) FROM workflow_step_logs"
states=$("${psql[@]}" "$dburl" -Atc "SELECT '{' || string_agg(DISTINCT state_after, ',') || '}' FROM workflow_step_logs WHERE workflow_type = 'heat_1'")
n=$(tr -cd , <<<"$states" | wc -c); n=$((n + 1))
per=$((1500 / n)); ((per < 50)) && per=50; ((per > 1000)) && per=1000
echo "query: heat_1 v1, $n states $states, $per stays each; load: $(cut -d' ' -f1-3 /proc/loadavg)"
{
	echo "PREPARE heat(text, int, text[], int) AS $query;"
	for i in $(seq 1 "$REPEAT"); do
		echo "EXPLAIN (ANALYZE, BUFFERS) EXECUTE heat('heat_1', 1, '$states', $per);"
	done
	echo '\timing on'
	for i in $(seq 1 "$REPEAT"); do
		echo "EXECUTE heat('heat_1', 1, '$states', $per) \\g /dev/null"
	done
} | "${psql[@]}" "$dburl" | tee -a /dev/stderr | awk '/^Time: /{print $2}' | sort -n |
	awk '{t[NR]=$1} END {printf "EXECUTE without EXPLAIN, %d runs after the EXPLAINs: median %.3f ms (min %.3f, max %.3f)\n", NR, t[int((NR+1)/2)], t[1], t[NR]}'
