package fsmtest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestClockReadsStartUntilAdvanced(t *testing.T) {
	c := fsmtest.NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("second Now = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("Now after Advance = %v, want %v", got, want)
	}
}

func TestClockTickAdvancesAfterEachReading(t *testing.T) {
	c := fsmtest.NewClock(start).Tick(time.Second)
	for i := range 3 {
		if got, want := c.Now(), start.Add(time.Duration(i)*time.Second); !got.Equal(want) {
			t.Fatalf("reading %d = %v, want %v", i, got, want)
		}
	}
}

// TestClockConcurrentUse: readings and advances from several goroutines
// are serialised (go test -race checks it) and none is lost.
func TestClockConcurrentUse(t *testing.T) {
	c := fsmtest.NewClock(start).Tick(time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Now()
				c.Advance(time.Second)
			}
		}()
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(800*(time.Second+time.Millisecond)); !got.Equal(want) {
		t.Fatalf("Now after 800 readings and advances = %v, want %v", got, want)
	}
}
