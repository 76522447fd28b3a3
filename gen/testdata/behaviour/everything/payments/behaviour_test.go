package payments

// Hand-written expectations about the machine of everything.fsm, one test
// per language feature, written from the .fsm file rather than from the
// generated table: gen's TestGoldenPackages copies this file next to the
// golden package and runs it.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// askLog is the Guards of these tests: each guard answers as verdicts says
// (false when absent) and logs that it was asked.
type askLog struct {
	verdicts map[string]bool
	asked    *[]string
}

func (g askLog) ask(name string) bool {
	*g.asked = append(*g.asked, name)
	return g.verdicts[name]
}

func (g askLog) Approved(context.Context, Validated) bool { return g.ask("Approved") }
func (g askLog) Risky(context.Context, Event) bool        { return g.ask("Risky") }
func (g askLog) Large(context.Context, Captured) bool     { return g.ask("Large") }
func (g askLog) Small(context.Context, Captured) bool     { return g.ask("Small") }
func (g askLog) Owner(context.Context, Cancel) bool       { return g.ask("Owner") }

// transitions records what the machine hands its recorder.
type transitions []runtime.Transition

func (l *transitions) Record(_ context.Context, t runtime.Transition) error {
	*l = append(*l, t)
	return nil
}

func newIn(s State, verdicts map[string]bool) (*Machine, *[]string, *transitions) {
	asked := &[]string{}
	rec := &transitions{}
	return New(askLog{verdicts: verdicts, asked: asked}, WithState(s), WithRecorder(rec)), asked, rec
}

// TestGuardsInWrittenOrder: CAPTURING on Captured tries "when Large", then
// "when Small", then the unguarded row, and stops at the first that admits.
func TestGuardsInWrittenOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		verdicts  map[string]bool
		want      State
		wantAsked []string
	}{
		{map[string]bool{"Large": true, "Small": true}, StateNotifying, []string{"Large"}},
		{map[string]bool{"Small": true}, StateNotifying, []string{"Large", "Small"}},
		{nil, StateArchiving, []string{"Large", "Small"}},
	} {
		m, asked, _ := newIn(StateCapturing, c.verdicts)
		if err := m.Captured(context.Background(), Captured{Cents: 100}); err != nil {
			t.Fatalf("%v: %v", c.verdicts, err)
		}
		if m.State() != c.want {
			t.Errorf("%v: state %s, want %s", c.verdicts, m.State(), c.want)
		}
		if diff := cmp.Diff(c.wantAsked, *asked); diff != "" {
			t.Errorf("%v: guards asked (-want +got):\n%s", c.verdicts, diff)
		}
	}
}

// TestNegatedGuards: "unless Approved" and "when !Risky" fire when their
// guard refuses.
func TestNegatedGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	m, _, _ := newIn(StateValidating, map[string]bool{"Approved": false})
	if err := m.Validated(ctx, Validated{}); err != nil || m.State() != StateDeclined {
		t.Errorf("Validated unless Approved, Approved refusing: %s, %v; want DECLINED", m.State(), err)
	}
	m, _, _ = newIn(StateValidating, map[string]bool{"Approved": true})
	if err := m.Validated(ctx, Validated{Ok: true}); err != nil || m.State() != StateAuthorizing {
		t.Errorf("Validated when Approved: %s, %v; want AUTHORIZING", m.State(), err)
	}

	m, _, _ = newIn(StateChallenged, map[string]bool{"Risky": false})
	if err := m.ChallengePassed(ctx, ChallengePassed{}); err != nil || m.State() != StateRecording {
		t.Errorf("ChallengePassed when !Risky, Risky refusing: %s, %v; want RECORDING", m.State(), err)
	}
	m, _, _ = newIn(StateChallenged, map[string]bool{"Risky": true})
	if err := m.ChallengePassed(ctx, ChallengePassed{}); err != nil || m.State() != StateDeclined {
		t.Errorf("ChallengePassed with Risky admitting: %s, %v; want the fallback DECLINED", m.State(), err)
	}
}

// TestStarRows: "* -> CANCELLED on Cancel when Owner" holds in every state
// that is not final, asks Owner, and is refused where Owner refuses and in
// final states.
func TestStarRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	final := map[State]bool{StateDeclined: true, StateFailed: true, StateCancelled: true, StateSettled: true}
	for _, s := range States() {
		m, asked, _ := newIn(s, map[string]bool{"Owner": true})
		err := m.Cancel(ctx, Cancel{UserID: "u1"})
		if final[s] {
			if !errors.Is(err, runtime.ErrIllegalTransition) || m.State() != s || len(*asked) != 0 {
				t.Errorf("Cancel in final %s: %v, state %s, asked %v", s, err, m.State(), *asked)
			}
			continue
		}
		if err != nil || m.State() != StateCancelled {
			t.Errorf("Cancel in %s: %s, %v; want CANCELLED", s, m.State(), err)
		}
		m, _, _ = newIn(s, nil)
		var te *runtime.TransitionError
		if err := m.Cancel(ctx, Cancel{}); !errors.As(err, &te) || !errors.Is(err, runtime.ErrGuardRejected) || m.State() != s {
			t.Errorf("Cancel in %s with Owner refusing: %v, state %s", s, err, m.State())
		} else if diff := cmp.Diff([]string{"Owner"}, te.Guards); diff != "" {
			t.Errorf("Cancel in %s: guards named (-want +got):\n%s", s, diff)
		}
	}
}

