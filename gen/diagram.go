package gen

import "github.com/fsmgen/fsmgen/dsl"

// Mermaid returns the machine as a Mermaid stateDiagram-v2.
func Mermaid(m *dsl.Machine) []byte { return nil }

// DOT returns the machine as a Graphviz digraph.
func DOT(m *dsl.Machine) []byte { return nil }

// Page returns the machine's Markdown page.
func Page(source string, m *dsl.Machine, mermaid []byte) []byte { return nil }
