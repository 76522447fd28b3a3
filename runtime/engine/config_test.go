package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestNewRefusesConfig(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	tests := []struct {
		name string
		st   *store.Store
		cfg  engine.Config
		want string
	}{
		{"heartbeat as long as the lease", v.st, engine.Config{Lease: time.Second, Heartbeat: time.Second},
			"engine: invalid config: heartbeat 1s is not shorter than the lease 1s"},
		{"heartbeat longer than the default lease", v.st, engine.Config{Heartbeat: time.Minute},
			"engine: invalid config: heartbeat 1m0s is not shorter than the lease 30s"},
		{"negative values", v.st, engine.Config{Lease: -time.Second, PollInterval: -1, Concurrency: -2, ShutdownGrace: -time.Minute, RecoveryLimit: -3},
			"engine: invalid config: negative lease -1s; negative heartbeat -333.333333ms; negative poll interval -1ns; negative shutdown grace -1m0s; negative concurrency -2; negative recovery limit -3"},
		{"poll interval under a millisecond", v.st, engine.Config{PollInterval: time.Microsecond},
			"engine: invalid config: poll interval 1µs is shorter than 1ms"},
		{"no store", nil, engine.Config{}, "engine: invalid config: no store"},
		{"a store without a pool", store.New(nil), engine.Config{}, "engine: invalid config: the store has no pool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := engine.New(tc.st, tc.cfg)
			if !errors.Is(err, runtime.ErrInvalidConfig) || err.Error() != tc.want || e != nil {
				t.Errorf("New: %v, %v\nwant %s", e, err, tc.want)
			}
		})
	}
	// The defaults, and a heartbeat shorter than the lease, are fine.
	for _, cfg := range []engine.Config{{}, {Lease: time.Second}, {Lease: time.Second, Heartbeat: 999 * time.Millisecond},
		{PollInterval: engine.MinPollInterval}, {DisableNotify: true}} {
		if _, err := engine.New(v.st, cfg); err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
}