// TestOutcomes: a row's outcome, else its final state's, reaches the
// recorder.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		from State
		fire func(*Machine) error
		want runtime.Transition
	}{
		{StateChallenged, func(m *Machine) error { return m.ChallengeExpired(ctx, ChallengeExpired{}) },
			runtime.Transition{Machine: "payment_flow", Version: 2, From: "CHALLENGED", To: "FAILED", Event: "ChallengeExpired", Payload: ChallengeExpired{}, Status: runtime.StatusFailed, Outcome: "challenge expired"}},
		{StateRefunding, func(m *Machine) error { return m.Refunded(ctx, Refunded{}) },
			runtime.Transition{Machine: "payment_flow", Version: 2, From: "REFUNDING", To: "CANCELLED", Event: "Refunded", Payload: Refunded{}, Status: runtime.StatusCancelled, Outcome: "refunded"}},
		{StateAuthorizing, func(m *Machine) error { return m.Declined(ctx, Declined{}) },
			runtime.Transition{Machine: "payment_flow", Version: 2, From: "AUTHORIZING", To: "DECLINED", Event: "Declined", Payload: Declined{}, Status: runtime.StatusSucceeded, Outcome: "declined"}},
	} {
		m, _, rec := newIn(c.from, nil)
		if err := c.fire(m); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(transitions{c.want}, *rec); diff != "" {
			t.Errorf("from %s (-want +got):\n%s", c.from, diff)
		}
	}
	if got := StateDeclined.Outcome(); got != "declined" {
		t.Errorf("DECLINED's outcome %q", got)
	}
	if got := StateFailed.Outcome(); got != "" {
		t.Errorf("FAILED's outcome %q", got)
	}
}

// TestRetryAndTimerData: the retry policies and timers the .fsm file
// writes, in the Definition.
func TestRetryAndTimerData(t *testing.T) {
	t.Parallel()
	d := Definition()
	spec := func(name string) runtime.StateSpec {
		s, ok := d.State(name)
		if !ok {
			t.Fatalf("no state %s", name)
		}
		return s
	}
	want := map[string]runtime.StateSpec{
		"VALIDATING": {Name: "VALIDATING", Initial: true, Status: runtime.StatusRunning,
			Retry: &runtime.RetryPolicy{Name: "validation", MaxAttempts: 1, InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Second}},
		"AUTHORIZING": {Name: "AUTHORIZING", Status: runtime.StatusRunning,
			Retry:       &runtime.RetryPolicy{MaxAttempts: 4, InitialInterval: 500 * time.Millisecond, Coefficient: 3, MaxInterval: time.Minute, Jitter: 0.25, NonRetryable: []string{"CARD_DECLINED", "FRAUD_SUSPECTED"}},
			OnExhausted: "Failed"},
		"CHALLENGED": {Name: "CHALLENGED", Status: runtime.StatusRunning, Wait: true,
			Timers: []runtime.Timer{{After: 15 * time.Minute, Event: "ChallengeExpired"}, {After: 36 * time.Hour, Event: "Reminder"}}},
		"RECORDING": {Name: "RECORDING", Status: runtime.StatusRunning,
			Retry:       &runtime.RetryPolicy{Name: "database", MaxAttempts: 5, InitialInterval: 500 * time.Millisecond, Coefficient: 2, MaxInterval: 30 * time.Second, Jitter: 0.2},
			OnExhausted: "Failed"},
		"CAPTURING": {Name: "CAPTURING", Status: runtime.StatusRunning,
			Retry:  &runtime.RetryPolicy{Name: "payment", MaxAttempts: 3, InitialInterval: time.Second, Coefficient: 2, MaxInterval: 10 * time.Second, Jitter: 0.2},
			Timers: []runtime.Timer{{After: 2 * time.Hour, Event: "CaptureTimedOut"}}},
		"REFUNDING": {Name: "REFUNDING", Status: runtime.StatusRunning,
			Retry: &runtime.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Second, Coefficient: 2, FromPolicy: true}},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, spec(name)); diff != "" {
			t.Errorf("state %s (-want +got):\n%s", name, diff)
		}
	}
}

