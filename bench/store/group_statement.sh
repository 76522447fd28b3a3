#!/usr/bin/env bash
# group_statement.sh measures the backend processor time of one group
# commit's statement (AdvanceRuns, db/queries/engine.sql: ROWS runs moved
# and logged in one statement) at two revisions of the schema, in
# alternating rounds.
#
#	DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
#	  BASE=9d752be~2 ROWS=8 EXECS=3000 ROUNDS=3 bench/store/group_statement.sh
#
# For BASE (a commit) and NEW (the working tree) it builds cmd/fsmctl and
# migrates a scratch database with it, registers a two-state ping-pong
# machine and ROWS runs (triggers off for the set-up only:
# session_replication_role = replica), and takes each side's AdvanceRuns
# from its own db/queries/engine.sql, its arguments read from the runs. Each
# round runs, for each side in turn, one psql session (after a first round
# that is not shown): the statement
# prepared, 50 executions to warm up, then EXECS executions, each moving the
# ROWS runs to their other state, with synchronous_commit off so that the
# commit's wait for the disk is left out. It prints the session's backend
# processor time per execution, read from /proc/PID/stat: the server must
# run on this machine, and DATABASE_URL's user must be a superuser (the
# set-up writes with triggers off). KEEP=1 keeps the databases.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DATABASE_URL:?set DATABASE_URL to a server on this machine to make scratch databases on}"
: "${BASE:?set BASE to the commit to compare the working tree with}"
ROWS=${ROWS:-8} EXECS=${EXECS:-3000} ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
psql=(psql -X -q -v ON_ERROR_STOP=1)
url_of() {
	python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$1" "$2"
}
cleanup() {
	if [[ ${KEEP:-0} != 1 ]]; then
		for side in base new; do "${psql[@]}" "$DATABASE_URL" -c "DROP DATABASE IF EXISTS fsmgen_group_$side WITH (FORCE)" || true; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/base" "$work/new"
git archive "$BASE" | tar -x -C "$work/base"
cp -r db "$work/new/"
(cd "$work/base" && GOWORK=off go build -o "$work/fsmctl-base" ./cmd/fsmctl)
go build -o "$work/fsmctl-new" ./cmd/fsmctl

# The statement as the store sends it, its arguments taken from the ROWS
# runs (c) rather than from parameters.
statement() {
	python3 - "$1" "$ROWS" <<'PY'
import re, sys
q = open(sys.argv[1]).read()
a = q.index('-- name: AdvanceRuns :many')
b = q.index('-- name: ', a + 1)
body = '\n'.join(l for l in q[a:b].splitlines() if not l.startswith('--')).strip().rstrip(';')
n = sys.argv[2]
args = {'ids': 'ids', 'from_states': 'froms', 'to_states': 'tos', 'to_statuses': 'sts', 'row_versions': 'rvs',
        'workflow_types': 'tys', 'definition_versions': 'dvs', 'events': 'evs', 'payloads': 'pls',
        'next_delays_us': 'nds', 'fenced': 'fs', 'release_leases': 'fs', 'owners': 'es', 'epochs': 'zs',
        'finishes': 'fs', 'result_statuses': 'es', 'outcomes': 'es', 'outputs': 'njs', 'costs_usd': 'zfs',
        'durations_ms': 'zs', 'error_codes': 'es', 'error_details': 'es'}
for k, v in args.items():
    body, found = re.subn(r'@%s::([a-z0-9]+)\[\]' % k, r'(SELECT c.%s FROM c)::\1[]' % v, body)
    if not found:
        sys.exit('group_statement.sh: no @%s in AdvanceRuns' % k)
body = body.replace("sqlc.narg('now')::timestamptz", 'NULL::timestamptz')
c = f"""c AS (
    SELECT array_agg(id ORDER BY id) ids, array_agg(current_state ORDER BY id) froms,
        array_agg(CASE current_state WHEN 'PING' THEN 'PONG' ELSE 'PING' END ORDER BY id) tos,
        array_agg(row_version ORDER BY id) rvs,
        array_fill('running'::text, ARRAY[{n}]) sts, array_fill('bench_group'::text, ARRAY[{n}]) tys,
        array_fill(1, ARRAY[{n}]) dvs, array_fill('Hit'::text, ARRAY[{n}]) evs,
        array_fill('{{"n": 1}}'::jsonb, ARRAY[{n}]) pls, array_fill(-1::bigint, ARRAY[{n}]) nds,
        array_fill(false, ARRAY[{n}]) fs, array_fill(''::text, ARRAY[{n}]) es, array_fill(0::bigint, ARRAY[{n}]) zs,
        array_fill(NULL::jsonb, ARRAY[{n}]) njs, array_fill(0::float8, ARRAY[{n}]) zfs
    FROM workflow_runs WHERE workflow_type = 'bench_group')"""
if body.startswith('WITH '):
    body = 'WITH ' + c + ',\n' + body[5:]
else:
    body = 'WITH ' + c + '\n' + body
print(body)
PY
}

for side in base new; do
	d=fsmgen_group_$side
	u=$(url_of "$DATABASE_URL" "$d")
	"${psql[@]}" "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" -c "CREATE DATABASE $d"
	"$work/fsmctl-$side" migrate -database "$u" >/dev/null
	"${psql[@]}" "$u" <<SQL
SET session_replication_role = replica;
INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition)
VALUES ('bench_group', 1, 'PING', 'bench', '{}');
INSERT INTO workflow_states (workflow_type, version, state, status, is_initial)
VALUES ('bench_group', 1, 'PING', 'running', true), ('bench_group', 1, 'PONG', 'running', false);
INSERT INTO workflow_transitions (workflow_type, version, from_state, event, to_state)
VALUES ('bench_group', 1, 'PING', 'Hit', 'PONG'), ('bench_group', 1, 'PONG', 'Hit', 'PING');
INSERT INTO workflow_moves (workflow_type, version, from_state, to_state, to_status)
VALUES ('bench_group', 1, 'PING', 'PONG', 'running'), ('bench_group', 1, 'PONG', 'PING', 'running');
INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
    definition_version, created_at, updated_at, attempt_started_at)
