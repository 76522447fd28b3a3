#!/usr/bin/env bash
# claim_finished.sh measures the server time of an idle worker's claim (the
# engine's ClaimRuns statement, db/queries/engine.sql, calling
# fsm_claim_runs with no run of the worker's kind due) on a database with no
# runs and on one with FINISHED finished runs of the worker's kind, at two
# revisions of the schema, in alternating rounds.
#
#	DATABASE_URL=postgres://postgres@127.0.0.1:5499/postgres?sslmode=disable \
#	  BASE=3372c78^ FINISHED=1000000 ROUNDS=4 SECONDS_PER=10 bench/engine/claim_finished.sh
#
# For BASE (a commit) and NEW (the working tree) it builds cmd/fsmctl and
# makes two scratch databases migrated by it: fsmgen_claim_<side>_0 and
# fsmgen_claim_<side>_<FINISHED>, the second loaded with FINISHED succeeded
# runs of the kind 1/bench_claim (triggers off: session_replication_role =
# replica) and OTHERS (default 0) runs of another type due an hour ago, then
# VACUUM ANALYZE. SIZES (default "0 FINISHED") lists the numbers of
# finished runs to make a database with, at each side. Each round runs, for each of the four databases in turn,
# pgbench -M prepared -c 1 for SECONDS_PER seconds on the ClaimRuns
# statement as the engine sends it (now and id NULL, max_runs 16) and
# prints from pg_stat_statements, per call: the statement's server time
# (execution + planning), its execution and planning time, the execution
# time of fsm_claim_runs' own statement (track = all), and the buffers. Last, auto_explain shows the plan of the function's
# statement in each database. The server needs pg_stat_statements and
# auto_explain in shared_preload_libraries, pg_stat_statements.track = all
# and pg_stat_statements.track_planning = on, and a superuser. KEEP=1 keeps
# the databases; LOAD=0 reuses them.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DATABASE_URL:?set DATABASE_URL to a server to make scratch databases on}"
: "${BASE:?set BASE to the commit to compare the working tree with}"
FINISHED=${FINISHED:-1000000} OTHERS=${OTHERS:-0} SIZES=${SIZES:-0 $FINISHED} ROUNDS=${ROUNDS:-4} SECONDS_PER=${SECONDS_PER:-10}
work=$(mktemp -d)
psql=(psql -X -q -v ON_ERROR_STOP=1)
url_of() {
	python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$1" "$2"
}
dbs=()
for side in base new; do for n in $SIZES; do dbs+=("fsmgen_claim_${side}_$n"); done; done
cleanup() {
	if [[ ${KEEP:-0} != 1 ]]; then
		for d in "${dbs[@]}"; do "${psql[@]}" "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" || true; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

awk '/^-- name: ClaimRuns/{f=1} f{print} f&&/;$/{exit}' db/queries/engine.sql | grep -v '^--' |
	sed -e "s/@kinds/:kinds/; s/sqlc.narg('now')/NULL/; s/@max_runs/:max_runs/; s/@owner/:owner/; s/@ttl_us/:ttl_us/; s/sqlc.narg('id')/NULL/" >"$work/claim.sql"
grep -q fsm_claim_runs "$work/claim.sql" || { echo "claim_finished.sh: ClaimRuns not found in db/queries/engine.sql" >&2; exit 1; }

if [[ ${LOAD:-1} == 1 ]]; then
	mkdir "$work/base"
	git archive "$BASE" | tar -x -C "$work/base"
	(cd "$work/base" && GOWORK=off go build -o "$work/fsmctl-base" ./cmd/fsmctl)
	go build -o "$work/fsmctl-new" ./cmd/fsmctl
	for side in base new; do
		for n in $SIZES; do
			d=fsmgen_claim_${side}_$n
			"${psql[@]}" "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" -c "CREATE DATABASE $d"
			"$work/fsmctl-$side" migrate -database "$(url_of "$DATABASE_URL" "$d")" >/dev/null
			"${psql[@]}" "$(url_of "$DATABASE_URL" "$d")" <<SQL
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SET session_replication_role = replica;
INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition)
VALUES ('bench_claim', 1, 'S1', 'bench', '{}'), ('bench_other', 1, 'S1', 'bench', '{}');
INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
    definition_version, created_at, updated_at, attempt_started_at, row_version, status, finished_at)
