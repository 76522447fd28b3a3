package activity

// Wait is the Executor's default wait (a timer, returning early with ctx's
// error), for tests that wrap it.
var Wait = sleepCtx
