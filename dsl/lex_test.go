package dsl

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
)

// lexAll returns the tokens def lexes from src, up to and including EOF or
// the first error.
func lexAll(t *testing.T, def lexer.StringDefinition, src string) ([]lexer.Token, error) {
	t.Helper()
	lx, err := def.LexString("x.fsm", src)
	if err != nil {
		return nil, err
	}
	var out []lexer.Token
	for {
		tok, err := lx.Next()
		if err != nil {
			return out, err
		}
		out = append(out, tok)
		if tok.EOF() {
			return out, nil
		}
	}
}

// checkSameTokens fails t unless fsmLexer lexes src exactly as ruleLexer,
// participle's lexer of the same rules, does: the same tokens (type,
// value, position) and the same error, at the same position.
func checkSameTokens(t *testing.T, src string) {
	t.Helper()
	want, wantErr := lexAll(t, ruleLexer, src)
	got, gotErr := lexAll(t, fsmLexer, src)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tokens of %q differ (-want +got):\n%s", src, diff)
	}
	if diff := cmp.Diff(errText(wantErr), errText(gotErr)); diff != "" {
		t.Fatalf("error of %q differs (-want +got):\n%s", src, diff)
	}
	if wantErr != nil {
		we, wok := wantErr.(*lexer.Error)
		ge, gok := gotErr.(*lexer.Error)
		if !wok || !gok || we.Pos != ge.Pos {
			t.Fatalf("error of %q: want %#v, got %#v", src, wantErr, gotErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestLexerMatchesRules holds the hand-written lexer to participle's lexer
// of the same regular expressions, on the .fsm files of the repository, on
// the edge cases of each rule, and on random text made of the characters
// the rules care about.
func TestLexerMatchesRules(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(ruleLexer.Symbols(), fsmLexer.Symbols()); diff != "" {
		t.Fatalf("symbols differ (-want +got):\n%s", diff)
	}
	for _, root := range []string{"testdata", filepath.Join("..", "machines"), filepath.Join("..", "gen", "testdata")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".fsm") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checkSameTokens(t, string(src))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []string{
		"", " ", "//", "// c", "// c\nx", "/", "/x", "-", "->", "-x", "a->b",
		`"`, `""`, `"a"`, `"a`, "\"a\nb\"", `"\"`, `"\""`, `"\\"`, "\"\\\n\"", `"\µ"`, `"µ"`, `"a\"b"c"`,
		"1", "1.", "1.5", "1.5.5", "1s", "1.5s", "1.s", "1ms", "1m", "1min", "1µs", "1us", "1ns", "1h30m",
		"1h30", "1h30.5m", "1h.5m", "2d", "10msx", "1m5", "1m5s5", "1.5h2.25m", "01", "1e3", "1x",
		"_", "a1_b", "A", "9a", "{}[];,.*!", "\t\r\n x", "#", "a#", "µ", "é", "a\x00b",
		strings.Repeat("é", 20), "x" + strings.Repeat("€", 20),
	}
	for _, c := range cases {
		checkSameTokens(t, c)
	}
	alphabet := []string{
		"a", "Z", "_", "0", "1", "9", ".", "s", "m", "h", "d", "n", "u", "µ", "\"", "\\", "\n", " ", "\t", "\r",
		"/", "-", ">", "{", "}", "[", "]", ";", ",", "*", "!", "#", "é", "@",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		checkSameTokens(t, b.String())
	}
}

// FuzzLexer checks that the hand-written lexer agrees with participle's
// lexer of the same rules on any input.
func FuzzLexer(f *testing.F) {
	f.Add("machine M { initial A\n final B succeeded\n A -> B on Go // go\n}")
	f.Add(`after 1h30m "x\"y" 1.5s 2d`)
	f.Fuzz(func(t *testing.T, src string) {
		checkSameTokens(t, src)
	})
}
