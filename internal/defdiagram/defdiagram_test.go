package defdiagram_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/internal/defdiagram"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/linearchain/instance"
)

// TestMermaidMatchesTheGenerator draws the definitions of the repository's
// machines and compares each diagram with the one fsmgen's generator draws
// from the machine's .fsm file: everything but the first comment line,
// which says where the diagram comes from, is the same.
func TestMermaidMatchesTheGenerator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fsm string
		def runtime.Definition
	}{
		{"machines/shop/shop.fsm", order.Definition()},
		{"machines/problems/retrieve_or_generate.fsm", retrieveorgenerate.Definition()},
		{"machines/compliance/fcha.fsm", fcha.Definition()},
		{"runtime/linearchain/linear_chain.fsm", instance.Definition()},
		{"machines/subscription/subscription.fsm", subscription.Definition()},
	}
	for _, tt := range tests {
		t.Run(tt.def.Type, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("..", "..", tt.fsm)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			spec, diags := dsl.Load(path, src)
			if spec == nil {
				t.Fatalf("load %s: %v", path, diags)
			}
			var m *dsl.Machine
			for _, c := range spec.Machines {
				if c.Type == tt.def.Type {
					m = c
				}
			}
			if m == nil {
				t.Fatalf("%s has no machine of type %s", path, tt.def.Type)
			}
			want := dropLine(string(gen.Mermaid(m)), 1)
			got := defdiagram.Mermaid(tt.def)
			if !bytes.HasPrefix(got, []byte("stateDiagram-v2\n    %% Drawn from the registered definition of "+tt.def.Type+" v")) {
				t.Errorf("first lines: %q", got[:min(len(got), 120)])
			}
			if diff := cmp.Diff(want, dropLine(string(got), 1)); diff != "" {
				t.Errorf("Mermaid(%s) against gen.Mermaid of %s (-want +got):\n%s", tt.def.Type, tt.fsm, diff)
			}
		})
	}
}

// dropLine removes line i (from 0) of s.
func dropLine(s string, i int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n")
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		72 * time.Hour: "3d", 20 * time.Second: "20s", 90 * time.Second: "90s", 2 * time.Hour: "2h",
		5 * time.Minute: "5m", 1500 * time.Millisecond: "1500ms", 1500 * time.Microsecond: "1.5ms", 0: "0s",
	} {
		if got := defdiagram.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := defdiagram.Table(&b, order.Definition()); err != nil {
		t.Fatal(err)
	}
	want := `FROM             EVENT                           GUARD          TO          OUTCOME
PENDING_PAYMENT  Pay                             -              PACKING     -
PENDING_PAYMENT  PaymentExpired (after 20s)      -              CANCELLED   -
PENDING_PAYMENT  Cancel                          [UserOwnsRun]  CANCELLED   -
PACKING          Packed                          -              IN_TRANSIT  -
PACKING          Cancel                          [UserOwnsRun]  REFUNDING   -
IN_TRANSIT       Delivered                       -              DELIVERED   -
IN_TRANSIT       Lost (after 3d)                 -              REFUNDING   -
DELIVERED        Returned                        -              REFUNDING   -
DELIVERED        ReturnWindowClosed (after 14d)  -              COMPLETED   -
REFUNDING        Refunded                        -              REFUNDED    refunded
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
