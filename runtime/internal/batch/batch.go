// Package batch is the runtime's group commit: writes handed to a Batcher
// by concurrent callers join a queue, and one flusher at a time takes what
// is queued, up to a size, and writes it with one call (one statement, one
// commit), answering each caller with its own result after that call
// returned. While a batch is being written the next one gathers, so that
// under load a commit holds what arrived during the previous one; a write
// that finds nothing queued, no batch being written and few others in
// flight is written at once, by its caller.
//
// It also builds the arguments of the shared statement, dbsqlc.AdvanceRuns,
// from those of the single one, dbsqlc.AdvanceRun.
package batch

import (
	"context"
	"sync"
	"time"

	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Alone is how many callers may write on their own at once (see Do) while
// nothing waits in the queue and no batch is being written. PostgreSQL
// flushes the WAL of concurrent commits together, so that a few writes in
// flight cost about one flush; once more arrive, batches take over, and
// every write waits for one until the queue is empty: a batch shares the
// server's work of starting a statement among its rows, which on a busy
// server is worth more than the commit a write on its own would save.
// On two cores this kept 4 concurrent runs writing alone and took 16 from
// 0.90× to 1.56× a bare INSERT (bench/README.md, "Record against the bare
// INSERT" and "Group commit: who writes alone").
const Alone = 4

// Batcher batches items of type I whose writes give results of type R.
type Batcher[I, R any] struct {
	size    int
	window  time.Duration
	timeout time.Duration
	key     func(I) string
	exec    func(context.Context, []I) []R

	mu       sync.Mutex
	queue    []*item[I, R]
	flushing bool
	// alone counts the callers writing on their own (see Do).
	alone int
	more  chan struct{}
}

type item[I, R any] struct {
	in    I
	key   string
	taken bool
	done  chan struct{}
	res   R
}

// New returns a Batcher that writes at most size items at once with exec,
// which returns one result per item, in order, and must not wait for a
// row lock another transaction holds (or one slow item holds up every
// caller). key names what an item
// writes: two items of one key never go in the same batch (the later one
// goes in a later batch). A batch of more than one item, but fewer than
// size, waits up to window for more. exec is called with a context of its
// own that ends after timeout.
func New[I, R any](size int, window, timeout time.Duration, key func(I) string, exec func(context.Context, []I) []R) *Batcher[I, R] {
	return &Batcher[I, R]{size: max(size, 1), window: window, timeout: timeout, key: key, exec: exec, more: make(chan struct{}, 1)}
}

// Outcome says how Do ended.
type Outcome int

const (
	// Done: the batch's call returned; the result is the item's.
	Done Outcome = iota
	// Withdrawn: the caller's context ended before a batch took the item,
	// which is not written.
	Withdrawn
	// Unknown: the caller's context ended after a batch took the item and
	// before the batch's call returned: the item may be written, or not.
	Unknown
)

// Do writes in and returns its result. When nothing waits in the queue, no
// batch is being written and fewer than Alone callers are writing on their
// own, Do calls alone, which writes in by itself with the caller's context,
// in the caller's goroutine, and returns its result as Done: a few
// concurrent writes cost what they cost without a Batcher. Otherwise in
// joins the queue, and Do returns once the batch that takes it
// is written. When ctx ends first, Do returns at once: Withdrawn when no
// batch took the item yet (nothing is written), Unknown when one did (the
// batch goes on, and the item may be written).
func (b *Batcher[I, R]) Do(ctx context.Context, in I, alone func() R) (R, Outcome) {
	b.mu.Lock()
	if len(b.queue) == 0 && !b.flushing && b.alone < Alone {
		b.alone++
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			b.alone--
			b.mu.Unlock()
		}()
		return alone(), Done
	}
	it := &item[I, R]{in: in, key: b.key(in), done: make(chan struct{})}
	b.queue = append(b.queue, it)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
	if start {
		go b.flush()
	}
	select {
	case <-it.done:
		return it.res, Done
	case <-ctx.Done():
	}
	var zero R
	b.mu.Lock()
	defer b.mu.Unlock()
	if it.taken {
		return zero, Unknown
	}
	for i, q := range b.queue {
		if q == it {
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			break
		}
	}
	return zero, Withdrawn
}

