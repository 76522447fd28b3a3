package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
)

// builder builds a nested dsl.Machine by hand, flattening rows per leaf
// as the checker does, so that the generator can be tested on one
// without the parser.
type builder struct {
	m       *dsl.Machine
	states  map[string]*dsl.State
	hist    map[string]*dsl.History
	events  map[string]*dsl.Event
	guards  map[string]*dsl.Guard
	actions map[string]*dsl.Action
	written []*dsl.Transition
}

func newBuilder(name string) *builder {
	return &builder{
		m:      &dsl.Machine{Name: name, Type: strings.ToLower(name), Version: 1, Package: strings.ToLower(name)},
		states: map[string]*dsl.State{}, hist: map[string]*dsl.History{}, events: map[string]*dsl.Event{},
		guards: map[string]*dsl.Guard{}, actions: map[string]*dsl.Action{},
	}
}

// state declares a state in parent ("" at the top level); opts: initial,
// wait, done, failed, succeeded, entry:A, exit:A.
func (b *builder) state(name, parent string, opts ...string) *dsl.State {
	s := &dsl.State{Name: name, GoName: goNameOf(name)}
	if parent != "" {
		p := b.states[parent]
		s.Parent, s.Depth = p, p.Depth+1
		p.Children = append(p.Children, s)
	} else {
		b.m.Roots = append(b.m.Roots, s)
	}
	for _, o := range opts {
		switch {
		case o == "initial":
			s.Initial = true
			if s.Parent != nil {
				s.Parent.InitialChild = s
			}
		case o == "wait":
			s.Wait = true
		case o == "done":
			s.Done, s.Wait = true, true
		case o == "failed" || o == "succeeded":
			s.Status = o
		case strings.HasPrefix(o, "entry:"):
			s.Entry = append(s.Entry, b.action(o[len("entry:"):]))
		case strings.HasPrefix(o, "exit:"):
			s.Exit = append(s.Exit, b.action(o[len("exit:"):]))
		}
	}
	b.states[name] = s
	return s
}

func (b *builder) action(name string) *dsl.Action {
	if a, ok := b.actions[name]; ok {
		return a
	}
	a := &dsl.Action{Name: name, GoName: name}
	b.actions[name] = a
	b.m.Actions = append(b.m.Actions, a)
	return a
}

func (b *builder) history(name, parent string, deep bool) {
	h := &dsl.History{Name: name, Deep: deep, Parent: b.states[parent]}
	h.Parent.History = append(h.Parent.History, h)
	b.hist[name] = h
	b.m.Histories = append(b.m.Histories, h)
}

func (b *builder) event(name string) {
	e := &dsl.Event{Name: name, GoName: name}
	b.events[name] = e
	b.m.Events = append(b.m.Events, e)
}

// row writes FROM -> TO on event ("" eventless, "done" completion) with
// opts: when:G, unless:G, internal.
func (b *builder) row(from, to, event string, opts ...string) {
	t := &dsl.Transition{Source: b.states[from]}
	if h, ok := b.hist[to]; ok {
		t.History = h
	} else {
		t.Target = b.states[to]
	}
	switch event {
	case "":
	case "done":
		t.Done = true
	default:
		t.Event = b.events[event]
	}
	for _, o := range opts {
		switch {
		case o == "internal":
			t.Internal = true
		case strings.HasPrefix(o, "when:"), strings.HasPrefix(o, "unless:"):
			name := o[strings.IndexByte(o, ':')+1:]
			g, ok := b.guards[name]
			if !ok {
				g = &dsl.Guard{Name: name, GoName: name}
				b.guards[name] = g
				b.m.Guards = append(b.m.Guards, g)
			}
			if t.Event != nil && !slices.Contains(g.Events, t.Event) {
				g.Events = append(g.Events, t.Event)
			}
			t.Guard, t.Negated = g, strings.HasPrefix(o, "unless:")
		}
	}
	b.written = append(b.written, t)
}

// build lists the leaves and composites and flattens the rows.
func (b *builder) build() *dsl.Machine {
	m := b.m
	var walk func(s *dsl.State)
	walk = func(s *dsl.State) {
		if s.Composite() {
			s.Index = len(m.Composites)
			m.Composites = append(m.Composites, s)
		} else {
			s.Index = len(m.States)
			m.States = append(m.States, s)
		}
		for _, c := range s.Children {
			walk(c)
		}
	}
	for _, r := range m.Roots {
		walk(r)
	}
	// Leaves and composites in declaration order: walk lists them so.
	for _, r := range m.Roots {
		if r.Initial {
			m.Initial = r.InitialLeaf()
		}
	}
	for _, l := range m.States {
		if l.Terminal() {
			continue
		}
		for src := l; src != nil; src = src.Parent {
			for _, w := range b.written {
				if w.Source != src {
					continue
				}
				t := *w
				t.From = l
				target := t.Target
				if t.History != nil {
					target = t.History.Parent
				}
				if t.Internal && target == src && !src.Composite() {
					t.To = l
				} else if t.Internal && target == src {
					t.To = l
				} else {
					t.To = target.InitialLeaf()
				}
				var domain *dsl.State
				if t.Internal {
					domain = src
				} else {
					for _, a := range src.Ancestors() {
						if target.In(a) && a != target {
							domain = a
							break
						}
					}
				}
				if !(t.Internal && target == src) {
					for s := l; s != domain; s = s.Parent {
						t.Exit = append(t.Exit, s)
					}
					var down []*dsl.State
					for s := t.To; s != domain; s = s.Parent {
						down = append(down, s)
					}
					slices.Reverse(down)
					t.Enter = down
				}
				m.Transitions = append(m.Transitions, &t)
			}
		}
	}
	return m
}

