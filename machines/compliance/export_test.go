package compliance

// SetActivityHook sets a function called after each activity of w
// succeeded, before the handler goes on: a test kills its process there.
func SetActivityHook(w *Workflow, f func(name string)) { w.activity = f }
