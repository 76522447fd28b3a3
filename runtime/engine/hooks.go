package engine

// hooks are the engine's test signals: functions it calls at the points
// that tests wait for, instead of waiting for a time. Only tests set them
// (export_test.go); they are nil otherwise.
type hooks struct {
	// heartbeat is called after each extension of a running handler's
	// lease, with its error.
	heartbeat func(runID string, err error)
	// advanced is called after each transition a worker records; an error
	// it returns stands for the transition's: a test makes the
	// acknowledgement of a committed transition look lost with it.
	advanced func(runID string) error
	// claimed is called after each claim of Work, with what started its
	// round (wakeStart, wakeNotified, wakeDue, wakePoll) and how many runs
	// it claimed.
	claimed func(why string, n int)
}
