// Command benchratio gives, for each round of a benchmark, the ratio of one
// sub-benchmark's figure to another's measured in the same round, and the
// median over the rounds: Record's ops/s to the floor INSERT's, the
// engine's steps/s to River's. Each file is one round, the output of one
// test binary run (go test -bench).
//
//	go run ./internal/benchratio -pair 'ops/s op=transition op=floor' base.r1.txt base.r2.txt ...
//
// A pair names a metric (the unit after the value: ops/s, steps/s, ns/op)
// and two sub-benchmark name elements: for every benchmark whose name holds
// the first, the ratio is its metric over that of the benchmark whose name
// holds the second in its place. -pair may be given more than once.
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

type pair struct{ metric, num, den string }

type pairs []pair

func (p *pairs) String() string { return fmt.Sprint(*p) }

func (p *pairs) Set(s string) error {
	f := strings.Fields(s)
	if len(f) != 3 {
		return fmt.Errorf("pair %q: want three fields, metric numerator denominator (ops/s op=transition op=floor)", s)
	}
	*p = append(*p, pair{f[0], f[1], f[2]})
	return nil
}

func main() {
	var ps pairs
	flag.Var(&ps, "pair", "metric, numerator and denominator name elements, space-separated (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchratio -pair 'METRIC NUM DEN' [-pair ...] ROUND-FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if len(ps) == 0 || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var rounds []map[string]map[string]float64
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(1)
		}
		r, err := parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchratio: %s: %v\n", name, err)
			os.Exit(1)
		}
		rounds = append(rounds, r)
	}
	write(os.Stdout, ps, rounds)
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads the benchmark lines of one round: name (without Benchmark and
// the -GOMAXPROCS suffix) -> unit -> value. A name seen twice keeps its
// last value.
func parse(r io.Reader) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q: %w", name, f[i], err)
			}
			m[f[i+1]] = v
		}
		out[name] = m
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no benchmark lines")
	}
	return out, nil
}

// write prints one line per numerator benchmark of each pair: its name, the
// median ratio, and each round's ratio ("-" where a round lacks one).
func write(w io.Writer, ps pairs, rounds []map[string]map[string]float64) {
	for _, p := range ps {
		var names []string
		for _, r := range rounds {
			for n := range r {
				if strings.Contains(n, p.num) && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		slices.SortFunc(names, natural)
		for _, n := range names {
			den := strings.Replace(n, p.num, p.den, 1)
			var per []string
			var got []float64
			for _, r := range rounds {
				a, okA := r[n][p.metric]
				b, okB := r[den][p.metric]
				if !okA || !okB || b == 0 {
					per = append(per, "-")
					continue
				}
				got = append(got, a/b)
				per = append(per, fmt.Sprintf("%.2f", a/b))
			}
			med := "-"
			if len(got) > 0 {
				med = fmt.Sprintf("%.2f×", median(got))
			}
			fmt.Fprintf(w, "%-55s %-8s ÷ %-16s median %-7s rounds %s\n", n, p.metric, p.den, med, strings.Join(per, " "))
		}
	}
}

var digits = regexp.MustCompile(`\d+|\D+`)

// natural orders names as strings, but runs of digits by their value
// (runs=4 before runs=16).
func natural(a, b string) int {
	x, y := digits.FindAllString(a, -1), digits.FindAllString(b, -1)
	for i := 0; i < len(x) && i < len(y); i++ {
		if x[i] == y[i] {
			continue
		}
		n, errN := strconv.Atoi(x[i])
		m, errM := strconv.Atoi(y[i])
		if errN == nil && errM == nil {
			return cmp.Compare(n, m)
		}
		return strings.Compare(x[i], y[i])
	}
	return cmp.Compare(len(x), len(y))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