// flush writes batches until the queue is empty.
func (b *Batcher[I, R]) flush() {
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		in := make([]I, len(batch))
		for i, it := range batch {
			in[i] = it.in
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		res := b.exec(ctx, in)
		cancel()
		for i, it := range batch {
			it.res = res[i]
			close(it.done)
		}
	}
}

// take takes the next batch off the queue, or nil (and stops flushing)
// when it is empty. When more than one item waits but fewer than a full
// batch, it lingers up to the window for more.
func (b *Batcher[I, R]) take() []*item[I, R] {
	b.mu.Lock()
	if n := len(b.queue); n > 1 && n < b.size && b.window > 0 {
		timer := time.NewTimer(b.window)
		for expired := false; !expired && len(b.queue) < b.size; {
			b.mu.Unlock()
			select {
			case <-b.more:
			case <-timer.C:
				expired = true
			}
			b.mu.Lock()
		}
		timer.Stop()
	}
	if len(b.queue) == 0 {
		b.flushing = false
		b.mu.Unlock()
		return nil
	}
	var batch []*item[I, R]
	seen := make(map[string]bool, min(len(b.queue), b.size))
	rest := b.queue[:0]
	for _, it := range b.queue {
		if len(batch) == b.size || seen[it.key] {
			rest = append(rest, it)
			continue
		}
		seen[it.key] = true
		it.taken = true
		batch = append(batch, it)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	b.mu.Unlock()
	return batch
}

// Fits reports whether the transition a can be written by AdvanceRuns:
// a transition of a nested machine cannot (AdvanceRuns keeps no timer
// anchors, history or exited and entered states), and is written alone.
func Fits(a dbsqlc.AdvanceRunParams) bool {
	return !a.Anchored && a.HistorySet == nil && a.Exited == nil && a.Entered == nil
}

// Append adds the transition a, as built for dbsqlc.AdvanceRun, to the
// arguments of dbsqlc.AdvanceRuns. Now is left to the caller.
func Append(arg *dbsqlc.AdvanceRunsParams, a dbsqlc.AdvanceRunParams) {
	arg.Ids = append(arg.Ids, a.ID)
	arg.FromStates = append(arg.FromStates, a.FromState)
	arg.ToStates = append(arg.ToStates, a.ToState)
	arg.ToStatuses = append(arg.ToStatuses, a.ToStatus)
	arg.RowVersions = append(arg.RowVersions, a.RowVersion)
	arg.WorkflowTypes = append(arg.WorkflowTypes, a.WorkflowType)
	arg.DefinitionVersions = append(arg.DefinitionVersions, a.DefinitionVersion)
	arg.Events = append(arg.Events, a.Event)
	arg.Payloads = append(arg.Payloads, a.Payload)
	delay := int64(-1)
	if a.NextDelayUs.Valid {
		delay = max(a.NextDelayUs.Int64, 0)
	}
	arg.NextDelaysUs = append(arg.NextDelaysUs, delay)
	arg.Fenced = append(arg.Fenced, a.Fenced)
	arg.ReleaseLeases = append(arg.ReleaseLeases, a.ReleaseLease)
	arg.Owners = append(arg.Owners, a.Owner)
	arg.Epochs = append(arg.Epochs, a.Epoch)
	arg.Finishes = append(arg.Finishes, a.Finish)
	arg.ResultStatuses = append(arg.ResultStatuses, a.ResultStatus)
	arg.Outcomes = append(arg.Outcomes, a.Outcome.String)
	arg.Outputs = append(arg.Outputs, a.Output)
	arg.CostsUsd = append(arg.CostsUsd, a.CostUsd)
	arg.DurationsMs = append(arg.DurationsMs, a.DurationMs.Int64)
	arg.ErrorCodes = append(arg.ErrorCodes, a.ErrorCode.String)
	arg.ErrorDetails = append(arg.ErrorDetails, a.ErrorDetail.String)
}
