package engine

import (
	"context"
	"sync"
	"time"

	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
)

// batcher commits the transitions of the engine's sessions together (group
// commit): a transition handed to it joins a queue, and one flusher at a
// time takes what is queued, up to Config.BatchSize, and writes it with
// enginestore.AdvanceBatch, one statement and one commit for all. While a
// batch is being written the next one gathers, so that under load a commit
// holds as many transitions as arrived during the previous one; a lone
// transition is written at once.
type batcher struct {
	e      *Engine
	size   int
	window time.Duration

	mu       sync.Mutex
	queue    []*batchItem
	flushing bool
	// more is signalled when an item joins the queue while the flusher
	// lingers for a fuller batch.
	more chan struct{}
}

type batchItem struct {
	runID string
	p     enginestore.AdvanceParams
	taken bool
	done  chan struct{}
	res   enginestore.BatchResult
}

func newBatcher(e *Engine) *batcher {
	return &batcher{e: e, size: e.cfg.BatchSize, window: e.cfg.BatchWindow, more: make(chan struct{}, 1)}
}

// advance records p on run runID: in a batch when it can go in one (see
// enginestore.Batchable), else alone. The caller's context counts until a
// flusher takes the transition: a caller whose context ends before that
// gets the context's error and nothing is written. Once taken, the
// transition is written whatever the context says, and advance returns only
// when its transaction is over, so that the caller never has to guess
// whether it committed (other than by a lost connection, as for any write).
func (b *batcher) advance(ctx context.Context, runID string, p enginestore.AdvanceParams) (enginestore.Advanced, error) {
	if b.size <= 1 || !enginestore.Batchable(p) {
		return b.e.es.Advance(ctx, runID, p)
	}
	if err := ctx.Err(); err != nil {
		return enginestore.Advanced{}, runErr("advance", runID, err)
	}
	it := &batchItem{runID: runID, p: p, done: make(chan struct{})}
	b.mu.Lock()
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
		return it.res.Advanced, it.res.Err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if !it.taken {
		for i, q := range b.queue {
			if q == it {
				b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
		return enginestore.Advanced{}, runErr("advance", runID, ctx.Err())
	}
	b.mu.Unlock()
	<-it.done
	return it.res.Advanced, it.res.Err
}

// flush writes batches until the queue is empty.
func (b *batcher) flush() {
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		items := make([]enginestore.BatchItem, len(batch))
		for i, it := range batch {
			items[i] = enginestore.BatchItem{RunID: it.runID, Params: it.p}
		}
		// The callers wait for the outcome whatever their contexts say;
		// a lease outlives no write.
		ctx, cancel := context.WithTimeout(context.Background(), b.e.cfg.Lease)
		res := b.e.es.AdvanceBatch(ctx, items)
		cancel()
		for i, it := range batch {
			it.res = res[i]
			close(it.done)
		}
	}
}

// take takes the next batch off the queue, or nil (and stops flushing)
// when it is empty. When more than one transition waits but fewer than a
// full batch, it lingers up to the window for more.
func (b *batcher) take() []*batchItem {
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
	var batch []*batchItem
	seen := make(map[string]bool, min(len(b.queue), b.size))
	rest := b.queue[:0]
	for _, it := range b.queue {
		// Two transitions of one run go in different batches, in order.
		if len(batch) == b.size || seen[it.runID] {
			rest = append(rest, it)
			continue
		}
		seen[it.runID] = true
		it.taken = true
		batch = append(batch, it)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	b.mu.Unlock()
	return batch
}
