package compliance_test

import (
	"testing"

	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/runtime"
)

// TestDefinitionIsACopy: changing the retry policy of what fcha.Definition
// returns changes neither fcha's next Definition nor the runtime's preset
// the state names (PREQUALIFICATION retries with the database preset).
func TestDefinitionIsACopy(t *testing.T) {
	t.Parallel()
	d := fcha.Definition()
	if d.States[0].Retry == nil || d.States[0].Retry.Name != "database" {
		t.Fatalf("state %s retries with %+v, want the database preset", d.States[0].Name, d.States[0].Retry)
	}
	d.States[0].Retry.MaxAttempts = 99
	if got := fcha.Definition().States[0].Retry.MaxAttempts; got != 5 {
		t.Errorf("fcha's next Definition retries %d times", got)
	}
	if runtime.RetryDatabase.MaxAttempts != 5 {
		t.Errorf("runtime.RetryDatabase retries %d times", runtime.RetryDatabase.MaxAttempts)
	}
}
