package dsl

import "github.com/alecthomas/participle/v2/lexer"

// The AST mirrors the grammar: every node keeps the position of its first
// token (Pos) and of the token after its last one (EndPos), so that errors,
// doc comments and the formatter can refer back to the source.

// File is a parsed .fsm file.
type File struct {
	Pos      lexer.Position
	Machines []*MachineDecl `parser:"@@*"`

	// Comments holds every comment of the file in source order; parsing
	// attaches the ones that document a node to that node's Doc.
	Comments []*Comment
}

// Comment is one // line comment.
type Comment struct {
	Pos  lexer.Position
	Text string // including the leading //
	// Own reports whether the comment is alone on its line.
	Own bool
}

// MachineDecl is a machine block.
type MachineDecl struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Doc    []string

	Name  string  `parser:"'machine' @Ident '{'"`
	Items []*Item `parser:"@@* '}'"`
}

// Item is one line of a machine block.
type Item struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Doc    []string

	Type       *TypeDecl       `parser:"  @@"`
	Version    *VersionDecl    `parser:"| @@"`
	Package    *PackageDecl    `parser:"| @@"`
	Cancel     *CancelDecl     `parser:"| @@"`
	State      *StateDecl      `parser:"| @@"`
	Event      *EventDecl      `parser:"| @@"`
	Guard      *GuardDecl      `parser:"| @@"`
	Action     *ActionDecl     `parser:"| @@"`
	History    *HistoryDecl    `parser:"| @@"`
	Transition *TransitionDecl `parser:"| @@"`
	Upgrade    *UpgradeDecl    `parser:"| @@"`
}

// TypeDecl sets the persisted type name: type "retrieve_or_generate".
type TypeDecl struct {
	Pos  lexer.Position
	Name string `parser:"'type' @String"`
}

// VersionDecl sets the definition version: version 2.
type VersionDecl struct {
	Pos    lexer.Position
	Number string `parser:"'version' @Number"`
}

// PackageDecl overrides the generated Go package name: package rog.
type PackageDecl struct {
	Pos  lexer.Position
	Name string `parser:"'package' @Ident"`
}

// CancelDecl names the machine's cancel event, the one a run's owner fires
// to cancel a run: cancel Cancel.
type CancelDecl struct {
	Pos   lexer.Position
	Event *Name `parser:"'cancel' @@"`
}

// StateDecl declares a state:
//
//	initial NAME [options] [{ CHILDREN }]
//	state   NAME [options] [{ CHILDREN }]
//	final   NAME [STATUS [outcome "x"]]
//
// A state with a block is a composite: its children are states and
// history pseudostates. A final state without a status is only valid as
// a child: it completes its parent.
type StateDecl struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Kind   string `parser:"@('initial' | 'state' | 'final')"`
	Name   *Name  `parser:"@@"`

	Status  *StatusLit     `parser:"( @@"`
	Outcome *StringLit     `parser:"  ( 'outcome' @@ )? )?"`
	Options []*StateOption `parser:"@@*"`
	// Block records that the state had braces, even empty ones.
	Block    bool     `parser:"( @'{'"`
	Children []*Child `parser:"  @@* '}' )?"`
}

// Child is one line of a composite state's block: a state (possibly a
// composite itself) or a history pseudostate.
type Child struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Doc    []string

	State   *StateDecl   `parser:"  @@"`
	History *HistoryDecl `parser:"| @@"`
}

// HistoryDecl declares a history pseudostate of the composite it is
// written in: history NAME (shallow) or deep history NAME.
type HistoryDecl struct {
	Pos  lexer.Position
	Deep bool  `parser:"@'deep'? 'history'"`
	Name *Name `parser:"@@"`
}

// ActionDecl declares an entry or exit action implemented in Go:
// action StartClock.
type ActionDecl struct {
	Pos  lexer.Position
	Name *Name `parser:"'action' @@"`
}

// StateOption is one option of a non-terminal state.
type StateOption struct {
	Pos lexer.Position
	// Parallel makes a composite a parallel state: its children are its
	// regions, all active at once.
	Parallel bool      `parser:"  @'parallel'"`
	Wait     bool      `parser:"| @'wait'"`
	Retry    *RetryOpt `parser:"| @@"`
	Timer    *TimerOpt `parser:"| @@"`
	// Entry and Exit name an action run when the state is entered or
	// exited: entry StartClock, exit StopClock.
	Entry *Name `parser:"| 'entry' @@"`
	Exit  *Name `parser:"| 'exit' @@"`
}

