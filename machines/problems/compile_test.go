package problems

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"sync"
	"testing"
)

// The source importer type-checks imported packages from their source and
// caches them; one is shared, under a lock, so that each is checked once.
var (
	importMu   sync.Mutex
	importFset = token.NewFileSet()
	imp        = importer.ForCompiler(importFset, "source", nil)
)

// typeCheck type-checks a program that uses the generated package and
// returns the type errors, joined.
func typeCheck(t *testing.T, body string) string {
	t.Helper()
	src := `package main

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	vg "github.com/fsmgen/fsmgen/machines/problems/videogeneration"
)

var _ = runtime.Run{}
var _ = context.Background
var _ = vg.Type

` + body
	importMu.Lock()
	defer importMu.Unlock()
	fset := importFset
	f, err := parser.ParseFile(fset, "prog.go", src, 0)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var errs []string
	conf := types.Config{
		Importer: imp,
		Error:    func(err error) { errs = append(errs, err.Error()) },
	}
	_, _ = conf.Check("main", fset, []*ast.File{f}, nil)
	return strings.Join(errs, "\n")
}

const allGuards = `
type guards struct{}

func (guards) IdempotencyCheckPassed(context.Context, rog.Start) bool        { return true }
func (guards) SignatureComputed(context.Context, rog.MediaNormalized) bool   { return true }
func (guards) AtOrAboveThreshold(context.Context, rog.RetrievalHit) bool     { return true }
func (guards) BelowThreshold(context.Context, rog.RetrievalMiss) bool        { return true }
func (guards) HTMLAvailable(context.Context, rog.SolveSucceeded) bool        { return true }
func (guards) NearMissAvailable(context.Context, rog.SolveFailed) bool       { return true }
func (guards) AssetsPersisted(context.Context, rog.AssetsRegistered) bool    { return true }
`

const handlersExceptIndexing = `
type handlers struct{}

func (handlers) Initiated(context.Context, *runtime.Run) (rog.InitiatedEvent, error) { return rog.Start{}, nil }
func (handlers) Ingesting(context.Context, *runtime.Run) (rog.IngestingEvent, error) { return rog.MediaNormalized{}, nil }
func (handlers) Retrieving(context.Context, *runtime.Run) (rog.RetrievingEvent, error) { return rog.RetrievalMiss{}, nil }
func (handlers) GeneratingSolution(context.Context, *runtime.Run) (rog.GeneratingSolutionEvent, error) { return rog.SolveSucceeded{}, nil }
func (handlers) Registering(context.Context, *runtime.Run) (rog.RegisteringEvent, error) { return rog.AssetsRegistered{}, nil }
`

