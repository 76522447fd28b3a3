package local

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var tables []string
	rows, _ := pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'problembank' ORDER BY 1`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"asset_versions", "contents", "problem_index", "problems", "videos"}, tables); diff != "" {
		t.Errorf("tables (-want +got):\n%s", diff)
	}
	var indexdef string
	if err := pool.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'problem_index_text_trgm_idx'`).Scan(&indexdef); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(indexdef, "USING gin (normalized_text gin_trgm_ops)") {
		t.Errorf("trigram index: %s", indexdef)
	}
}

type problemRow struct {
	ID, Signature, Text, PHash string
	Tags                       []string
}

func problemRows(t *testing.T, pool *pgxpool.Pool) []problemRow {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `
		SELECT id::text, signature, normalized_text, phash, topic_tags FROM problembank.problems ORDER BY created_at, id`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (problemRow, error) {
		var p problemRow
		err := r.Scan(&p.ID, &p.Signature, &p.Text, &p.PHash, &p.Tags)
		return p, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type versionRow struct {
	ID, ProblemID, AssetType string
	VersionNo                int
	StorageKey, Provenance   string
}

func versionRows(t *testing.T, pool *pgxpool.Pool) []versionRow {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `
		SELECT id::text, problem_id::text, asset_type, version_no, storage_key, provenance
		FROM problembank.asset_versions ORDER BY problem_id, asset_type, version_no`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (versionRow, error) {
		var v versionRow
		err := r.Scan(&v.ID, &v.ProblemID, &v.AssetType, &v.VersionNo, &v.StorageKey, &v.Provenance)
		return v, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	reg := NewRegistry(pool)
	spec := problems.ProblemSpec{
		ProblemSignature: problems.ProblemSignature("solve 2x+3=7", ""),
		NormalizedText:   "solve 2x+3=7",
		TopicTags:        []string{"algebra", "linear-equation"},
	}
	p1, err := reg.GetOrCreateProblem(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := reg.GetOrCreateProblem(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(problems.Problem{ID: p1.ID, ProblemSignature: spec.ProblemSignature, Created: true}, p1); diff != "" {
		t.Errorf("first GetOrCreateProblem (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(problems.Problem{ID: p1.ID, ProblemSignature: spec.ProblemSignature}, p2); diff != "" {
		t.Errorf("second GetOrCreateProblem (-want +got):\n%s", diff)
	}
	img, err := reg.GetOrCreateProblem(ctx, problems.ProblemSpec{ProblemSignature: problems.ProblemSignature("", "00ff00ff00ff00ff"), PHash: "00FF00FF00FF00FF"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]problemRow{
		{ID: p1.ID, Signature: spec.ProblemSignature, Text: "solve 2x+3=7", Tags: []string{"algebra", "linear-equation"}},
		{ID: img.ID, Signature: problems.ProblemSignature("", "00ff00ff00ff00ff"), PHash: "00ff00ff00ff00ff", Tags: []string{}},
	}, problemRows(t, pool)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	v1, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: p1.ID, AssetType: problems.AssetTypeSolutionHTML, StorageKey: "sha256:a", Provenance: "p-a"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: p1.ID, AssetType: problems.AssetTypeSolutionHTML, StorageKey: "sha256:a", Provenance: "p-a"})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: p1.ID, AssetType: problems.AssetTypeSolutionHTML, StorageKey: "sha256:b", Provenance: "p-b"})
	if err != nil {
		t.Fatal(err)
	}
	want1 := problems.AssetVersion{ID: v1.ID, ProblemID: p1.ID, AssetType: problems.AssetTypeSolutionHTML, VersionNo: 1, StorageKey: "sha256:a", Created: true}
	if diff := cmp.Diff(want1, v1); diff != "" {
		t.Errorf("first version (-want +got):\n%s", diff)
	}
	want1.Created = false
	if diff := cmp.Diff(want1, again); diff != "" {
		t.Errorf("same version again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(problems.AssetVersion{ID: v2.ID, ProblemID: p1.ID, AssetType: problems.AssetTypeSolutionHTML, VersionNo: 2, StorageKey: "sha256:b", Created: true}, v2); diff != "" {
		t.Errorf("second version (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]versionRow{
		{ID: v1.ID, ProblemID: p1.ID, AssetType: "solution_html", VersionNo: 1, StorageKey: "sha256:a", Provenance: "p-a"},
		{ID: v2.ID, ProblemID: p1.ID, AssetType: "solution_html", VersionNo: 2, StorageKey: "sha256:b", Provenance: "p-b"},
	}, versionRows(t, pool)); diff != "" {
		t.Errorf("asset_versions (-want +got):\n%s", diff)
	}
	got, err := reg.Version(ctx, v2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(problems.AssetVersion{ID: v2.ID, ProblemID: p1.ID, AssetType: "solution_html", VersionNo: 2, StorageKey: "sha256:b"}, got); diff != "" {
		t.Errorf("Version (-want +got):\n%s", diff)
	}
	for _, id := range []string{"not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		if _, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: id, AssetType: "solution_html", StorageKey: "k"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("CreateVersion of problem %q: %v, want ErrNotFound", id, err)
		}
		if _, err := reg.Version(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Version(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := reg.GetOrCreateProblem(ctx, problems.ProblemSpec{}); err == nil {
		t.Error("GetOrCreateProblem without a signature: no error")
	}
}

func TestRegistryIsSafeUnderConcurrentCallers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	reg := NewRegistry(pool)
	spec := problems.ProblemSpec{ProblemSignature: problems.ProblemSignature("1+1", ""), NormalizedText: "1+1"}
	const n = 8
	ids := make([]string, n)
	versions := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := reg.GetOrCreateProblem(ctx, spec)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = p.ID
			v, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: p.ID, AssetType: "solution_html", StorageKey: "sha256:" + string(rune('a'+i))})
			if err != nil {
				t.Error(err)
				return
			}
			versions[i] = v.VersionNo
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent callers got problems %v, want one", ids)
		}
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4, 5, 6, 7, 8}, versions, cmpopts.SortSlices(func(a, b int) bool { return a < b })); diff != "" {
		t.Errorf("version numbers (-want +got):\n%s", diff)
	}
}

// register registers and indexes a problem with one solution version and
// returns the problem and asset version ids.
func register(t *testing.T, pool *pgxpool.Pool, text, phash string, index bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	reg := NewRegistry(pool)
	p, err := reg.GetOrCreateProblem(ctx, problems.ProblemSpec{
		ProblemSignature: problems.ProblemSignature(text, phash), NormalizedText: text, PHash: phash, TopicTags: TopicTags(text),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.CreateVersion(ctx, problems.VersionSpec{ProblemID: p.ID, AssetType: problems.AssetTypeSolutionHTML, StorageKey: "sha256:" + p.ID})
	if err != nil {
		t.Fatal(err)
	}
	if index {
		err := NewIndexer(pool).Upsert(ctx, problems.IndexDocument{
			ProblemID: p.ID, AssetVersionID: v.ID, ProblemSignature: p.ProblemSignature, NormalizedText: text, PHash: phash, TopicTags: TopicTags(text),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return p.ID, v.ID
}

func TestIndexer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	pid, v1 := register(t, pool, "solve 2x+3=7", "", true)
	ix := NewIndexer(pool)
	av, ok, err := ix.Indexed(ctx, pid)
	if err != nil || !ok || av != v1 {
		t.Fatalf("Indexed = %q, %v, %v; want %q, true", av, ok, err, v1)
	}
	// A new version replaces the problem's document.
	v2, err := NewRegistry(pool).CreateVersion(ctx, problems.VersionSpec{ProblemID: pid, AssetType: "solution_html", StorageKey: "sha256:v2"})
	if err != nil {
		t.Fatal(err)
	}
	doc := problems.IndexDocument{ProblemID: pid, AssetVersionID: v2.ID, ProblemSignature: problems.ProblemSignature("solve 2x+3=7", ""), NormalizedText: "solve 2x+3=7", TopicTags: []string{"algebra"}}
	if err := ix.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	var n int
	var tags []string
	if err := pool.QueryRow(ctx, `SELECT count(*) OVER (), topic_tags FROM problembank.problem_index`).Scan(&n, &tags); err != nil {
		t.Fatal(err)
	}
	if av, _, _ := ix.Indexed(ctx, pid); n != 1 || av != v2.ID || !cmp.Equal(tags, []string{"algebra"}) {
		t.Errorf("index after a second upsert: %d rows, version %s, tags %v; want 1, %s, [algebra]", n, av, tags, v2.ID)
	}

	// A slow index times out and writes nothing.
	slow := &Indexer{pool: pool, Timeout: 50 * time.Millisecond, Delay: 2 * time.Second}
	pid3, v3 := register(t, pool, "1+1", "", false)
	start := time.Now()
	err = slow.Upsert(ctx, problems.IndexDocument{ProblemID: pid3, AssetVersionID: v3, ProblemSignature: "s", NormalizedText: "1+1"})
	if !errors.Is(err, problems.ErrIndexTimeout) {
		t.Fatalf("slow Upsert: %v, want ErrIndexTimeout", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("slow Upsert returned after %s, want about its 50ms timeout", d)
	}
	if _, ok, err := ix.Indexed(ctx, pid3); ok || err != nil {
		t.Errorf("timed-out write left a document (%v, %v)", ok, err)
	}
	// A write that fails otherwise is not a timeout.
	err = ix.Upsert(ctx, problems.IndexDocument{ProblemID: "00000000-0000-0000-0000-000000000000", AssetVersionID: v3})
	if err == nil || errors.Is(err, problems.ErrIndexTimeout) {
		t.Errorf("Upsert of an unknown problem: %v, want a foreign key error", err)
	}
}
