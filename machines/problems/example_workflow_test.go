package problems_test

import (
	"context"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
)

// A service wires the workflow to its adapters, computes the idempotency
// key and the policy snapshot of a submission, and hands the engine the
// driver of each run.
func ExampleWorkflow() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := local.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	wf, err := problems.New(local.NewSet(pool, &local.MemoryUploads{}).Adapters())
	if err != nil {
		log.Fatal(err)
	}

	const user = "8a5f2c1e-0000-4000-8000-000000000001"
	cmd := problems.SubmitProblem{Text: "Solve 2x + 3 = 7", MediaType: "text/plain"}
	key, err := wf.Key(ctx, user, cmd)
	if err != nil {
		log.Fatal(err)
	}
	policy, err := wf.PolicyFor(ctx, rog.Type, user, problems.TierPro, problems.SensitivityStandard)
	if err != nil {
		log.Fatal(err)
	}
	// Start a run of type rog.Type with input cmd, idempotency key key and
	// policy snapshot policy; the engine then drives it with wf.Driver().
	_, _ = key, policy
}
