package cliout

import (
	"bytes"
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want Format
		err  string
	}{
		{nil, Text, ""},
		{[]string{"-o", "json"}, JSON, ""},
		{[]string{"-o=text"}, Text, ""},
		{[]string{"-o", "yaml"}, "", `invalid value "yaml" for flag -o: want text or json`},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		AddFlag(fs)
		err := fs.Parse(tt.args)
		var got string
		if err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(tt.err, got); diff != "" {
			t.Errorf("%q: error (-want +got):\n%s", tt.args, diff)
			continue
		}
		if err == nil && FromFlags(fs) != tt.want {
			t.Errorf("%q: format %q, want %q", tt.args, FromFlags(fs), tt.want)
		}
	}
	if got := FromFlags(flag.NewFlagSet("none", flag.ContinueOnError)); got != Text {
		t.Errorf("a flag set without -o: %q, want text", got)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]any{"a": []int{}, "b": "<&>"}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": [],\n  \"b\": \"<&>\"\n}\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := WriteJSON(&b, func() {}); err == nil || err.Error() != "encode JSON output: json: unsupported type: func()" {
		t.Errorf("a func: %v", err)
	}
}
