// Replays the traces of a machine of machines/specs through SCION, a W3C
// SCXML interpreter, from the SCXML document fsmgen export writes for its
// nested .fsm file. Run by interp_test.go:
//
//   node scxml_replay.mjs MACHINE.scxml TRACES.json
//
// with FSMGEN_INTEROP naming editors/interop, whose node_modules holds
// @scion-scxml/scxml (npm ci there). Timers are delayed sends, run on a
// simulated clock; the export writes an entry or exit action as <log
// label="entry NAME"/>, recorded here. SCION cannot say whether an event
// was taken, so refusals are not checked, only the leaf, its composites
// and the actions. In a parallel state the leaf is the persisted form:
// the active leaf of each region, in document order, joined by "|", and
// its composites those that hold every leaf, innermost first. Prints one
// line per difference and exits 1 when there is any.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// A simulated clock, installed before SCION is loaded.
let now = 0;
let nextID = 1;
const timers = new Map();
globalThis.setTimeout = (fn, ms) => {
  const id = nextID++;
  timers.set(id, { at: now + (ms ?? 0), fn, id });
  return id;
};
globalThis.clearTimeout = (id) => timers.delete(id);
function advance(ms) {
  const end = now + ms;
  for (;;) {
    const due = [...timers.values()].filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id);
    if (due.length === 0) break;
    timers.delete(due[0].id);
    now = due[0].at;
    due[0].fn();
  }
  now = end;
}

const interop = process.env.FSMGEN_INTEROP;
if (!interop) throw new Error('FSMGEN_INTEROP is not set');
const require = createRequire(path.join(interop, 'package.json'));
const scxml = require('@scion-scxml/scxml');

const [docPath, tracesPath] = process.argv.slice(2);
const traces = JSON.parse(fs.readFileSync(tracesPath, 'utf8'));

let guards = {};
let acts = [];
const guardProxy = new Proxy({}, { get: (_, name) => () => guards[name] === true });
// SCION writes <log label="entry NAME"/> with console.log.
const log = console.log.bind(console);
console.log = (...args) => {
  const m = /^(entry|exit) (\w+)$/.exec(String(args[0] ?? '').trim());
  if (m) acts.push(m[2]);
  else log(...args);
};

function load(file) {
  return new Promise((resolve, reject) => {
    scxml.pathToModel(file, (err, model) => {
      if (err) return reject(err);
      model.prepare((err, fnModel) => (err ? reject(err) : resolve(fnModel)), { console, guards: guardProxy });
    });
  });
}

const fnModel = await load(docPath);
const doc = fs.readFileSync(docPath, 'utf8');
// The parent of each state, and its place in document order.
const parents = {};
const order = {};
{
  const stack = [];
  for (const m of doc.matchAll(/<(\/?)(state|final|parallel)\b([^>]*?)(\/?)>/g)) {
    const [, close, , attrs, selfClose] = m;
    if (close) {
      stack.pop();
      continue;
    }
    const id = /\bid="([^"]+)"/.exec(attrs)?.[1];
    parents[id] = stack.at(-1);
    order[id] = Object.keys(order).length;
    if (!selfClose) stack.push(id);
  }
}
function ancestors(leaf) {
  const out = [];
  for (let p = parents[leaf]; p; p = parents[p]) out.push(p);
  return out;
}
// where returns the persisted form of a configuration (its leaves in
// document order joined by "|") and the composites that hold every leaf,
// innermost first.
function where(config) {
  const leaves = [...config].sort((a, b) => order[a] - order[b]);
  const common = ancestors(leaves[0]).filter((a) => leaves.every((l) => ancestors(l).includes(a)));
  return { leaf: leaves.join('|'), in: common };
}

const errors = [];
for (const tr of traces) {
  now = 0;
  timers.clear();
  let sc;
  acts = [];
  for (const step of tr.steps) {
    guards = step.guards ?? {};
    const at = `trace ${tr.name}, line ${step.line}`;
    if (step.start) {
      sc = new scxml.core.Statechart(fnModel);
      sc.start();
    } else if (!step.event) {
      advance(step.afterMs);
    } else {
      sc.gen({ name: step.event, data: step.payload ?? {} });
    }
    const config = sc.getConfiguration();
    const done = acts;
    acts = [];
    if (!step.checked) continue;
    const { leaf, in: inn } = where(config);
    const want = step.in ?? [];
    if (leaf !== step.leaf || inn.join(' ') !== want.join(' ')) {
      errors.push(`${at}: in ${leaf} [${inn.join(' ')}], want ${step.leaf} [${want.join(' ')}]`);
    }
    if (done.join(' ') !== (step.do ?? []).join(' ')) {
      errors.push(`${at}: actions [${done.join(' ')}], want [${(step.do ?? []).join(' ')}]`);
    }
  }
}
for (const e of errors) log(e);
process.exit(errors.length > 0 ? 1 : 0);