// RetryOpt is a retry policy, either a named preset (retry database) or
// written out:
//
//	retry [up to] 3 [backoff 1s] [factor 4] [max 16s] [jitter 0.2] [nonretryable "A", "B"] [else EVENT]
//
// With up to, the number bounds the attempts and each run's policy
// snapshot chooses within it.
type RetryOpt struct {
	Pos lexer.Position
	// UpTo records up to before the number of attempts.
	UpTo         bool         `parser:"'retry' ( ( @( 'up' 'to' )?"`
	Attempts     *NumberLit   `parser:"          @@"`
	Backoff      *DurationLit `parser:"  ( 'backoff' @@ )?"`
	Factor       *NumberLit   `parser:"  ( 'factor' @@ )?"`
	Max          *DurationLit `parser:"  ( 'max' @@ )?"`
	Jitter       *NumberLit   `parser:"  ( 'jitter' @@ )?"`
	NonRetryable []*StringLit `parser:"  ( 'nonretryable' @@ ( ',' @@ )* )? )"`
	Preset       *Name        `parser:"  | @@ )"`
	// Else names the event fired when the policy gives up.
	Else *Name `parser:"( 'else' @@ )?"`
}

// TimerOpt fires an event after the run has spent a duration in the state:
// after 7d AuthorizationTimeout, or, with the duration taken from a
// time.Duration field of the event that entered the state, clamped to
// bounds: after Polled.interval min 1s max 10m Tick.
type TimerOpt struct {
	Pos     lexer.Position
	After   *DurationLit `parser:"'after' ( @@"`
	FieldOf *Name        `parser:"        | @@ '.'"`
	Field   *Name        `parser:"          @@"`
	Min     *DurationLit `parser:"          'min' @@"`
	Max     *DurationLit `parser:"          'max' @@ )"`
	Event   *Name        `parser:"@@"`
}

// EventDecl declares an event and its payload fields:
// event RetrievalHit { confidence float64; assetVersionID string }.
// The flag external opens the event up to callers in every state, also
// when the runtime fires it (a timer's or a retry's else event) or a
// driven state's handler returns it: event Expired external.
type EventDecl struct {
	Pos      lexer.Position
	Name     *Name `parser:"'event' @@"`
	External bool  `parser:"@'external'?"`
	// Block records that the declaration had braces, even empty ones.
	Block  bool     `parser:"( @'{'"`
	Fields []*Field `parser:"  ( @@ ( ';' | ',' )? )* '}' )?"`
}

// Field is one payload field.
type Field struct {
	Pos  lexer.Position
	Name *Name     `parser:"@@"`
	Type *TypeExpr `parser:"@@"`
}

// TypeExpr is a field type: a Go scalar, time.Time, time.Duration, []T, or a
// type from another package written as "import/path".Name.
type TypeExpr struct {
	Pos   lexer.Position
	Slice bool       `parser:"@( '[' ']' )?"`
	Path  *StringLit `parser:"( @@ '.' )?"`
	Name  string     `parser:"@Ident"`
	// Sel is the type name when Name is a package: time.Duration.
	Sel string `parser:"( '.' @Ident )?"`
}

// GuardDecl declares a guard implemented in Go: guard AboveThreshold.
type GuardDecl struct {
	Pos  lexer.Position
	Name *Name `parser:"'guard' @@"`
}

// TransitionDecl is a row of the transition table:
//
//	FROM[, FROM...] -> TO [on EVENT[, EVENT...]] [when [!]GUARD | unless GUARD] [outcome "x"] [internal]
//
// FROM may be * for every non-terminal top-level state. Without "on" the
// row is eventless; "on done" is a completion row.
type TransitionDecl struct {
	Pos  lexer.Position
	From []*StateRef `parser:"@@ ( ',' @@ )*"`
	To   *Name       `parser:"'->' @@"`
	// Event is the first event of the row, nil for an eventless row;
	// More are the events after it (on A, B, C).
	Event    *Name      `parser:"( 'on' @@"`
	More     []*Name    `parser:"  ( ',' @@ )* )?"`
	Guard    *GuardRef  `parser:"@@?"`
	Outcome  *StringLit `parser:"( 'outcome' @@ )?"`
	Internal bool       `parser:"@'internal'?"`
}

