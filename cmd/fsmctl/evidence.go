package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime/evidence"
)

func evidenceVerifyCommand() *command {
	return &command{
		name:     "evidence verify",
		synopsis: "[-database URL] RUN",
		summary:  "recompute a run's evidence hash chain and report the first broken link",
		details: `Verify reads the evidence records of run RUN (evidence_records, written for the
workflow types that record evidence) and recomputes each record's content hash
and its link to the previous record. It prints the number of records and the
chain's head hash when every link checks out, and otherwise the first record
at fault (its sequence number, id and what does not match), exiting 1.`,
		flags: addDatabaseFlag,
		run:   evidenceVerify,
	}
}

func evidenceExportCommand() *command {
	return &command{
		name:     "evidence export",
		synopsis: "[-database URL] RUN",
		summary:  "write a run's evidence records, with their hashes, as JSON",
		details: `Export writes the evidence of run RUN to standard output as one JSON object:
runId, head (the last record's hash), verified, break (the first broken link,
if any) and records (id, seq, kind, content, contentText, contentHash,
prevHash, hash, recordedAt). The chain can be checked again from the file:
contentHash is the SHA-256 of contentText, hash the SHA-256 of prevHash
followed by contentHash. A broken chain is exported too, and exits 1.`,
		flags: addDatabaseFlag,
		run:   evidenceExport,
	}
}

func evidenceRun(args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef(nil, "want one run id, got %d arguments", len(args))
	}
	if err := checkRunID(args[0]); err != nil {
		return "", usagef(nil, "%v", err)
	}
	return args[0], nil
}

func evidenceVerify(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := evidenceRun(args)
	if err != nil {
		return err
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	v, err := evidence.Verify(ctx, pool, id)
	var brk *evidence.Break
	switch {
	case errors.As(err, &brk):
		return fmt.Errorf("run %s: evidence chain broken at %v", id, brk)
	case errors.Is(err, evidence.ErrNoEvidence):
		return fmt.Errorf("run %s: no evidence records", id)
	case err != nil:
		return fmt.Errorf("run %s: verify evidence: %w", id, operatorError(err))
	}
	fmt.Fprintf(c.stdout, "run %s: %d evidence records verified; head %s\n", id, v.Records, v.Head)
	return nil
}

func evidenceExport(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := evidenceRun(args)
	if err != nil {
		return err
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	err = evidence.WriteJSON(ctx, pool, id, c.stdout)
	var brk *evidence.Break
	switch {
	case errors.As(err, &brk):
		return fmt.Errorf("run %s: exported; the evidence chain is broken at %v", id, brk)
	case errors.Is(err, evidence.ErrNoEvidence):
		return fmt.Errorf("run %s: no evidence records", id)
	case err != nil:
		return fmt.Errorf("run %s: export evidence: %w", id, operatorError(err))
	}
	return nil
}
