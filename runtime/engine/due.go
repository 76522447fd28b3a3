package engine

import (
	"slices"
	"sync"
	"time"
)

// maxDueTimes bounds the due times an engine remembers; past it, the
// latest are forgotten, and polling finds their runs.
const maxDueTimes = 4096

// dueTimes remembers, by the local clock, when runs that this engine
// scheduled fall due: a retry, a timer of a state that waits, a lease given
// back with a delay. Work sleeps until the earliest of them rather than
// until its next poll, so that work due in less than PollInterval starts
// when it falls due. Each time is taken after the statement that set the
// run's next_run_at returned, so it is never earlier than the time the
// database holds.
type dueTimes struct {
	mu sync.Mutex
	at []time.Time // ascending
}

// add remembers that a run falls due after d from now.
func (t *dueTimes) add(d time.Duration) {
	if d <= 0 {
		return
	}
	at := time.Now().Add(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	i, _ := slices.BinarySearchFunc(t.at, at, time.Time.Compare)
	if i == maxDueTimes {
		return
	}
	t.at = slices.Insert(t.at, i, at)
	if len(t.at) > maxDueTimes {
		t.at = t.at[:maxDueTimes]
	}
}

// next forgets the times not after claimed, the start of a claim that
// found what was due by then, and returns the earliest time left.
func (t *dueTimes) next(claimed time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, _ := slices.BinarySearchFunc(t.at, claimed, func(a, b time.Time) int {
		if !a.After(b) {
			return -1
		}
		return 1
	})
	t.at = t.at[i:]
	if len(t.at) == 0 {
		return time.Time{}, false
	}
	return t.at[0], true
}