func goNameOf(name string) string {
	var out string
	for _, p := range strings.Split(strings.ToLower(name), "_") {
		out += strings.ToUpper(p[:1]) + p[1:]
	}
	return out
}

// player is the design's example machine, built by hand.
func player() *dsl.Machine {
	b := newBuilder("Player")
	b.m.Pos.Filename = "player.fsm"
	b.state("STOPPED", "", "initial", "wait")
	b.state("ACTIVE", "", "entry:StartClock", "exit:StopClock")
	b.state("PLAYING", "ACTIVE", "initial", "wait", "entry:ShowPlaying")
	b.state("PAUSED", "ACTIVE", "wait", "exit:HidePaused")
	b.history("RESUME", "ACTIVE", false)
	b.history("LAST", "ACTIVE", true)
	b.state("ENDED", "ACTIVE", "done")
	b.state("BROKEN", "ACTIVE", "failed")
	b.state("OFF", "", "succeeded")
	for _, e := range []string{"Play", "Pause", "Stop", "Resume", "Tick", "End", "Break"} {
		b.event(e)
	}
	b.row("STOPPED", "ACTIVE", "Play")
	b.row("PLAYING", "PAUSED", "Pause")
	b.row("PAUSED", "PLAYING", "Pause")
	b.row("PAUSED", "PLAYING", "Play")
	b.row("ACTIVE", "STOPPED", "Stop")
	b.row("STOPPED", "RESUME", "Resume")
	b.row("PLAYING", "PLAYING", "Tick", "internal")
	b.row("PLAYING", "ENDED", "End")
	b.row("ACTIVE", "BROKEN", "Break")
	b.row("ACTIVE", "OFF", "done")
	b.row("PAUSED", "STOPPED", "", "when:Expired")
	return b.build()
}

// goFiles renders the Go files of m (the diagrams are not the
// generator's concern here).
func goFiles(t *testing.T, m *dsl.Machine) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	b, err := machineCode("player.fsm", m)
	if err != nil {
		t.Fatalf("fsm.go: %v", err)
	}
	out[GoFile] = b
	for name, code := range map[string]func(string, *dsl.Machine) ([]byte, error){TestFile: testCode, RunsFile: handleCode} {
		b, err := code("player.fsm", m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b
	}
	return out
}

func TestNestedGenerates(t *testing.T) {
	t.Parallel()
	for name, b := range goFiles(t, player()) {
		t.Logf("%s:\n%s", name, b)
	}
}

// TestNestedBuilds builds the code generated for the hand-built Player in
// a module of its own and runs its generated tests.
func TestNestedBuilds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("FSMGEN_NESTED_DIR"); d != "" {
		dir = d
	}
	files := goFiles(t, player())
	files["go.mod"] = []byte("module fsmgen.test/player\n\ngo 1.26\n\nrequire github.com/fsmgen/fsmgen v0.0.0\n\nreplace github.com/fsmgen/fsmgen => " + root + "\n")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = sum
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestViewsRefuseIllegalTransitions compiles code against the golden
// Player that fires, through a view, an event its state does not allow:
// Pause on ACTIVE's view (ENDED, a leaf of ACTIVE, has no Pause) and Tick
// on PAUSED's. Neither compiles.
func TestViewsRefuseIllegalTransitions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	golden := filepath.Join("testdata", "golden", "player", "player")
	for _, name := range []string{GoFile, RunsFile} {
		b, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	illegal := `package player

import "context"

func illegal(ctx context.Context, m *Machine) {
	if v, ok := m.InActive(); ok {
		_ = v.Stop(ctx, Stop{})
		_ = v.Pause(ctx, Pause{})
	}
	if v, ok := m.InPaused(); ok {
		_ = v.Tick(ctx, Tick{})
	}
}
`
	for name, b := range map[string][]byte{
		"go.mod":     []byte("module fsmgen.test/player\n\ngo 1.26\n\nrequire github.com/fsmgen/fsmgen v0.0.0\n\nreplace github.com/fsmgen/fsmgen => " + root + "\n"),
		"go.sum":     sum,
		"illegal.go": []byte(illegal),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("illegal transitions through views compiled")
	}
	for _, want := range []string{
		"illegal.go:8:9: v.Pause undefined (type InActive has no field or method Pause)",
		"illegal.go:11:9: v.Tick undefined (type InPaused has no field or method Tick)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("go build says:\n%s\nwant a line %q", out, want)
		}
	}
	if strings.Contains(string(out), "v.Stop") {
		t.Errorf("Stop through ACTIVE's view does not compile:\n%s", out)
	}
}
