package machines_test

// One iteration of every benchmark here is one transition, so ns/op compares
// per transition across implementations. Each implementation runs the same
// walk with the same driver loop:
//
//   - Cycle: A -> B -> C -> D -> A, forever; the ring needs no reset.
//   - RetrieveOrGenerate: the happy path INITIATED -> INGESTING -> RETRIEVING
//     -> GENERATING_SOLUTION -> REGISTERING -> INDEXING -> SUCCEEDED (six
//     transitions, every guard admits), then the machine is put back in
//     INITIATED in place and the walk starts again. The reset is a field
//     store for every implementation (see each benchmark) and is counted in
//     the measured time, once every six iterations.
//
// The events are built once, outside the loop, so no benchmark pays to
// construct or box them per iteration, except where a library's API takes
// its payload as ...any (looplab/fsm, stateless): converting the event to
// an interface is then part of calling that library.

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"

	"github.com/looplab/fsm"
	"github.com/qmuntal/stateless"

	"github.com/fsmgen/fsmgen/bench/machines/cycle"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

var errIllegal = errors.New("illegal transition")

// nopRecorder accepts every transition and keeps nothing: what remains is
// the cost of building the runtime.Transition and calling the recorder.
var nopRecorder = runtime.RecorderFunc(func(context.Context, runtime.Transition) error { return nil })

// countAllocs reports allocs/transition, the exact number of heap
// allocations per iteration, which allocs/op rounds down to an integer.
// Use as: defer countAllocs(b)().
func countAllocs(b *testing.B) func() {
	b.ReportAllocs()
	b.StopTimer()
	start := mallocs()
	b.StartTimer()
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(mallocs()-start)/float64(b.N), "allocs/transition")
	}
}

func mallocs() uint64 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.Mallocs
}

// ---------------------------------------------------------------------------
// Cycle

var cycleEvents = []cycle.Event{cycle.ToB{}, cycle.ToC{}, cycle.ToD{}, cycle.ToA{}}

func BenchmarkCycle(b *testing.B) {
	b.Run("generated-fire", benchCycleFire)
	b.Run("generated-methods", func(b *testing.B) { benchCycleMethods(b, cycle.New()) })
	b.Run("switch", benchCycleSwitch)
	b.Run("looplab-fsm", benchCycleLooplab)
	b.Run("stateless", func(b *testing.B) { benchCycleStateless(b, stateless.FiringQueued) })
	b.Run("stateless-immediate", func(b *testing.B) { benchCycleStateless(b, stateless.FiringImmediate) })
}

// BenchmarkCycleRecorder is generated-methods with a recorder that does
// nothing attached, and driver the engine's path to the same machine: the
// generated NewDriver's Fire, given the run's state by name, the event as
// an interface and that recorder.
func BenchmarkCycleRecorder(b *testing.B) {
	b.Run("generated-methods", func(b *testing.B) { benchCycleMethods(b, cycle.New(cycle.WithRecorder(nopRecorder))) })
	b.Run("driver", benchCycleDriver)
}

var cycleStates = []string{"A", "B", "C", "D"}

func benchCycleDriver(b *testing.B) {
	ctx := context.Background()
	d := cycle.NewDriver(nil)
	run := &runtime.Run{ID: "r", Type: cycle.Type, Version: cycle.Version, Status: runtime.StatusRunning}
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := d.Fire(ctx, run, cycleStates[i&3], cycleEvents[i&3], nopRecorder); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCycleFire(b *testing.B) {
	ctx := context.Background()
	m := cycle.New()
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := m.Fire(ctx, cycleEvents[i&3]); err != nil {
			b.Fatal(err)
		}
	}
	if m.State() > cycle.StateD {
		b.Fatal("left the ring")
	}
}

