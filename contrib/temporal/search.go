package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The search attributes (Keyword) a run's workflow upserts when it starts
// and after every transition, to list runs by state, status, tenant and
// idempotency key with Temporal's visibility (Runner.List). The server
// must have them registered in the namespace: devserver.Start does, an
// operator does on another server with the command that
// CreateSearchAttributesCommand returns, and NewRunner checks that they
// are there (CheckSearchAttributes).
var (
	// SearchState is the run's state: a leaf, or for a run in a parallel
	// state its configuration ("A|B").
	SearchState = temporal.NewSearchAttributeKeyKeyword("FsmState")
	// SearchStatus is the run's runtime.Status. A workflow that failed,
	// was terminated, cancelled or timed out at Temporal's level keeps the
	// status of the state it stopped in (running); Runner reads such a run
	// as failed from its execution status.
	SearchStatus = temporal.NewSearchAttributeKeyKeyword("FsmStatus")
	// SearchTenant is the tenant that owns the run.
	SearchTenant = temporal.NewSearchAttributeKeyKeyword("FsmTenant")
	// SearchKey is the run's idempotency key.
	SearchKey = temporal.NewSearchAttributeKeyKeyword("FsmIdempotencyKey")
)

// SearchAttributes are the keys of the search attributes a run's workflow
// upserts, all of type Keyword: SearchState, SearchStatus, SearchTenant and
// SearchKey, in that order.
func SearchAttributes() []temporal.SearchAttributeKeyKeyword {
	return []temporal.SearchAttributeKeyKeyword{SearchState, SearchStatus, SearchTenant, SearchKey}
}

// CreateSearchAttributesCommand returns the Temporal CLI command line that
// creates the search attributes in namespace, for an operator to run once
// per namespace on a cluster (add --address and the cluster's TLS or API
// key flags):
//
//	temporal operator search-attribute create --namespace default \
//	    --name FsmState --type Keyword --name FsmStatus --type Keyword \
//	    --name FsmTenant --type Keyword --name FsmIdempotencyKey --type Keyword
//
// Each name needs its own --type: the CLI (1.5) silently skips a name
// without one.
//
// On Temporal Cloud, create them with tcld or the Cloud UI instead, with
// the same names and type.
func CreateSearchAttributesCommand(namespace string) []string {
	cmd := []string{"temporal", "operator", "search-attribute", "create", "--namespace", namespace}
	for _, k := range SearchAttributes() {
		cmd = append(cmd, "--name", k.GetName(), "--type", "Keyword")
	}
	return cmd
}

// ErrSearchAttributes is matched by errors.Is when the namespace of a
// client lacks search attributes that the runner needs.
var ErrSearchAttributes = errors.New("search attributes are not registered")

// CheckSearchAttributes checks that the namespace of c has the search
// attributes SearchAttributes: for each, a visibility count filtered on it
// (a query on an attribute that is not registered is refused). Missing
// ones are reported together, by name, in an error matching
// ErrSearchAttributes that says how to create them. An attribute created
// with another type than Keyword is not told apart from a Keyword one when
// the query on it works.
func CheckSearchAttributes(ctx context.Context, c client.Client) error {
	var missing []string
	for _, k := range SearchAttributes() {
		_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: k.GetName() + " = ''"})
		var invalid *serviceerror.InvalidArgument
		switch {
		case errors.As(err, &invalid):
			missing = append(missing, k.GetName())
		case err != nil:
			return fmt.Errorf("temporal: checking search attribute %s: %w", k.GetName(), err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("temporal: %w in the client's namespace: %s (create them, of type Keyword, with: %s)",
		ErrSearchAttributes, strings.Join(missing, ", "), strings.Join(CreateSearchAttributesCommand("<namespace>"), " "))
}
