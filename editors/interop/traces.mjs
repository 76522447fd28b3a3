// The exports and traces that fsmgen's Go test (cmd/fsmgen, TestInterop)
// writes to the directory FSMGEN_EXPORTS names: per machine TYPE.vN.json
// (XState), TYPE.vN.scxml and TYPE.vN.traces.json, the last recorded by
// running the generated Go machine (runtime/fsmtest.Traces).
import fs from 'node:fs';
import path from 'node:path';

export function exportsDir() {
  const dir = process.env.FSMGEN_EXPORTS;
  if (!dir) {
    throw new Error('FSMGEN_EXPORTS is not set: run these tests through go test ./cmd/fsmgen -run TestInterop (make test does)');
  }
  return dir;
}

// machines returns, per traced machine, its base name and traces.
export function machines() {
  const dir = exportsDir();
  const out = fs.readdirSync(dir).filter((f) => f.endsWith('.traces.json')).sort().map((f) => {
    const base = f.slice(0, -'.traces.json'.length);
    return { base, dir, traces: JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) };
  });
  if (out.length === 0) throw new Error(`no *.traces.json in ${dir}`);
  return out;
}
