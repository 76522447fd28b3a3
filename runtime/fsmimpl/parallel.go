package fsmimpl

import (
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
)

// ParseConfig reads text, the persisted form of where a run of the machine
// of ix is, into leaves: one leaf outside any parallel state, or the active leaf of each
// region of a parallel state in region order, joined by
// runtime.ConfigurationSeparator ("A|B"). It returns how many leaves it
// wrote. A name that is no leaf, a leaf in the wrong region, a count of
// leaves other than the parallel state's regions, or more leaves than
// leaves holds is an error matched by errors.Is(err,
// runtime.ErrUnknownState).
func ParseConfig[S StateType](ix *Index[S], text string, leaves []S) (int, error) {
	def := ix.def
	names := def.Configuration(text)
	if len(names) > len(leaves) {
		return 0, badConfig(def, text, fmt.Sprintf("want at most %d leaves, one per region, got %d", len(leaves), len(names)))
	}
	for i, name := range names {
		s, err := ParseState(ix, name)
		if err != nil {
			return 0, err
		}
		leaves[i] = s
	}
	p, _ := def.RegionOf(names[0])
	regions := def.Regions(p)
	switch {
	case p == "" && len(names) == 1:
		return 1, nil
	case p == "":
		return 0, badConfig(def, text, fmt.Sprintf("%s is in no parallel state, and only the leaves of a parallel state's regions are joined", names[0]))
	case len(names) != len(regions):
		return 0, badConfig(def, text, fmt.Sprintf("want %d leaves, one per region of %s, got %d", len(regions), p, len(names)))
	}
	for i, name := range names {
		if q, r := def.RegionOf(name); q != p || r != regions[i] {
			return 0, badConfig(def, text, fmt.Sprintf("leaf %d, %s, is not in region %s of %s", i+1, name, regions[i], p))
		}
	}
	return len(names), nil
}

// badConfig is the error of ParseConfig for text, saying why.
func badConfig(def *runtime.Definition, text, why string) error {
	return fmt.Errorf("%s: %w %q: %s", def.Type, runtime.ErrUnknownState, truncate(text), why)
}

// ConfigName returns the persisted form of the configuration leaves: the
// leaves' names in order, joined by runtime.ConfigurationSeparator.
func ConfigName[S StateType](def *runtime.Definition, leaves []S) string {
	if len(leaves) == 1 {
		return StateName(def, leaves[0])
	}
	names := make([]string, len(leaves))
	for i, s := range leaves {
		names[i] = StateName(def, s)
	}
	return def.JoinConfiguration(names)
}