// Events returns the row's events in the order written: none for an
// eventless row.
func (t *TransitionDecl) Events() []*Name {
	if t.Event == nil {
		return nil
	}
	return append([]*Name{t.Event}, t.More...)
}

// StateRef is a state name or *.
type StateRef struct {
	Pos  lexer.Position
	Star bool   `parser:"  @'*'"`
	Name string `parser:"| @Ident"`
}

// GuardRef is the guard clause of a transition: a named guard (when G,
// when !G, unless G) or a test of whether a state is active (when In(S),
// unless In(S)); exactly one of Name and In is set.
type GuardRef struct {
	Pos    lexer.Position
	Unless bool  `parser:"( 'when' | @'unless' )"`
	Not    bool  `parser:"@'!'?"`
	In     *Name `parser:"( 'In' '(' @@ ')'"`
	Name   *Name `parser:"| @@ )"`
}

// Ref returns the name the clause refers to: the guard's, or the state's
// of an In(S) test.
func (g *GuardRef) Ref() *Name {
	if g.In != nil {
		return g.In
	}
	return g.Name
}

// Negated reports whether the clause admits the event when the guard is false.
func (g *GuardRef) Negated() bool { return g.Unless != g.Not }

// StatusLit is the generic status of a final state.
type StatusLit struct {
	Pos   lexer.Position
	Value string `parser:"@( 'succeeded' | 'failed' | 'cancelled' )"`
}

// Name is an identifier with its position.
type Name struct {
	Pos   lexer.Position
	Value string `parser:"@Ident"`
}

// StringLit is a quoted string with its position; Value keeps the quotes.
type StringLit struct {
	Pos   lexer.Position
	Value string `parser:"@String"`
}

// NumberLit is a number with its position, as written.
type NumberLit struct {
	Pos   lexer.Position
	Value string `parser:"@Number"`
}

// DurationLit is a duration with its position, as written (1s, 500ms, 7d).
type DurationLit struct {
	Pos   lexer.Position
	Value string `parser:"@Duration"`
}

// UpgradeDecl says how the live runs of an older version of the machine
// (declared in the same file, with the same type) move to this version:
//
//	upgrade from 1 { RULES }
//	upgrade from 1 drain
//
// The second form leaves every run of the older version to finish on it.
type UpgradeDecl struct {
	Pos    lexer.Position
	EndPos lexer.Position
	From   *NumberLit         `parser:"'upgrade' 'from' @@"`
	Drain  bool               `parser:"( @'drain'"`
	Block  bool               `parser:"| @'{'"`
	Rules  []*UpgradeRuleDecl `parser:"  @@* '}' )"`
}

// UpgradeRuleDecl is one line of an upgrade block:
//
//	OLD -> NEW [when EVENT | unless EVENT] [timers keep|restart]
//	OLD drain
//	default EVENT.field VALUE
type UpgradeRuleDecl struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Default *DefaultDecl `parser:"  @@"`
	From    *Name        `parser:"| @@"`
	Drain   bool         `parser:"  ( @'drain'"`
	To      *Name        `parser:"  | '->' @@"`
	Cond    *UpgradeCond `parser:"    @@?"`
	Timers  *Name        `parser:"    ( 'timers' @@ )? )"`
}

// UpgradeCond is the condition of an upgrade rule on the run's stored
// history: when EVENT (the run's current attempt has fired EVENT) or unless
// EVENT.
type UpgradeCond struct {
	Pos    lexer.Position
	Unless bool  `parser:"( 'when' | @'unless' )"`
	Event  *Name `parser:"@@"`
}

// DefaultDecl gives a payload field that this version's event has, and the
// older version's lacks, a value for the events runs carry from before the
// upgrade: default MediaNormalized.language "en".
type DefaultDecl struct {
	Pos   lexer.Position
	Event *Name        `parser:"'default' @@ '.'"`
	Field *Name        `parser:"@@"`
	Value *LiteralExpr `parser:"@@"`
}

// LiteralExpr is a default's value as written: a quoted string, a number,
// a duration, true or false.
type LiteralExpr struct {
	Pos   lexer.Position
	Value string `parser:"@(String | Number | Duration | 'true' | 'false')"`
}
