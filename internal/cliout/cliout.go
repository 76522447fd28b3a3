package cliout

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// Format is how a read command prints its result.
type Format string

// The formats -o takes.
const (
	Text Format = "text"
	JSON Format = "json"
)

// FlagName is the name of the flag that chooses the format.
const FlagName = "o"

// String implements flag.Value.
func (f *Format) String() string {
	if f == nil || *f == "" {
		return string(Text)
	}
	return string(*f)
}

// Set implements flag.Value: it accepts text and json.
func (f *Format) Set(s string) error {
	switch Format(s) {
	case Text, JSON:
		*f = Format(s)
		return nil
	}
	return fmt.Errorf("want %s or %s", Text, JSON)
}

// Get implements flag.Getter.
func (f *Format) Get() any { return *f }

// AddFlag declares -o on fs, text by default, and returns where its value
// goes.
func AddFlag(fs *flag.FlagSet) *Format {
	f := Text
	fs.Var(&f, FlagName, "output format: text or json")
	return &f
}

// FromFlags returns the format fs's -o flag holds, Text when fs has none.
func FromFlags(fs *flag.FlagSet) Format {
	fl := fs.Lookup(FlagName)
	if fl == nil {
		return Text
	}
	if f, ok := fl.Value.(*Format); ok && *f != "" {
		return *f
	}
	return Text
}

// WriteJSON writes v to w as indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