func benchCycleMethods(b *testing.B, m *cycle.Machine) {
	ctx := context.Background()
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		var err error
		switch i & 3 {
		case 0:
			err = m.ToB(ctx, cycle.ToB{})
		case 1:
			err = m.ToC(ctx, cycle.ToC{})
		case 2:
			err = m.ToD(ctx, cycle.ToD{})
		case 3:
			err = m.ToA(ctx, cycle.ToA{})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if m.State() > cycle.StateD {
		b.Fatal("left the ring")
	}
}

// cycleSwitch is the Cycle machine written by hand: a state number and a
// switch per event, with the generated methods' signatures.
type cycleSwitch struct{ state uint8 }

const (
	swA uint8 = iota
	swB
	swC
	swD
	swDone
)

func (m *cycleSwitch) ToB(ctx context.Context, e cycle.ToB) error {
	switch m.state {
	case swA:
		m.state = swB
		return nil
	}
	return errIllegal
}

func (m *cycleSwitch) ToC(ctx context.Context, e cycle.ToC) error {
	switch m.state {
	case swB:
		m.state = swC
		return nil
	}
	return errIllegal
}

func (m *cycleSwitch) ToD(ctx context.Context, e cycle.ToD) error {
	switch m.state {
	case swC:
		m.state = swD
		return nil
	}
	return errIllegal
}

func (m *cycleSwitch) ToA(ctx context.Context, e cycle.ToA) error {
	switch m.state {
	case swD:
		m.state = swA
		return nil
	}
	return errIllegal
}

func benchCycleSwitch(b *testing.B) {
	ctx := context.Background()
	m := &cycleSwitch{}
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		var err error
		switch i & 3 {
		case 0:
			err = m.ToB(ctx, cycle.ToB{})
		case 1:
			err = m.ToC(ctx, cycle.ToC{})
		case 2:
			err = m.ToD(ctx, cycle.ToD{})
		case 3:
			err = m.ToA(ctx, cycle.ToA{})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if m.state > swD {
		b.Fatal("left the ring")
	}
}

var cycleNames = []string{"ToB", "ToC", "ToD", "ToA"}

func newCycleLooplab() *fsm.FSM {
	return fsm.NewFSM("A", fsm.Events{
		{Name: "ToB", Src: []string{"A"}, Dst: "B"},
		{Name: "ToC", Src: []string{"B"}, Dst: "C"},
		{Name: "ToD", Src: []string{"C"}, Dst: "D"},
		{Name: "ToA", Src: []string{"D"}, Dst: "A"},
		{Name: "Stop", Src: []string{"A", "B", "C", "D"}, Dst: "DONE"},
	}, nil)
}

func benchCycleLooplab(b *testing.B) {
	ctx := context.Background()
	f := newCycleLooplab()
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := f.Event(ctx, cycleNames[i&3]); err != nil {
			b.Fatal(err)
		}
	}
	if f.Current() == "DONE" {
		b.Fatal("left the ring")
	}
}

// newCycleStateless builds the Cycle machine for qmuntal/stateless in
// firing mode mode: FiringQueued, the mode of NewStateMachine, or
// FiringImmediate.
func newCycleStateless(mode stateless.FiringMode) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithMode("A", mode)
	sm.Configure("A").Permit("ToB", "B").Permit("Stop", "DONE")
	sm.Configure("B").Permit("ToC", "C").Permit("Stop", "DONE")
	sm.Configure("C").Permit("ToD", "D").Permit("Stop", "DONE")
	sm.Configure("D").Permit("ToA", "A").Permit("Stop", "DONE")
	sm.Configure("DONE")
	return sm
}

func benchCycleStateless(b *testing.B, mode stateless.FiringMode) {
	ctx := context.Background()
	sm := newCycleStateless(mode)
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := sm.FireCtx(ctx, cycleNames[i&3]); err != nil {
			b.Fatal(err)
		}
	}
	if sm.MustState() == "DONE" {
		b.Fatal("left the ring")
	}
}

// ---------------------------------------------------------------------------
// RetrieveOrGenerate

// admit is the Guards of every RetrieveOrGenerate benchmark: every guard
// admits. Every implementation asks it through the rog.Guards interface.
type admit struct{}

func (admit) IdempotencyCheckPassed(context.Context, rog.Start) bool      { return true }
func (admit) SignatureComputed(context.Context, rog.MediaNormalized) bool { return true }
func (admit) AtOrAboveThreshold(context.Context, rog.RetrievalHit) bool   { return true }
func (admit) BelowThreshold(context.Context, rog.RetrievalMiss) bool      { return true }
func (admit) HTMLAvailable(context.Context, rog.SolveSucceeded) bool      { return true }
func (admit) NearMissAvailable(context.Context, rog.SolveFailed) bool     { return true }
func (admit) AssetsPersisted(context.Context, rog.AssetsRegistered) bool  { return true }
func (admit) UserOwnsRun(context.Context, rog.Cancel) bool                { return true }