SELECT 'bench_group', 'PING', 'bench', gen_random_uuid(), 'k' || g, 1, now(), now(), now()
FROM generate_series(1, $ROWS) g;
RESET session_replication_role;
VACUUM ANALYZE;
SQL
	statement "$work/$side/db/queries/engine.sql" >"$work/$side.sql"
	{
		echo "SET synchronous_commit = off;"
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv BACKEND :pid"
		echo "PREPARE s AS $(cat "$work/$side.sql");"
		for _ in $(seq 50); do echo "EXECUTE s \\g /dev/null"; done
		echo "\\! awk '{print \$14 + \$15}' /proc/\$BACKEND/stat > $work/$side.before"
		for _ in $(seq "$EXECS"); do echo "EXECUTE s \\g /dev/null"; done
		echo "\\! awk '{print \$14 + \$15}' /proc/\$BACKEND/stat > $work/$side.after"
	} >"$work/$side.psql"
done

echo "load avg at start: $(cut -d' ' -f1-3 /proc/loadavg); $ROWS runs a statement, $EXECS executions"
printf '%-6s %-6s %16s\n' round side cpu-us/statement
for r in $(seq 0 "$ROUNDS"); do
	for side in base new; do
		"${psql[@]}" "$(url_of "$DATABASE_URL" "fsmgen_group_$side")" -f "$work/$side.psql"
		ticks=$(($(cat "$work/$side.after") - $(cat "$work/$side.before")))
		# Round 0 warms the server's caches, and is not shown.
		if ((r > 0)); then printf '%-6s %-6s %16s\n' "$r" "$side" "$((ticks * 10000 / EXECS))"; fi
	done
done
echo "load avg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
