package engine_test

import (
	"os"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashEnv); dsn != "" {
		os.Exit(crashWorker(dsn))
	}
	if dsn := os.Getenv(nestedCrashEnv); dsn != "" {
		os.Exit(nestedCrashWorker(dsn))
	}
	if dsn := os.Getenv(parallelCrashEnv); dsn != "" {
		os.Exit(parallelCrashWorker(dsn))
	}
	if dsn := os.Getenv(panicEnv); dsn != "" {
		os.Exit(panicWorker(dsn))
	}
	pgtest.Main(m)
}