SELECT 'bench_claim', 'DONE', 'bench', gen_random_uuid(), 'k' || g, 1,
    now() - interval '2 days', now() - interval '1 day', now() - interval '2 days', 3, 'succeeded', now() - interval '1 day'
FROM generate_series(1, $n) g;
INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
    definition_version, created_at, updated_at, attempt_started_at, next_run_at)
SELECT 'bench_other', 'S1', 'bench', gen_random_uuid(), 'o' || g, 1,
    now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, CASE WHEN $n = 0 THEN 0 ELSE $OTHERS END) g;
RESET session_replication_role;
VACUUM ANALYZE workflow_runs;
SQL
		done
	done
fi

echo "load avg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-26s %8s %6s %10s %10s %10s %10s %8s\n' round database calls plans server-us exec-us plan-us fn-exec-us buf/call
for r in $(seq 1 "$ROUNDS"); do
	for d in "${dbs[@]}"; do
		u=$(url_of "$DATABASE_URL" "$d")
		"${psql[@]}" "$u" -Atc "SELECT pg_stat_statements_reset()" >/dev/null
		pgbench -n -M prepared -c 1 -T "$SECONDS_PER" -f "$work/claim.sql" \
			-D kinds='{1/bench_claim}' -D max_runs=16 -D owner=bench -D ttl_us=30000000 "$u" >/dev/null
		"${psql[@]}" "$u" -AtF' ' -c "
WITH t AS (SELECT * FROM pg_stat_statements WHERE toplevel AND query LIKE '%fsm_claim_runs(\$1%'
             AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())),
     f AS (SELECT * FROM pg_stat_statements WHERE NOT toplevel AND query LIKE '%WITH kinds%'
             AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()))
SELECT $r, '$d', t.calls, t.plans,
  round(((t.total_exec_time + t.total_plan_time) / t.calls)::numeric * 1000, 1),
  round(t.mean_exec_time::numeric * 1000, 1),
  round((t.total_plan_time / t.calls)::numeric * 1000, 1),
  round(f.mean_exec_time::numeric * 1000, 1),
  round(((t.shared_blks_hit + t.shared_blks_read)::numeric / t.calls), 1)
FROM t, f" |
			awk '{printf "%-5s %-26s %8s %6s %10s %10s %10s %10s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
	done
done
echo "load avg at end: $(cut -d' ' -f1-3 /proc/loadavg)"

for d in "${dbs[@]}"; do
	echo "== plan of fsm_claim_runs' statement in $d (auto_explain, 7th call of the session)"
	{
		echo "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;"
		echo "SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_level = notice;"
		echo "SET client_min_messages = warning;"
		echo "PREPARE claim(text[], int, text, bigint) AS $(sed -e 's/:kinds/$1/; s/:max_runs/$2/; s/:owner/$3/; s/:ttl_us/$4/' "$work/claim.sql")"
		for _ in 1 2 3 4 5 6; do echo "EXECUTE claim('{1/bench_claim}', 16, 'bench', 30000000);"; done
		echo "SET client_min_messages = notice;"
		echo "EXECUTE claim('{1/bench_claim}', 16, 'bench', 30000000);"
	} | "${psql[@]}" "$(url_of "$DATABASE_URL" "$d")" 2>&1 >/dev/null | grep -v '^$' | sed -n '/WITH kinds/,/Query Text: SELECT c\.\*/p' | grep -E -- '->|Buffers|Duration|Scan|Result|Append' | head -40
done