var guards rog.Guards = admit{}

// The happy path's events, with realistic payloads.
var (
	evStart            = rog.Start{}
	evMediaNormalized  = rog.MediaNormalized{ProblemSignature: "sig-7f3a", NormalizedText: "solve x^2 = 4", Phash: "c3d4e5f6", TopicTags: []string{"algebra", "quadratics"}}
	evRetrievalMiss    = rog.RetrievalMiss{BestConfidence: 0.41, CandidateAssetVersionID: "av-118"}
	evSolveSucceeded   = rog.SolveSucceeded{StorageKey: "solutions/9b/2e.html", Provenance: "solver-v3", CostUSD: 0.012}
	evAssetsRegistered = rog.AssetsRegistered{ProblemID: "p-42", AssetVersionID: "av-9001"}
	evDocumentIndexed  = rog.DocumentIndexed{AssetVersionID: "av-9001"}
)

const rogSteps = 6

var rogEvents = []rog.Event{evStart, evMediaNormalized, evRetrievalMiss, evSolveSucceeded, evAssetsRegistered, evDocumentIndexed}

var rogNames = []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveSucceeded", "AssetsRegistered", "DocumentIndexed"}

func BenchmarkRetrieveOrGenerate(b *testing.B) {
	b.Run("generated-fire", benchRoGFire)
	b.Run("generated-methods", func(b *testing.B) { benchRoGMethods(b, rog.New(guards)) })
	b.Run("switch", benchRoGSwitch)
	b.Run("looplab-fsm", benchRoGLooplab)
	b.Run("stateless", func(b *testing.B) { benchRoGStateless(b, stateless.FiringQueued) })
	b.Run("stateless-immediate", func(b *testing.B) { benchRoGStateless(b, stateless.FiringImmediate) })
}

// BenchmarkRetrieveOrGenerateRecorder is generated-methods with a recorder
// that does nothing attached, and driver the engine's path, as for Cycle.
func BenchmarkRetrieveOrGenerateRecorder(b *testing.B) {
	b.Run("generated-methods", func(b *testing.B) { benchRoGMethods(b, rog.New(guards, rog.WithRecorder(nopRecorder))) })
	b.Run("driver", benchRoGDriver)
}

var rogStates = []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "REGISTERING", "INDEXING"}

func benchRoGDriver(b *testing.B) {
	ctx := context.Background()
	d := rog.NewDriver(nil, func(*runtime.Run) rog.Guards { return guards })
	run := &runtime.Run{ID: "r", Type: rog.Type, Version: rog.Version, Status: runtime.StatusRunning}
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		if err := d.Fire(ctx, run, rogStates[step], rogEvents[step], nopRecorder); err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			step = 0
		}
	}
}

// resetRoG puts a generated machine back in INITIATED in place, through the
// package's own WithState option.
func resetRoG(m *rog.Machine) { rog.WithState(rog.StateInitiated)(m) }

func benchRoGFire(b *testing.B) {
	ctx := context.Background()
	m := rog.New(guards)
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		if err := m.Fire(ctx, rogEvents[step]); err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			if m.State() != rog.StateSucceeded {
				b.Fatal("happy path ended in", m.State())
			}
			resetRoG(m)
			step = 0
		}
	}
}

func benchRoGMethods(b *testing.B, m *rog.Machine) {
	ctx := context.Background()
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		var err error
		switch step {
		case 0:
			err = m.Start(ctx, evStart)
		case 1:
			err = m.MediaNormalized(ctx, evMediaNormalized)
		case 2:
			err = m.RetrievalMiss(ctx, evRetrievalMiss)
		case 3:
			err = m.SolveSucceeded(ctx, evSolveSucceeded)
		case 4:
			err = m.AssetsRegistered(ctx, evAssetsRegistered)
		case 5:
			err = m.DocumentIndexed(ctx, evDocumentIndexed)
		}
		if err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			if m.State() != rog.StateSucceeded {
				b.Fatal("happy path ended in", m.State())
			}
			resetRoG(m)
			step = 0
		}
	}
}

// rogSwitch is the happy path of RetrieveOrGenerate written by hand: a
// state number, a switch per event, the guards asked through the same
// rog.Guards interface as the generated machine.
type rogSwitch struct {
	state  uint8
	guards rog.Guards
}

const (
	swInitiated uint8 = iota
	swIngesting
	swRetrieving
	swGenerating
	swRegistering
	swIndexing
	swSucceeded
)

