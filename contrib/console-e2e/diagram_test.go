package consolee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/machines/specs/tcpconn/tcpconn"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// box is the bounding box of a text of a diagram, in the page's pixels,
// and whether it lies inside its SVG's box.
type box struct {
	Text                     string
	Left, Top, Right, Bottom float64
	Inside                   bool
}

// labelBoxes measures, in the browser, every text of the page's diagram:
// state names, heat figures and row labels.
const labelBoxes = `(() => {
	const svg = document.querySelector("#diagram svg").getBoundingClientRect();
	return Array.from(document.querySelectorAll("#diagram svg text")).filter(t => t.textContent.trim() !== "").map(t => {
		const r = t.getBoundingClientRect();
		return {Text: t.textContent, Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom,
			Inside: r.left >= svg.left - 0.5 && r.top >= svg.top - 0.5 && r.right <= svg.right + 0.5 && r.bottom <= svg.bottom + 0.5};
	});
})()`

// TestDiagramLabelsDoNotOverlapInChromium draws the machine pages of FCHA,
// RetrieveOrGenerate and a nested machine (the TCP connection) and fails
// when the bounding boxes of two of their texts overlap, or when one is
// clipped by its diagram's box.
func TestDiagramLabelsDoNotOverlapInChromium(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	defs := []runtime.Definition{fcha.Definition(), retrieveorgenerate.Definition(), tcpconn.Definition()}
	for _, def := range defs {
		if err := st.Register(context.Background(), def); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, url)
	b := newBrowser(t)
	for _, def := range defs {
		b.do(t, chromedp.Navigate(fmt.Sprintf("%s/machines/%s/%d", base, def.Type, def.Version)), chromedp.WaitVisible("#diagram svg"))
		boxes := eval[[]box](t, b, labelBoxes)
		if len(boxes) < len(def.States) {
			t.Errorf("%s: %d texts measured, want at least one per state (%d)", def.Type, len(boxes), len(def.States))
		}
		var problems []string
		for i, a := range boxes {
			if !a.Inside {
				problems = append(problems, fmt.Sprintf("%q at (%.0f,%.0f)-(%.0f,%.0f) is clipped by the diagram", a.Text, a.Left, a.Top, a.Right, a.Bottom))
			}
			for _, c := range boxes[i+1:] {
				if a.Left < c.Right && c.Left < a.Right && a.Top < c.Bottom && c.Top < a.Bottom {
					problems = append(problems, fmt.Sprintf("%q (%.0f,%.0f)-(%.0f,%.0f) overlaps %q (%.0f,%.0f)-(%.0f,%.0f)",
						a.Text, a.Left, a.Top, a.Right, a.Bottom, c.Text, c.Left, c.Top, c.Right, c.Bottom))
				}
			}
		}
		screenshot(t, b, "diagram-"+def.Type)
		if len(problems) > 0 {
			t.Errorf("%s v%d: %d label problems:\n%s", def.Type, def.Version, len(problems), strings.Join(problems, "\n"))
		}
	}
	b.check(t)
}
