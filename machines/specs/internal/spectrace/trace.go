// Package spectrace reads the traces of the machines of machines/specs
// (trace.txt, whose format machines/specs/README.md gives) and replays
// them on an implementation of a machine: its generated Go code, a run of
// the durable engine, or a reference model of the .fsm file's semantics
// that also schedules the timers of the generated code.
package spectrace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"
)

// Trace is one trace of a trace file.
type Trace struct {
	Name  string
	Steps []Step
}

// Step is one step of a trace: what happens, then what the run must look
// like.
type Step struct {
	// Line is the step's line in its file.
	Line int
	// Start marks the start of the run; After, the clock advancing by a
	// duration; else Event names the event sent, with its Payload (nil
	// for none) as written, durations as Go durations.
	Start   bool
	After   time.Duration
	Event   string
	Payload json.RawMessage
	// Guards are the guards admitting events from this step on (those
	// absent refuse).
	Guards map[string]bool
	// Leaf is the leaf the run is in after the step and In the composites
	// that contain it, innermost first. In a parallel state, Leaf is the
	// run's persisted form: the active leaf of each region, in region
	// order, joined by "|" ("Pending|Running"), and In the composites
	// that contain every one of them.
	Leaf string
	In   []string
	// Refused says the event is not taken.
	Refused bool
	// Do are the entry and exit actions the step runs, in order.
	Do []string
	// Checked is false for the start step a trace does not write.
	Checked bool
}

// Trigger describes the step's trigger as the trace writes it.
func (s Step) Trigger() string {
	switch {
	case s.Start:
		return "start"
	case s.Event == "":
		return "after " + s.After.String()
	case s.Payload != nil:
		return s.Event + " " + string(s.Payload)
	}
	return s.Event
}

// ParseFile reads a trace file.
func ParseFile(path string) ([]Trace, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	return Parse(path, src)
}

// Parse reads the traces of src; name names it in errors.
func Parse(name string, src []byte) ([]Trace, error) {
	var (
		out    []Trace
		guards = map[string]bool{}
	)
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "trace "); ok {
			out = append(out, Trace{Name: strings.TrimSpace(rest)})
			guards = map[string]bool{}
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s:%d: a step before the first trace line", name, n)
		}
		tr := &out[len(out)-1]
		if rest, ok := strings.CutPrefix(line, "guard "); ok {
			g := strings.TrimSpace(rest)
			admit := !strings.HasPrefix(g, "!")
			guards = maps.Clone(guards)
			guards[strings.TrimPrefix(g, "!")] = admit
			continue
		}
		step, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		step.Line = n
		step.Guards = guards
		if len(tr.Steps) == 0 && !step.Start {
			tr.Steps = append(tr.Steps, Step{Line: n, Start: true, Guards: guards})
		}
		if step.Start && len(tr.Steps) > 0 {
			return nil, fmt.Errorf("%s:%d: start is the first step of a trace", name, n)
		}
		tr.Steps = append(tr.Steps, step)
	}
	for _, tr := range out {
		if len(tr.Steps) == 0 {
			return nil, fmt.Errorf("%s: trace %s has no steps", name, tr.Name)
		}
	}
	return out, nil
}

func parseStep(line string) (Step, error) {
	left, right, ok := strings.Cut(line, "=>")
	if !ok {
		return Step{}, fmt.Errorf("want TRIGGER => LEAF, got %q", line)
	}
	s := Step{Checked: true}
	left = strings.TrimSpace(left)
	switch {
	case left == "start":
		s.Start = true
	case strings.HasPrefix(left, "after "):
		d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(left, "after ")))
		if err != nil {
			return Step{}, fmt.Errorf("after: %w", err)
		}
		s.After = d
	default:
		if rest, ok := strings.CutSuffix(left, " refused"); ok {
			left, s.Refused = strings.TrimSpace(rest), true
		}
		ev, payload, _ := strings.Cut(left, " ")
		s.Event = ev
		if payload = strings.TrimSpace(payload); payload != "" {
			if !json.Valid([]byte(payload)) {
				return Step{}, fmt.Errorf("payload of %s is not JSON: %s", ev, payload)
			}
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(payload)); err != nil {
				return Step{}, fmt.Errorf("payload of %s: %w", ev, err)
			}
			s.Payload = b.Bytes()
		}
	}
	words := strings.Fields(right)
	leaves, words, err := parseLeaves(words)
	if err != nil {
		return Step{}, err
	}
	s.Leaf = strings.Join(leaves, "|")
	list := (*[]string)(nil)
	for _, w := range words {
		switch w {
		case "in":
			list = &s.In
		case "do":
			list = &s.Do
		default:
			if list == nil {
				return Step{}, fmt.Errorf("unexpected %q after the leaf", w)
			}
			*list = append(*list, w)
		}
	}
	return s, nil
}

// parseLeaves reads the leaves at the start of words, the right side of
// a step: one leaf, or the leaves of a configuration separated by "|"
// words. It returns them and the words after them.
func parseLeaves(words []string) (leaves, rest []string, err error) {
	for {
		if len(words) == 0 || words[0] == "|" || words[0] == "in" || words[0] == "do" {
			if len(leaves) == 0 {
				return nil, nil, fmt.Errorf("no leaf after =>")
			}
			return nil, nil, fmt.Errorf("no leaf after |")
		}
		if strings.Contains(words[0], "|") {
			return nil, nil, fmt.Errorf("leaf %q: want the leaves of a configuration separated by \" | \"", words[0])
		}
		leaves, words = append(leaves, words[0]), words[1:]
		if len(words) == 0 || words[0] != "|" {
			return leaves, words, nil
		}
		words = words[1:]
	}
}