var errRejected = errors.New("guard rejected")

func (m *rogSwitch) Start(ctx context.Context, e rog.Start) error {
	switch m.state {
	case swInitiated:
		if m.guards.IdempotencyCheckPassed(ctx, e) {
			m.state = swIngesting
			return nil
		}
		return errRejected
	}
	return errIllegal
}

func (m *rogSwitch) MediaNormalized(ctx context.Context, e rog.MediaNormalized) error {
	switch m.state {
	case swIngesting:
		if m.guards.SignatureComputed(ctx, e) {
			m.state = swRetrieving
			return nil
		}
		return errRejected
	}
	return errIllegal
}

func (m *rogSwitch) RetrievalMiss(ctx context.Context, e rog.RetrievalMiss) error {
	switch m.state {
	case swRetrieving:
		if m.guards.BelowThreshold(ctx, e) {
			m.state = swGenerating
			return nil
		}
		return errRejected
	}
	return errIllegal
}

func (m *rogSwitch) SolveSucceeded(ctx context.Context, e rog.SolveSucceeded) error {
	switch m.state {
	case swGenerating:
		if m.guards.HTMLAvailable(ctx, e) {
			m.state = swRegistering
			return nil
		}
		return errRejected
	}
	return errIllegal
}

func (m *rogSwitch) AssetsRegistered(ctx context.Context, e rog.AssetsRegistered) error {
	switch m.state {
	case swRegistering:
		if m.guards.AssetsPersisted(ctx, e) {
			m.state = swIndexing
			return nil
		}
		return errRejected
	}
	return errIllegal
}

func (m *rogSwitch) DocumentIndexed(ctx context.Context, e rog.DocumentIndexed) error {
	switch m.state {
	case swIndexing:
		m.state = swSucceeded
		return nil
	}
	return errIllegal
}

func benchRoGSwitch(b *testing.B) {
	ctx := context.Background()
	m := &rogSwitch{guards: guards}
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		var err error
		switch step {
		case 0:
			err = m.Start(ctx, evStart)
		case 1:
			err = m.MediaNormalized(ctx, evMediaNormalized)
		case 2:
			err = m.RetrievalMiss(ctx, evRetrievalMiss)
		case 3:
			err = m.SolveSucceeded(ctx, evSolveSucceeded)
		case 4:
			err = m.AssetsRegistered(ctx, evAssetsRegistered)
		case 5:
			err = m.DocumentIndexed(ctx, evDocumentIndexed)
		}
		if err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			if m.state != swSucceeded {
				b.Fatal("happy path ended in", m.state)
			}
			m.state = swInitiated
			step = 0
		}
	}
}

