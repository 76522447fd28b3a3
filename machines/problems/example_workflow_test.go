package problems_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// A service wires the workflow to its adapters, registers it with an
// engine, submits problems idempotently and drives them: inline for the
// synchronous answer, or with the engine's workers.
func ExampleWorkflow_Submit() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	if err := local.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	wf, err := problems.New(local.NewSet(pool, &local.MemoryUploads{}).Adapters())
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(store.New(pool), engine.Config{WorkerID: engine.DefaultWorkerID("problems")})
	if err != nil {
		log.Fatal(err)
	}
	if err := wf.Register(ctx, eng); err != nil {
		log.Fatal(err)
	}

	res, err := wf.Submit(ctx, eng, problems.SubmitRequest{
		UserID:           "8a5f2c1e-0000-4000-8000-000000000001",
		TenantID:         "acme",
		SubscriptionTier: problems.TierPro,
		Sensitivity:      problems.SensitivityStandard,
		Problem:          problems.SubmitProblem{Text: "Solve 2x + 3 = 7", MediaType: "text/plain"},
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := eng.Drive(ctx, res.Run.ID) // returns once the HTML solution is ready
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.State, run.Status)
}
