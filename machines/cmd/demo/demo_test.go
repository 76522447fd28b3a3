package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// result is what a command did: its exit status and output.
type result struct {
	Code           int
	Stdout, Stderr string
}

// runDemo runs the demo in this process with the environment env.
func runDemo(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
	return result{code, out.String(), errOut.String()}
}

// buildFsmctl builds the operator CLI, which reads what the demo leaves in
// the database, and returns a function that runs it on url.
func buildFsmctl(t *testing.T, url string) func(args ...string) result {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fsmctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/fsmgen/fsmgen/cmd/fsmctl").CombinedOutput(); err != nil {
		t.Fatalf("go build fsmctl: %v\n%s", err, out)
	}
	return func(args ...string) result {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), envDatabaseURL+"="+url)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("fsmctl %v: %v", args, err)
		}
		return result{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
	}
}

// migrationCount is the number of the runtime's embedded migrations.
func migrationCount(t *testing.T) int {
	t.Helper()
	ms, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

var (
	uuidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	durationRE = regexp.MustCompile(`(?m)^duration  \d+ ms$`)
)

// normalize makes the demo's output comparable: the run and asset ids the
// database generates become <id1>, <id2>, ... in order of appearance (the
// users' ids, which the seed fixes, stay), times become <time>, and
// durations <n>. In a table cell (followed by two spaces) a placeholder
// keeps the width of what it replaces, so that the columns stay aligned.
func normalize(s string) string {
	ids := map[string]string{}
	var b strings.Builder
	last := 0
	for _, m := range uuidRE.FindAllStringIndex(s, -1) {
		id := s[m[0]:m[1]]
		b.WriteString(s[last:m[0]])
		last = m[1]
		if strings.HasPrefix(id, "a11ce000-") || strings.HasPrefix(id, "b0b00000-") {
			b.WriteString(id)
			continue
		}
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("<id%d>", len(ids)+1)
		}
		if strings.HasPrefix(s[m[1]:], "  ") {
			fmt.Fprintf(&b, "%-36s", ids[id])
		} else {
			b.WriteString(ids[id])
		}
	}
	b.WriteString(s[last:])
	s = timeRE.ReplaceAllString(b.String(), fmt.Sprintf("%-24s", "<time>"))
	s = durationRE.ReplaceAllString(s, "duration  <n> ms")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func TestDemoPrintsEachRunAndItsHistory(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	runsDir := t.TempDir()
	got := runDemo(t, nil, "-database", url, "-seed", "7", "-runs-dir", runsDir)
	if got.Code != exitOK || got.Stderr != "" {
		t.Fatalf("demo: exit %d, stderr:\n%s\nstdout:\n%s", got.Code, got.Stderr, got.Stdout)
	}
	first, rest, _ := strings.Cut(got.Stdout, "\n")
	if !strings.HasPrefix(first, `Using the database "fsmgen_test_`) || !strings.HasSuffix(first, ` as user "postgres" that -database names.`) {
		t.Errorf("first line %q does not name the database", first)
	}
	// The linear chain's part interleaves two workers' steps: its lines
	// are checked, not its order.
	rog, chainPart, found := strings.Cut(rest, "\n== Linear chain: ")
	if !found {
		t.Fatalf("demo output has no linear chain part:\n%s", rest)
	}
	chainPart, stepPart, found := strings.Cut(chainPart, "\n== Step engine: ")
	if !found {
		t.Fatalf("demo output has no step engine part:\n%s", rest)
	}
	wantOut := strings.Replace(wantDemo, "runtime schema: 4 migrations", fmt.Sprintf("runtime schema: %d migrations", migrationCount(t)), 1)
	if diff := cmp.Diff(strings.Split(wantOut, "\n"), strings.Split(normalize(rog), "\n")); diff != "" {
		t.Errorf("demo output (-want +got):\n%s", diff)
	}
	for _, want := range []string{
		"order.process v1, VALIDATE -> RESERVE -> WAIT_PAYMENT -> SHIP -> NOTIFY\n",
		"-> duplicate (first delivery: applied)\n",
		": instance 1 COMPLETED, key A-",
		": instance 2 FAILED, key B-",
		": instance 3 FAILED, key C-",
		"WAITING    -> RUNNING   ClaimTimedOut",
		"fsmctl chains list -type order.process; fsmctl chains show ID.\n",
	} {
		if !strings.Contains(chainPart, want) {
			t.Errorf("the linear chain demo lacks %q:\n%s", want, chainPart)
		}
	}

	for _, want := range []string{
		"attempt 1: OK after 2 API requests",
		"attempt 1: FAILED after 4 API requests",
		"  step 2 summarize:    SKIPPED\n",
		"  step 4 publish_sheet: SKIPPED\n",
		"The tab 'Q1 report' after the three runs (two OK runs, each cleared it first: no duplicated row):\n    [region total]\n    [east 42.25]\n    [north 130.50]\n    [south 80.00]\n\n",
		`"error_type": "APIRetryExhausted",`,
		"attempt 2: OK after 1 API requests",
		"    north,130.50\n",
		" --from-db --format json\n",
	} {
		if !strings.Contains(stepPart, want) {
			t.Errorf("the step engine demo lacks %q:\n%s", want, stepPart)
		}
	}
	_, fchaPart, found := strings.Cut(stepPart, "\n== FCHA: ")
	if !found {
		t.Fatalf("demo output has no FCHA part:\n%s", stepPart)
	}
	for _, want := range []string{
		": PREQUALIFICATION -> DENIED; approved false\n",
		": PREQUALIFICATION -> CONDITIONAL_OFFER -> BACKGROUND_CHECK_ALLOWED -> APPROVED; approved true\n",
		": PREQUALIFICATION -> CONDITIONAL_OFFER -> BACKGROUND_CHECK_ALLOWED -> INDIVIDUALIZED_ASSESSMENT -> APPROVED; approved true\n",
		": PREQUALIFICATION -> CONDITIONAL_OFFER -> BACKGROUND_CHECK_ALLOWED -> INDIVIDUALIZED_ASSESSMENT -> DENIED; approved false\n",
		": PREQUALIFICATION -> CONDITIONAL_OFFER -> DENIED; approved false\n",
		"signal refused: the authorization window of 168h0m0s closed at ",
		"  chain verified: 5 records, head ",
		"  chain verified: 10 records, head ",
		"  chain verified: 7 records, head ",
	} {
		if !strings.Contains(fchaPart, want) {
			t.Errorf("the FCHA demo lacks %q:\n%s", want, fchaPart)
		}
	}
	if n := strings.Count(fchaPart, "  chain verified: 12 records, head "); n != 2 {
		t.Errorf("%d assessed runs with 12 evidence records, want 2:\n%s", n, fchaPart)
	}
	entries, err := os.ReadDir(runsDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d run directories, want 2: %v", len(entries), err)
	}
	for _, e := range entries {
		for _, f := range []string{"run.json", "steps.json", "audit.json", "audit.csv", "artifacts/report.csv", "artifacts/index.json"} {
			if _, err := os.Stat(filepath.Join(runsDir, e.Name(), f)); err != nil {
				t.Errorf("run %s: %v", e.Name(), err)
			}
		}
	}

	// fsmctl chains reads what the demo left.
	withDB := buildFsmctl(t, url)
	chains := withDB("chains", "list", "-type", "order.process", "-status", "FAILED")
	if chains.Code != exitOK {
		t.Fatalf("chains list: exit %d, stderr %s", chains.Code, chains.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(chains.Stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  TYPE") ||
		!strings.HasPrefix(lines[1], "2   order.process v1  FAILED  0 VALIDATE      0/5") ||
		!strings.HasPrefix(lines[2], "3   order.process v1  FAILED  2 WAIT_PAYMENT  2/5") {
		t.Errorf("chains list -status FAILED:\n%s", chains.Stdout)
	}
	show := withDB("chains", "show", "1")
	if show.Code != exitOK {
		t.Fatalf("chains show: exit %d, stderr %s", show.Code, show.Stderr)
	}
	for _, want := range []string{
		"status     COMPLETED",
		"1    RESERVE       DONE    1/3       warehouse busy",
		"step 2    WAITING     READY      WakeUp         -",
		"instance  RUNNING     COMPLETED  StepCompleted",
		"payment.captured  2     applied",
		`{"type": "payment.requested", "orderId": "A-`,
	} {
		if !strings.Contains(show.Stdout, want) {
			t.Errorf("chains show 1 lacks %q:\n%s", want, show.Stdout)
		}
	}
	for _, args := range [][]string{{"chains", "show", "x"}, {"chains", "show"}, {"chains", "list", "-status", "DONE"}, {"chains", "list", "-limit", "0"}} {
		if got := withDB(args...); got.Code != exitUsage {
			t.Errorf("fsmctl %v: exit %d, want 2", args, got.Code)
		}
	}
	if got := withDB("chains", "show", "99"); got.Code != exitFailure || !strings.Contains(got.Stderr, "instance 99: not found") {
		t.Errorf("chains show 99: exit %d, stderr %q", got.Code, got.Stderr)
	}

	// Run again with the same seed: the same users submit the same
	// problems, so the first submission finds its run of the first demo.
	again := runDemo(t, nil, "-database", url, "-seed", "7", "-runs-dir", t.TempDir())
	if again.Code != exitOK {
		t.Fatalf("second demo: exit %d, stderr:\n%s", again.Code, again.Stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("runtime schema: %d migrations, 0 applied now\n", migrationCount(t)),
		"\n== 1. A new equation: normalized, not found, solved, registered and indexed\n" +
			`alice (a11ce000-0000-4000-8000-000000000007, tier pro) submits "Solve 9x + 1 = 10"` + "\n" +
			"cached: run ",
	} {
		if !strings.Contains(again.Stdout, want) {
			t.Errorf("second demo lacks %q:\n%s", want, again.Stdout)
		}
	}

	// The runs are in the database for runs list and runs show.
	list := withDB("runs", "list", "-tenant", "demo", "-type", "retrieve_or_generate")
	if n := strings.Count(list.Stdout, "\n"); list.Code != exitOK || n != 4 {
		t.Errorf("runs list -tenant demo: exit %d, %d lines, want a header and 3 runs:\n%s", list.Code, n, list.Stdout)
	}
}

func TestDemoWithoutDatabaseStartsAThrowawayCluster(t *testing.T) {
	t.Parallel()
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip(pgtest.EnvURL + " is set: the tests use that server, and may lack the binaries to start one")
	}
	got := runDemo(t, nil, "-seed", "3", "-runs-dir", t.TempDir())
	if got.Code != exitOK || got.Stderr != "" {
		t.Fatalf("demo: exit %d, stderr:\n%s\nstdout:\n%s", got.Code, got.Stderr, got.Stdout)
	}
	lines := strings.Split(strings.TrimSuffix(got.Stdout, "\n"), "\n")
	if diff := cmp.Diff("DATABASE_URL is not set: starting a throwaway PostgreSQL cluster, as the tests do.", lines[0]); diff != "" {
		t.Errorf("first line (-want +got):\n%s", diff)
	}
	dir, ok := strings.CutPrefix(lines[1], "The cluster lives in ")
	dir, ok2 := strings.CutSuffix(dir, " and is removed at the end.")
	if !ok || !ok2 {
		t.Fatalf("second line %q does not say where the cluster lives", lines[1])
	}
	if diff := cmp.Diff("Stopped the throwaway cluster and removed its directory.", lines[len(lines)-1]); diff != "" {
		t.Errorf("last line (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is still there (stat: %v)", dir, err)
	}
	for _, want := range []string{"== 4. ", "the same run as submission 1\n"} {
		if !strings.Contains(got.Stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestDemoFromDatabaseURL(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	got := runDemo(t, map[string]string{envDatabaseURL: url}, "-seed", "5", "-runs-dir", t.TempDir())
	if got.Code != exitOK || got.Stderr != "" {
		t.Fatalf("demo: exit %d, stderr:\n%s\nstdout:\n%s", got.Code, got.Stderr, got.Stdout)
	}
	first, _, _ := strings.Cut(got.Stdout, "\n")
	if !strings.HasSuffix(first, " that DATABASE_URL names.") {
		t.Errorf("first line %q does not name DATABASE_URL", first)
	}
}

func TestDemoUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-verbose"}, {"now"}, {"-seed", "x"}} {
		got := runDemo(t, nil, args...)
		if got.Code != exitUsage || got.Stdout != "" || got.Stderr == "" {
			t.Errorf("demo %v: exit %d, stdout %q, stderr %q; want exit 2 and a message", args, got.Code, got.Stdout, got.Stderr)
		}
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as Ctrl-C does through signal.NotifyContext
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"-database", url, "-runs-dir", t.TempDir()}, &out, &errOut, func(string) string { return "" })
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "demo: interrupted\n"}, result{Code: code, Stderr: errOut.String()}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// wantDemo is the normalized output of demo -seed 7 on a new database,
// after the line naming the database.
const wantDemo = `runtime schema: 4 migrations, 0 applied now
problembank schema: up to date
Registered retrieve_or_generate version 1. Seed 7 (demo -seed 7 submits the same problems as the same users).

== 1. A new equation: normalized, not found, solved, registered and indexed
alice (a11ce000-0000-4000-8000-000000000007, tier pro) submits "Solve 9x + 1 = 10"
created run <id1>; driving it inline

run       <id1>
type      retrieve_or_generate v1
state     SUCCEEDED
status    succeeded
outcome   new
tenant    demo
user      a11ce000-0000-4000-8000-000000000007
key       af3c86464fbd237d5a6f5596224b7c6b936c13caf22d43e3365fe041f9ffd07b
attempt   1
output    {"video_pending":true,"is_approximate":false,"asset_version_id":"<id2>"}
cost      0.0100 USD
duration  <n> ms
created   <time>
updated   <time>
finished  <time>

SEQ  TIME                      KIND        STEP/EVENT        STATE                              ATTEMPT
1    <time>                    created     start             → INITIATED                        1
2    <time>                    step        policy_applied    INITIATED                          1
3    <time>                    transition  Start             INITIATED → INGESTING              1
4    <time>                    transition  MediaNormalized   INGESTING → RETRIEVING             1
5    <time>                    transition  RetrievalMiss     RETRIEVING → GENERATING_SOLUTION   1
6    <time>                    transition  SolveSucceeded    GENERATING_SOLUTION → REGISTERING  1
7    <time>                    transition  AssetsRegistered  REGISTERING → INDEXING             1
8    <time>                    transition  DocumentIndexed   INDEXING → SUCCEEDED               1

== 2. The same problem phrased differently, by another user: a retrieval hit
bob (b0b00000-0000-4000-8000-000000000007, tier free) submits "solve 9x+1=10"
created run <id3>; driving it inline

run       <id3>
type      retrieve_or_generate v1
state     SUCCEEDED
status    succeeded
outcome   hit
tenant    demo
user      b0b00000-0000-4000-8000-000000000007
key       c72bf64e52bf7af0755570f5804d0ae66dac37974d9132a03d2a23e03c51d37c
attempt   1
output    {"video_pending":false,"is_approximate":false,"asset_version_id":"<id2>"}
cost      0.0000 USD
duration  <n> ms
created   <time>
updated   <time>
finished  <time>

SEQ  TIME                      KIND        STEP/EVENT       STATE                   ATTEMPT
1    <time>                    created     start            → INITIATED             1
2    <time>                    step        policy_applied   INITIATED               1
3    <time>                    transition  Start            INITIATED → INGESTING   1
4    <time>                    transition  MediaNormalized  INGESTING → RETRIEVING  1
5    <time>                    transition  RetrievalHit     RETRIEVING → SUCCEEDED  1

== 3. An upload of an unsupported media type: rejected, the run fails
bob (b0b00000-0000-4000-8000-000000000007, tier free) submits upload upload-7-homework.pdf (application/pdf)
created run <id4>; driving it inline

run       <id4>
type      retrieve_or_generate v1
state     FAILED
status    failed
outcome   -
tenant    demo
user      b0b00000-0000-4000-8000-000000000007
key       1072e999fe968200ae1290498e81c70ba8f70c463e18ec133e877962da046e00
attempt   1
output    -
cost      0.0000 USD
duration  <n> ms
error     MEDIA_REJECTED: unsupported_media_type
created   <time>
updated   <time>
finished  <time>

SEQ  TIME                      KIND        STEP/EVENT      STATE                  ATTEMPT
1    <time>                    created     start           → INITIATED            1
2    <time>                    step        policy_applied  INITIATED              1
3    <time>                    transition  Start           INITIATED → INGESTING  1
4    <time>                    transition  MediaRejected   INGESTING → FAILED     1

== 4. The first submission again: idempotent, the same run and its stored result
alice (a11ce000-0000-4000-8000-000000000007, tier pro) submits "Solve 9x + 1 = 10"
cached: run <id1> succeeded before; its stored result is returned and nothing runs again
the same run as submission 1

run       <id1>
type      retrieve_or_generate v1
state     SUCCEEDED
status    succeeded
outcome   new
tenant    demo
user      a11ce000-0000-4000-8000-000000000007
key       af3c86464fbd237d5a6f5596224b7c6b936c13caf22d43e3365fe041f9ffd07b
attempt   1
output    {"video_pending":true,"is_approximate":false,"asset_version_id":"<id2>"}
cost      0.0100 USD
duration  <n> ms
created   <time>
updated   <time>
finished  <time>

history: the same 8 rows as above; nothing ran again

== Background runs the runs above enqueued, driven by the engine's workers (Work)

ID                                    TYPE                 STATE     STATUS     OUTCOME   TENANT  ATTEMPT  CREATED                   UPDATED
<id5>                                 video_generation v1  RENDERED  succeeded  rendered  demo    1        <time>                    <time>

Summary
#  SUBMITTED                                            START    RUN                                   STATE      OUTCOME
1  alice: "Solve 9x + 1 = 10"                           created  <id1>                                 SUCCEEDED  new
2  bob: "solve 9x+1=10"                                 created  <id3>                                 SUCCEEDED  hit
3  bob: upload upload-7-homework.pdf (application/pdf)  created  <id4>                                 FAILED     -
4  alice: "Solve 9x + 1 = 10"                           cached   <id1>                                 SUCCEEDED  new
The runs stay in the database: fsmctl runs list -tenant demo; fsmctl runs show ID.
`