// newRoGLooplab builds the machine for looplab/fsm: the table, each guard a
// before_<event> callback that cancels the event when the guard refuses.
// The event struct travels as the callback's first argument. SolveFailed,
// off the happy path, is left out: its two rows (guarded, then fallback)
// share one (event, source) pair, which looplab/fsm maps to one target.
func newRoGLooplab(g rog.Guards) *fsm.FSM {
	running := []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "REGISTERING", "INDEXING"}
	return fsm.NewFSM("INITIATED", fsm.Events{
		{Name: "Start", Src: []string{"INITIATED"}, Dst: "INGESTING"},
		{Name: "MediaNormalized", Src: []string{"INGESTING"}, Dst: "RETRIEVING"},
		{Name: "MediaRejected", Src: []string{"INGESTING"}, Dst: "FAILED"},
		{Name: "RetrievalHit", Src: []string{"RETRIEVING"}, Dst: "SUCCEEDED"},
		{Name: "RetrievalMiss", Src: []string{"RETRIEVING"}, Dst: "GENERATING_SOLUTION"},
		{Name: "RetrievalFailed", Src: []string{"RETRIEVING"}, Dst: "FAILED"},
		{Name: "SolveSucceeded", Src: []string{"GENERATING_SOLUTION"}, Dst: "REGISTERING"},
		{Name: "CostCapExceeded", Src: []string{"GENERATING_SOLUTION"}, Dst: "FAILED"},
		{Name: "AssetsRegistered", Src: []string{"REGISTERING"}, Dst: "INDEXING"},
		{Name: "RegistrationFailed", Src: []string{"REGISTERING"}, Dst: "FAILED"},
		{Name: "DocumentIndexed", Src: []string{"INDEXING"}, Dst: "SUCCEEDED"},
		{Name: "IndexTimedOut", Src: []string{"INDEXING"}, Dst: "SUCCEEDED"},
		{Name: "IndexFailed", Src: []string{"INDEXING"}, Dst: "FAILED"},
		{Name: "Cancel", Src: running, Dst: "CANCELLED"},
	}, fsm.Callbacks{
		"before_Start": func(ctx context.Context, e *fsm.Event) {
			if !g.IdempotencyCheckPassed(ctx, e.Args[0].(rog.Start)) {
				e.Cancel()
			}
		},
		"before_MediaNormalized": func(ctx context.Context, e *fsm.Event) {
			if !g.SignatureComputed(ctx, e.Args[0].(rog.MediaNormalized)) {
				e.Cancel()
			}
		},
		"before_RetrievalHit": func(ctx context.Context, e *fsm.Event) {
			if !g.AtOrAboveThreshold(ctx, e.Args[0].(rog.RetrievalHit)) {
				e.Cancel()
			}
		},
		"before_RetrievalMiss": func(ctx context.Context, e *fsm.Event) {
			if !g.BelowThreshold(ctx, e.Args[0].(rog.RetrievalMiss)) {
				e.Cancel()
			}
		},
		"before_SolveSucceeded": func(ctx context.Context, e *fsm.Event) {
			if !g.HTMLAvailable(ctx, e.Args[0].(rog.SolveSucceeded)) {
				e.Cancel()
			}
		},
		"before_AssetsRegistered": func(ctx context.Context, e *fsm.Event) {
			if !g.AssetsPersisted(ctx, e.Args[0].(rog.AssetsRegistered)) {
				e.Cancel()
			}
		},
		"before_Cancel": func(ctx context.Context, e *fsm.Event) {
			if !g.UserOwnsRun(ctx, e.Args[0].(rog.Cancel)) {
				e.Cancel()
			}
		},
	})
}

func benchRoGLooplab(b *testing.B) {
	ctx := context.Background()
	f := newRoGLooplab(guards)
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		if err := f.Event(ctx, rogNames[step], rogEvents[step]); err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			if f.Current() != "SUCCEEDED" {
				b.Fatal("happy path ended in", f.Current())
			}
			f.SetState("INITIATED")
			step = 0
		}
	}
}

// newRoGStateless builds the machine for qmuntal/stateless, in firing mode
// mode, over a state held in *state, so that the benchmark can reset it with a store; each
// guard is a GuardFunc reading the event from the trigger's first argument.
// SolveFailed is left out as for looplab/fsm: stateless panics when two
// rows of one state both accept a trigger, so a guarded row followed by a
// fallback has no direct equivalent.
func newRoGStateless(g rog.Guards, state *string, mode stateless.FiringMode) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return *state, nil },
		func(_ context.Context, s stateless.State) error { *state = s.(string); return nil },
		mode)
	cancel := func(ctx context.Context, args ...any) bool { return g.UserOwnsRun(ctx, args[0].(rog.Cancel)) }
	sm.Configure("INITIATED").
		Permit("Start", "INGESTING", func(ctx context.Context, args ...any) bool {
			return g.IdempotencyCheckPassed(ctx, args[0].(rog.Start))
		}).
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("INGESTING").
		Permit("MediaNormalized", "RETRIEVING", func(ctx context.Context, args ...any) bool {
			return g.SignatureComputed(ctx, args[0].(rog.MediaNormalized))
		}).
		Permit("MediaRejected", "FAILED").
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("RETRIEVING").
		Permit("RetrievalHit", "SUCCEEDED", func(ctx context.Context, args ...any) bool {
			return g.AtOrAboveThreshold(ctx, args[0].(rog.RetrievalHit))
		}).
		Permit("RetrievalMiss", "GENERATING_SOLUTION", func(ctx context.Context, args ...any) bool {
			return g.BelowThreshold(ctx, args[0].(rog.RetrievalMiss))
		}).
		Permit("RetrievalFailed", "FAILED").
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("GENERATING_SOLUTION").
		Permit("SolveSucceeded", "REGISTERING", func(ctx context.Context, args ...any) bool {
			return g.HTMLAvailable(ctx, args[0].(rog.SolveSucceeded))
		}).
		Permit("CostCapExceeded", "FAILED").
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("REGISTERING").
		Permit("AssetsRegistered", "INDEXING", func(ctx context.Context, args ...any) bool {
			return g.AssetsPersisted(ctx, args[0].(rog.AssetsRegistered))
		}).
		Permit("RegistrationFailed", "FAILED").
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("INDEXING").
		Permit("DocumentIndexed", "SUCCEEDED").
		Permit("IndexTimedOut", "SUCCEEDED").
		Permit("IndexFailed", "FAILED").
		Permit("Cancel", "CANCELLED", cancel)
	sm.Configure("SUCCEEDED")
	sm.Configure("FAILED")
	sm.Configure("CANCELLED")
	return sm
}

