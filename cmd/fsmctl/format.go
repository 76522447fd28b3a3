package main

import (
	"github.com/fsmgen/fsmgen/internal/runprint"
)

// fsmctl prints runs, times and tables as package runprint does.
var (
	formatTime    = runprint.Time
	orDash        = runprint.OrDash
	newTable      = runprint.Table
	printRunTable = runprint.RunTable
	printRun      = runprint.Run
	printHistory  = runprint.History
	compactJSON   = runprint.CompactJSON
)
