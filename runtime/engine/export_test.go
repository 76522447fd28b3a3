package engine

// Listening is closed once Work listens for notifications.
func (e *Engine) Listening() <-chan struct{} { return e.listening }

// OnHeartbeat sets a function called after each extension of a running
// handler's lease, with its error. Set it before the engine works.
func (e *Engine) OnHeartbeat(f func(runID string, err error)) { e.hooks.heartbeat = f }

// OnAdvanced sets a function called after each transition a worker
// records; an error it returns stands for the transition's. Set it before
// the engine works.
func (e *Engine) OnAdvanced(f func(runID string) error) { e.hooks.advanced = f }

// OnClaimed sets a function called after each claim of Work, with what
// started its round ("start", "notified", "due" or "poll") and how many runs
// it claimed. Set it before the engine works.
func (e *Engine) OnClaimed(f func(why string, n int)) { e.hooks.claimed = f }
