// Package defdiagram draws a machine from its registered definition
// (runtime.Definition), for a tool that has the definition but not the
// machine's .fsm file or generated package, as fsmctl definitions show:
// Mermaid returns the stateDiagram-v2 that fsmgen's generator draws from
// the .fsm file, with the same conventions (start point, one edge per
// source and target with its rows' labels "EVENT (after D) [GUARD] /
// OUTCOME", final states coloured by status, wait states dashed), and
// Table prints the transition table as aligned text.
//
// A timer's duration is written in its largest whole unit (3d, 20s), so a
// diagram drawn from a .fsm file that wrote 1m30s says 90s here; apart from
// that and its first comment line, the two diagrams are the same.
package defdiagram
