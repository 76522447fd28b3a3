// Package evidence records and checks tamper-evident evidence of the runs
// of a workflow type, for audits (SOC2): what happened to a run, in order,
// in records that the database refuses to change and that are chained by
// hashes, so that an edit made around the database's guard is found.
//
// # Recording
//
// Enable installs, once per workflow type, a trigger on the runs' log
// (workflow_step_logs) that appends a record to evidence_records for every
// row logged for a run of that type: its creation (kind "created"), each
// transition (kind "transition", with the event and its payload), and each
// step a handler logs under a name starting with "evidence." (kind: the
// rest of the name; a handler calls run.Effects.LogStep(
// "evidence.final_decision_rationale", payload)). The record is written by
// the trigger in the transaction that writes the log row: with the
// transition and its handler's effects, whoever made it (a worker, a
// signal, a timer), or not at all. Types that are not enabled pay nothing.
//
// A transition that no handler makes, a timer's or a signal's, has no
// handler to log the evidence it implies. Implied installs, per (type,
// event), a trigger that logs that step (evidence.<kind>, a fixed payload
// with the event's merged in) right after the transition's row, in its
// transaction, whoever fires it: FCHA's authorization timeout records the
// denial's final decision rationale that way.
//
// evidence_records is append-only: UPDATE, DELETE and TRUNCATE fail with
// SQLSTATE FS007 (ErrAppendOnly once translated). The trigger's function,
// fsmgen_evidence_append, runs with the rights of the schema's owner: the
// roles of the role model (db.Grant, docs/security.md) only read
// evidence_records, so that a record exists only because its log row was
// written. Enable and Implied install their triggers through the owner's
// functions fsmgen_enable_evidence and fsmgen_enable_implied_evidence.
//
// # The chain
//
// Each record holds its content (JSON: run, type, seq, kind, attempt,
// states before and after, event, payload, time), ContentHash =
// hex(SHA-256(content as PostgreSQL prints jsonb)), PrevHash = the Hash of
// the run's previous record ("" for the first), and Hash =
// hex(SHA-256(PrevHash + ContentHash)). Verify recomputes every hash from
// the stored content and reports the first record whose content, link or
// sequence number does not check out; it also compares the chain with its
// head (evidence_heads: the number of records and the last hash, written
// with each record), which finds records removed from the chain's end, and
// checks that each record's log row exists. An export (Export) carries the hashes;
// a copy of the last Hash kept elsewhere proves that no record was rewritten
// together with the chain after it.
package evidence