// TestDefinitionIsACopy: changing what Definition returns changes neither
// the next Definition nor the runtime's preset it names.
func TestDefinitionIsACopy(t *testing.T) {
	t.Parallel()
	d := Definition()
	for i := range d.States {
		if d.States[i].Retry != nil {
			d.States[i].Retry.MaxAttempts = 99
			d.States[i].Retry.NonRetryable = append(d.States[i].Retry.NonRetryable, "X")
		}
		d.States[i].Timers = append(d.States[i].Timers[:0:0], runtime.Timer{Event: "X"})
	}
	d.Transitions[0].To = "X"
	d.Events[0].Fields[0].Name = "x"
	d.Guards[0] = "X"
	again := Definition()
	if diff := cmp.Diff(Definition(), again); diff != "" {
		t.Errorf("two calls differ (-first +second):\n%s", diff)
	}
	if s, _ := again.State("RECORDING"); s.Retry.MaxAttempts != 5 {
		t.Errorf("RECORDING retries %d times after a caller changed a copy", s.Retry.MaxAttempts)
	}
	if again.Transitions[0].To == "X" || again.Events[0].Fields[0].Name == "x" || again.Guards[0] == "X" {
		t.Error("a change to a copy reached the definition")
	}
	if runtime.RetryDatabase.MaxAttempts != 5 || runtime.RetryPayment.MaxAttempts != 3 {
		t.Errorf("a change to a copy reached the runtime's presets: database %d, payment %d",
			runtime.RetryDatabase.MaxAttempts, runtime.RetryPayment.MaxAttempts)
	}
	drv := NewDriver(nil, nil).Definition()
	if s, _ := drv.State("RECORDING"); s.Retry.MaxAttempts != 5 {
		t.Errorf("the driver's definition of RECORDING: %+v", s.Retry)
	}
}

// TestViews: the view of the current state fires its events; a view kept
// after the machine moved on refuses, as Fire would.
func TestViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _, _ := newIn(StateAuthorizing, map[string]bool{"Risky": true})
	v, ok := m.View().(InAuthorizing)
	if !ok {
		t.Fatalf("View in AUTHORIZING is a %T", m.View())
	}
	if _, in := m.InChallenged(); in {
		t.Error("InChallenged reports true in AUTHORIZING")
	}
	if err := v.Authorized(ctx, Authorized{AuthCode: "a1"}); err != nil || m.State() != StateChallenged {
		t.Fatalf("Authorized through the view: %s, %v", m.State(), err)
	}
	if _, in := m.InChallenged(); !in {
		t.Error("InChallenged reports false in CHALLENGED")
	}
	err := v.Declined(ctx, Declined{})
	var te *runtime.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrIllegalTransition) || te.State != "CHALLENGED" || te.Event != "Declined" {
		t.Errorf("a stale view: %v", err)
	}
	if m.State() != StateChallenged {
		t.Errorf("a stale view moved the machine to %s", m.State())
	}
}

// TestFireNil: Fire of a nil event returns the documented error.
func TestFireNil(t *testing.T) {
	t.Parallel()
	m, _, rec := newIn(StateValidating, nil)
	err := m.Fire(context.Background(), nil)
	var te *runtime.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrIllegalTransition) || te.State != "VALIDATING" || te.Machine != "payment_flow" {
		t.Fatalf("Fire(nil) = %v", err)
	}
	if got, want := err.Error(), "payment_flow: illegal transition: nil event in state VALIDATING"; got != want {
		t.Errorf("Fire(nil) says %q, want %q", got, want)
	}
	if len(*rec) != 0 || m.State() != StateValidating {
		t.Errorf("Fire(nil) recorded %v, moved to %s", *rec, m.State())
	}
}

// TestDecodeEvent: payloads are decoded strictly, trailing data included.
func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	e, err := DecodeEvent("Cancel", []byte(`{"userID":"u"}`))
	if err != nil || e != (Cancel{UserID: "u"}) {
		t.Fatalf("DecodeEvent = %v, %v", e, err)
	}
	for payload, want := range map[string]string{
		`{"userID":"u"}}`:               `payment_flow: decode event Cancel: unexpected data after the payload's JSON value`,
		`{"userID":"u"} {"userID":"v"}`: `payment_flow: decode event Cancel: unexpected data after the payload's JSON value`,
		`{"user":"u"}`:                  `payment_flow: decode event Cancel: json: unknown field "user"`,
		`{"userID":1}`:                  `payment_flow: decode event Cancel: json: cannot unmarshal number into Go struct field Cancel.userID of type string`,
	} {
		e, err := DecodeEvent("Cancel", []byte(payload))
		if err == nil || err.Error() != want || e != nil {
			t.Errorf("DecodeEvent(%s) = %v, %v; want the error %q", payload, e, err, want)
		}
	}
	if e, err := DecodeEvent("Cancel", []byte("{\"userID\":\"u\"}\n\t ")); err != nil || e != (Cancel{UserID: "u"}) {
		t.Errorf("white space after the payload: %v, %v", e, err)
	}
	if e, err := DecodeEvent("Cancel", nil); err != nil || e != (Cancel{}) {
		t.Errorf("empty payload: %v, %v", e, err)
	}
	if _, err := DecodeEvent("Nope", nil); !errors.Is(err, runtime.ErrUnknownEvent) {
		t.Errorf("unknown event: %v", err)
	}
}