// TestGeneratedCodeRefusesIllegalProgramsAtCompileTime proves the claims
// the generated package makes to the compiler: a transition the table
// forbids cannot be written against a typed view, a handler cannot return
// an event its state does not accept, and forgetting a guard or a state's
// handler does not compile, and the typed handle on durable runs takes
// only the machine's events (each event method only its own event) and
// the input type it was made for, while the legal versions compile.
func TestGeneratedCodeRefusesIllegalProgramsAtCompileTime(t *testing.T) {
	t.Parallel()
	ownsRun := "func (guards) UserOwnsRun(context.Context, rog.Cancel) bool { return true }\n"
	indexing := "func (handlers) Indexing(context.Context, *runtime.Run) (rog.IndexingEvent, error) { return rog.DocumentIndexed{}, nil }\n"
	tests := []struct {
		name    string
		body    string
		wantErr string // "" when the program must compile
	}{
		{
			name: "legal transition on a typed view",
			body: allGuards + ownsRun + `
func main() {
	m := rog.New(guards{}, rog.WithState(rog.StateRetrieving))
	if v, ok := m.InRetrieving(); ok {
		_ = v.RetrievalHit(context.Background(), rog.RetrievalHit{Confidence: 0.99})
	}
	switch v := m.View().(type) {
	case rog.InIndexing:
		_ = v.DocumentIndexed(context.Background(), rog.DocumentIndexed{})
	}
}`,
		},
		{
			name: "transition the table forbids on a typed view",
			body: allGuards + ownsRun + `
func main() {
	m := rog.New(guards{}, rog.WithState(rog.StateRetrieving))
	if v, ok := m.InRetrieving(); ok {
		_ = v.DocumentIndexed(context.Background(), rog.DocumentIndexed{})
	}
}`,
			wantErr: "v.DocumentIndexed undefined (type retrieveorgenerate.InRetrieving has no field or method DocumentIndexed)",
		},
		{
			name: "any event on a final state's view",
			body: allGuards + ownsRun + `
func main() {
	m := rog.New(guards{})
	if v, ok := m.InSucceeded(); ok {
		_ = v.Cancel(context.Background(), rog.Cancel{})
	}
}`,
			wantErr: "v.Cancel undefined (type retrieveorgenerate.InSucceeded has no field or method Cancel)",
		},
		{
			name: "all handlers implemented",
			body: handlersExceptIndexing + indexing + `
var _ rog.Handlers = handlers{}
func main() {}`,
		},
		{
			name: "a state's handler left out",
			body: handlersExceptIndexing + `
var _ rog.Handlers = handlers{}
func main() {}`,
			wantErr: "cannot use handlers{} (value of struct type handlers) as retrieveorgenerate.Handlers value in variable declaration: handlers does not implement retrieveorgenerate.Handlers (missing method Indexing)",
		},
		{
			name: "a handler returning an event its state does not accept",
			body: `
type h struct{}
func (h) Ingesting(context.Context, *runtime.Run) (rog.IngestingEvent, error) { return rog.DocumentIndexed{}, nil }
func main() {}`,
			wantErr: "cannot use rog.DocumentIndexed{} (value of struct type retrieveorgenerate.DocumentIndexed) as retrieveorgenerate.IngestingEvent value in return statement: retrieveorgenerate.DocumentIndexed does not implement retrieveorgenerate.IngestingEvent (missing method ingestingEvent)",
		},
		{
			name: "the typed handle with this machine's events",
			body: `
type input struct{ Problem string }
func main() {
	var r runtime.Runner
	ctx := context.Background()
	h := rog.Runs[input](r)
	s, _ := h.Start(ctx, "key", input{Problem: "x"}, runtime.Owner{TenantID: "acme"})
	var st rog.State = s.State
	_ = st
	_, _ = h.Signal(ctx, s.ID, rog.Start{})
	_, _ = h.Cancel(ctx, s.ID, "user")
	_, _ = h.Get(ctx, s.ID)
	_, _ = h.Wait(ctx, s.ID)
}`,
		},
		{
			name: "the typed handle given an event of another machine",
			body: `
func main() {
	var r runtime.Runner
	_, _ = rog.Runs[struct{}](r).Signal(context.Background(), "id", vg.Rendered{})
}`,
			wantErr: "cannot use vg.Rendered{} (value of struct type videogeneration.Rendered) as retrieveorgenerate.Event value in argument to rog.Runs[struct{}](r).Signal: videogeneration.Rendered does not implement retrieveorgenerate.Event (unexported method isEvent)",
		},
		{
			name: "the typed handle has no method for an event a handler returns",
			body: `
func main() {
	var r runtime.Runner
	_, _ = rog.Runs[struct{}](r).RetrievalHit(context.Background(), "id", rog.RetrievalHit{})
}`,
			wantErr: "rog.Runs[struct{}](r).RetrievalHit undefined (type retrieveorgenerate.Handle[struct{}] has no field or method RetrievalHit)",
		},
		{
			name: "the typed handle started with the wrong input",
			body: `
type input struct{ Problem string }
func main() {
	var r runtime.Runner
	_, _ = rog.Runs[input](r).Start(context.Background(), "key", "a string", runtime.Owner{})
}`,
			wantErr: "cannot use \"a string\" (untyped string constant) as input value in argument to rog.Runs[input](r).Start",
		},
		{
			name: "the typed handle has no method for an event the engine fires",
			body: `
func main() {
	var r runtime.Runner
	_, _ = rog.Runs[struct{}](r).RetrievalFailed(context.Background(), "id", rog.RetrievalFailed{})
}`,
			wantErr: "rog.Runs[struct{}](r).RetrievalFailed undefined (type retrieveorgenerate.Handle[struct{}] has no field or method RetrievalFailed)",
		},
		{
			name: "a guard left out",
			body: allGuards + `
func main() { _ = rog.New(guards{}) }`,
			wantErr: "cannot use guards{} (value of struct type guards) as retrieveorgenerate.Guards value in argument to rog.New: guards does not implement retrieveorgenerate.Guards (missing method UserOwnsRun)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := typeCheck(t, tt.body)
			if tt.wantErr == "" {
				if got != "" {
					t.Fatalf("legal program does not type-check:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tt.wantErr) {
				t.Fatalf("type errors:\n%s\nwant one containing:\n%s", got, tt.wantErr)
			}
		})
	}
}
