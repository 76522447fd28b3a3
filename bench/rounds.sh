#!/bin/sh
# rounds.sh BASE NEW: paired, alternating rounds of the benchmarks of two
# revisions of the repository, then benchstat and the in-round ratios.
#
#   bench/rounds.sh main .          # main against the working tree
#   ROUNDS=6 bench/rounds.sh 0f29cad HEAD
#
# BASE and NEW are git revisions, or "." for the working tree as it is.
# Each is exported into a directory of its own, and the benchmark code of
# the working tree's bench/ is copied over the revision's, so that both
# sides run the same measurements against their own runtime. HARNESS=own
# keeps each revision's own bench/, HARNESS=REV takes bench/ from revision
# REV; BASE_HARNESS and NEW_HARNESS set it for one side. Test binaries
# are built once per side and package; then, in each round, every
# benchmark runs once for each side, BASE first in odd rounds and NEW
# first in even ones.
#
# Environment:
#   ROUNDS   number of rounds (4)
#   BENCHES  one benchmark per line: package, -test.bench pattern,
#            -test.benchtime (default: BenchmarkStore at 2000x and
#            BenchmarkVersusRiver at 200x)
#   HARNESS  tree (default), own or a revision, see above
#   OUT      directory for the results (a new one under $TMPDIR)
#
# Results, in OUT: base.rN.txt and new.rN.txt (one file per round and side,
# go test -bench output), base.txt and new.txt (all rounds), load.txt (the
# load average before each run), benchstat.txt and ratios.txt (per round
# and median: Record over the floor INSERT, the floor through pgx over
# pgbench, the engine over River and over the floor).
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 BASE NEW (git revisions, or . for the working tree)" >&2
	exit 2
fi
ROUNDS=${ROUNDS:-4}
HARNESS=${HARNESS:-tree}
BENCHES=${BENCHES:-"store ^BenchmarkStore\$ 2000x
engine ^BenchmarkVersusRiver\$ 200x"}
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/fsmgen-rounds.XXXXXX")}
mkdir -p "$OUT/src" "$OUT/bin"

# tree SIDE REV HARNESS: the source tree of REV for SIDE (base or new),
# with the bench/ HARNESS says, echoed.
tree() {
	if [ "$2" = . ]; then
		echo "$repo"
		return
	fi
	dir=$OUT/src/$1
	rm -rf "$dir"
	mkdir -p "$dir"
	git -C "$repo" archive "$2" | tar -x -C "$dir"
	case $3 in
	own) ;;
	tree)
		rm -rf "$dir/bench"
		(cd "$repo" && tar --exclude=node_modules -cf - bench) | tar -x -C "$dir"
		;;
	*)
		rm -rf "$dir/bench"
		git -C "$repo" archive "$3" bench | tar -x -C "$dir"
		;;
	esac
	echo "$dir"
}

describe() {
	if [ "$1" = . ]; then
		echo "working tree at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD || echo ' with changes')"
	else
		git -C "$repo" rev-parse --short "$1"
	fi
}

BASE_HARNESS=${BASE_HARNESS:-$HARNESS}
NEW_HARNESS=${NEW_HARNESS:-$HARNESS}
base_src=$(tree base "$1" "$BASE_HARNESS")
new_src=$(tree new "$2" "$NEW_HARNESS")
{
	echo "base: $1 ($(describe "$1"))"
	echo "new: $2 ($(describe "$2"))"
	echo "harness: base $BASE_HARNESS, new $NEW_HARNESS; rounds: $ROUNDS"
	echo "$BENCHES"
} >"$OUT/about.txt"
cat "$OUT/about.txt"

echo "$BENCHES" | while read -r pkg pattern benchtime; do
	[ -n "$pkg" ] || continue
	for side in base new; do
		eval src=\$${side}_src
		echo "build $side ./$pkg"
		(cd "$src/bench" && $GO test -c -o "$OUT/bin/$side.$pkg.test" "./$pkg") || {
			echo "$0: the benchmarks of ./$pkg do not build against $side ($src); HARNESS=own uses each revision's own bench/, BASE_HARNESS=REV the bench/ of revision REV" >&2
			exit 1
		}
	done
done

: >"$OUT/load.txt"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
	for side in $order; do
		eval src=\$${side}_src
		: >"$OUT/$side.r$r.txt"
		echo "$BENCHES" | while read -r pkg pattern benchtime; do
			[ -n "$pkg" ] || continue
			echo "round $r/$ROUNDS: $side $pkg $pattern (load average $(cut -d' ' -f1-3 /proc/loadavg))"
			echo "round $r $side $pkg: load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
			(cd "$src/bench/$pkg" && "$OUT/bin/$side.$pkg.test" -test.run '^$' -test.bench "$pattern" \
				-test.benchtime "$benchtime" -test.count 1) >>"$OUT/$side.r$r.txt"
		done
	done
	r=$((r + 1))
done

for side in base new; do
	cat "$OUT"/$side.r*.txt >"$OUT/$side.txt"
done

if command -v benchstat >/dev/null 2>&1; then
	BENCHSTAT=benchstat
elif [ -x "$($GO env GOPATH)/bin/benchstat" ]; then
	BENCHSTAT="$($GO env GOPATH)/bin/benchstat"
else
	BENCHSTAT="$GO run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
fi
(cd "$OUT" && $BENCHSTAT base.txt new.txt) >"$OUT/benchstat.txt" 2>&1 || echo "$0: benchstat failed, see $OUT/benchstat.txt" >&2

(cd "$here" && $GO build -o "$OUT/bin/benchratio" ./internal/benchratio)
{
	for side in base new; do
		echo "## $side: $(sed -n "s/^$side: //p" "$OUT/about.txt")"
		# shellcheck disable=SC2046 # the round files, in order
		"$OUT/bin/benchratio" \
			-pair 'ops/s op=transition op=floor' \
			-pair 'ops/s op=pgbench op=floor' \
			-pair 'steps/s system=engine system=river' \
			-pair 'chains/s system=engine system=river-chain' \
			-pair 'steps/s system=engine system=floor' \
			-pair 'steps/s system=pgbench system=floor' \
			$(i=1; while [ "$i" -le "$ROUNDS" ]; do echo "$OUT/$side.r$i.txt"; i=$((i + 1)); done)
		echo
	done
} >"$OUT/ratios.txt"
cat "$OUT/benchstat.txt" "$OUT/ratios.txt"
echo "results in $OUT"
