package engine

// Listening is closed once Work listens for notifications.
func (e *Engine) Listening() <-chan struct{} { return e.listening }