func benchRoGStateless(b *testing.B, mode stateless.FiringMode) {
	ctx := context.Background()
	state := "INITIATED"
	sm := newRoGStateless(guards, &state, mode)
	defer countAllocs(b)()
	step := 0
	for i := 0; i < b.N; i++ {
		if err := sm.FireCtx(ctx, rogNames[step], rogEvents[step]); err != nil {
			b.Fatal(err)
		}
		if step++; step == rogSteps {
			if state != "SUCCEEDED" {
				b.Fatal("happy path ended in", state)
			}
			state = "INITIATED"
			step = 0
		}
	}
}

// TestHappyPaths checks that every implementation benchmarked above walks
// the same path and refuses what the table refuses.
func TestHappyPaths(t *testing.T) {
	ctx := context.Background()

	sw := &rogSwitch{guards: guards}
	if err := sw.MediaNormalized(ctx, evMediaNormalized); err == nil {
		t.Error("switch: MediaNormalized in INITIATED was accepted")
	}
	gm := rog.New(guards)
	f := newRoGLooplab(guards)
	state, stateImm := "INITIATED", "INITIATED"
	sm := newRoGStateless(guards, &state, stateless.FiringQueued)
	smi := newRoGStateless(guards, &stateImm, stateless.FiringImmediate)
	for i, e := range rogEvents {
		if err := gm.Fire(ctx, e); err != nil {
			t.Fatalf("generated: %s: %v", rogNames[i], err)
		}
		if err := f.Event(ctx, rogNames[i], e); err != nil {
			t.Fatalf("looplab/fsm: %s: %v", rogNames[i], err)
		}
		if err := sm.FireCtx(ctx, rogNames[i], e); err != nil {
			t.Fatalf("stateless: %s: %v", rogNames[i], err)
		}
		if err := smi.FireCtx(ctx, rogNames[i], e); err != nil {
			t.Fatalf("stateless, FiringImmediate: %s: %v", rogNames[i], err)
		}
		if gm.State().String() != f.Current() || f.Current() != state || state != stateImm {
			t.Fatalf("after %s: generated %s, looplab/fsm %s, stateless %s, FiringImmediate %s", rogNames[i], gm.State(), f.Current(), state, stateImm)
		}
	}
	if gm.State() != rog.StateSucceeded {
		t.Fatalf("generated ended in %s", gm.State())
	}
	resetRoG(gm)
	if gm.State() != rog.StateInitiated {
		t.Fatalf("reset left %s", gm.State())
	}

	cm := cycle.New()
	cs := &cycleSwitch{}
	cl := newCycleLooplab()
	cst := newCycleStateless(stateless.FiringQueued)
	csi := newCycleStateless(stateless.FiringImmediate)
	for i := range 8 {
		if err := cm.Fire(ctx, cycleEvents[i&3]); err != nil {
			t.Fatal(err)
		}
		if err := cl.Event(ctx, cycleNames[i&3]); err != nil {
			t.Fatal(err)
		}
		if err := cst.FireCtx(ctx, cycleNames[i&3]); err != nil {
			t.Fatal(err)
		}
		if err := csi.FireCtx(ctx, cycleNames[i&3]); err != nil {
			t.Fatal(err)
		}
		if cm.State().String() != cl.Current() || cl.Current() != cst.MustState() || cst.MustState() != csi.MustState() {
			t.Fatalf("step %d: generated %s, looplab/fsm %s, stateless %v, FiringImmediate %v", i, cm.State(), cl.Current(), cst.MustState(), csi.MustState())
		}
	}
	if err := cs.ToC(ctx, cycle.ToC{}); err == nil {
		t.Error("switch: ToC in A was accepted")
	}
}
