package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const round1 = `goos: linux
BenchmarkStore/op=transition/runs=16-2   1000   522239 ns/op   1900 ops/s   0.1330 stmts/op
BenchmarkStore/op=floor/runs=16-2        1000    99408 ns/op   9500 ops/s   1.000 stmts/op
BenchmarkStore/op=transition/runs=4-2    1000   730777 ns/op   1368 ops/s
BenchmarkStore/op=floor/runs=4-2         1000   479330 ns/op   2736 ops/s
PASS
`

const round2 = `BenchmarkStore/op=transition/runs=16-2   1000   522239 ns/op   2000 ops/s
BenchmarkStore/op=floor/runs=16-2        1000    99408 ns/op  10000 ops/s
BenchmarkStore/op=transition/runs=4-2    1000   730777 ns/op   1500 ops/s
`

// TestRatios sets each transition beside the floor of its own round, in
// numeric order of the concurrency, with "-" for a round that lacks the
// floor.
func TestRatios(t *testing.T) {
	var rounds []map[string]map[string]float64
	for _, in := range []string{round1, round2} {
		r, err := parse(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		rounds = append(rounds, r)
	}
	var out strings.Builder
	write(&out, pairs{{"ops/s", "op=transition", "op=floor"}}, rounds)
	want := "Store/op=transition/runs=4                              ops/s    ÷ op=floor         median 0.50×   rounds 0.50 -\n" +
		"Store/op=transition/runs=16                             ops/s    ÷ op=floor         median 0.20×   rounds 0.20 0.20\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("ratios (-want +got):\n%s", diff)
	}
}

func TestParseRejectsAFileWithoutBenchmarks(t *testing.T) {
	_, err := parse(strings.NewReader("goos: linux\nPASS\n"))
	if err == nil || err.Error() != "no benchmark lines" {
		t.Errorf("parse: error %v, want %q", err, "no benchmark lines")
	}
}
