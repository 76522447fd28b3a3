package gen_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// nestedInputs are the nested machines of testdata/nested.
func nestedInputs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "nested", "*.fsm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/nested/*.fsm: %v", err)
	}
	return files
}

// TestXStateRoundTripNested exports each nested machine of
// testdata/nested to XState and imports it back: the import checks to the
// same machine, exporting it again gives the same bytes, and importing
// that gives the same .fsm text. Its exports are golden files too.
func TestXStateRoundTripNested(t *testing.T) {
	t.Parallel()
	for _, file := range nestedInputs(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			m := load(t, file).Machines[0]
			exported, err := gen.XState(m)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := gen.SCXML(m)
			if err != nil {
				t.Fatal(err)
			}
			wellFormedSCXML(t, sc)
			base := strings.TrimSuffix(filepath.Base(file), ".fsm")
			golden(t, base+".xstate.json", exported)
			golden(t, base+".scxml", sc)
			src := importXState(t, file, exported)
			golden(t, base+".imported", src)
			spec, ds := dsl.Load(file, src)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("the import does not check: %v\n%s", ds.Err(), src)
			}
			back := spec.Machines[0]
			ignore := cmp.Options{cmpopts.IgnoreTypes(lexer.Position{}), cmpopts.IgnoreFields(dsl.Machine{}, "Upgrades")}
			if diff := cmp.Diff(m, back, ignore); diff != "" {
				t.Errorf("the imported machine differs (-exported +imported):\n%s\n%s", diff, src)
			}
			again, err := gen.XState(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(exported), string(again)); diff != "" {
				t.Errorf("exporting the import differs (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff(string(src), string(importXState(t, file, again))); diff != "" {
				t.Errorf("importing again differs (-first +second):\n%s", diff)
			}
		})
	}
}

// TestImportXStateNestedPlain imports a nested config as XState users
// write it, without fsmgen's metadata.
func TestImportXStateNestedPlain(t *testing.T) {
	t.Parallel()
	config := `{
  "id": "player",
  "initial": "stopped",
  "states": {
    "stopped": {
      "on": {"PLAY": "active", "RESUME": "active.hist", "RECALL": "#player.active.deepHist"}
    },
    "active": {
      "initial": "playing",
      "entry": ["startClock"],
      "exit": {"type": "stopClock"},
      "after": {"1800000": "off"},
      "onDone": "off",
      "on": {"STOP": "stopped"},
      "states": {
        "playing": {
          "on": {
            "PAUSE": "paused",
            "TICK": {"actions": "count"},
            "SEEK": {"target": "playing"},
            "RESTART": {"target": "playing", "reenter": true},
            "FINISH": "ended",
            "FAIL": "#broken"
          }
        },
        "paused": {
          "on": {"PAUSE": "playing", "PLAY": "playing"},
          "always": {"target": "#player.stopped", "guard": {"type": "not", "params": {"guard": "stillWanted"}}}
        },
        "ended": {"type": "final"},
        "hist": {"type": "history"},
        "deepHist": {"type": "history", "history": "deep"}
      }
    },
    "broken": {"id": "broken", "type": "final"},
    "off": {"type": "final"}
  }
}`
	src, notes, err := gen.ImportXState("player.fsm", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "plain.imported", src)
	wantNotes := []string{
		"machine player is named Player: a .fsm machine name starts with an upper-case letter",
		"action startClock is named StartClock: a .fsm action name starts with an upper-case letter",
		"action stopClock is named StopClock: a .fsm action name starts with an upper-case letter",
		"state playing on TICK: actions dropped: they belong in Go",
		"guard stillWanted is named StillWanted: a .fsm guard name starts with an upper-case letter",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestImportXStateNamedDelay imports named delays as timers on a duration
// field of the event that enters their state, a composite's included.
func TestImportXStateNamedDelay(t *testing.T) {
	t.Parallel()
	config := `{
  "id": "Poll",
  "initial": "IDLE",
  "states": {
    "IDLE": {"on": {"Start": "ACTIVE"}},
    "ACTIVE": {
      "initial": "POLLING",
      "after": {"expiresIn": "#Poll.EXPIRED"},
      "states": {
        "POLLING": {"on": {"Pending": "WAITING"}},
        "WAITING": {"after": {"interval": "POLLING"}}
      }
    },
    "EXPIRED": {"type": "final"}
  }
}`
	src, notes, err := gen.ImportXState("poll.fsm", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "named.imported", src)
	wantNotes := []string{
		"state ACTIVE: the named delay expiresIn is the field expiresIn of event Start, bounded to [1ms, 7d]",
		"state WAITING: the named delay interval is the field interval of event Pending, bounded to [1ms, 7d]",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
