// Replays the traces of a machine of machines/specs through XState v5,
// from its hand-written xstate.json. Run by TestXStateTraces (interp_test.go):
//
//   node xstate_replay.mjs CONFIG.json TRACES.json
//
// with FSMGEN_INTEROP naming editors/interop, whose node_modules holds
// xstate (npm ci there). TRACES.json is the traces as the Go test parsed
// them. Guards read the step's guards; actions are recorded; a named
// delay (after: {"interval": ...}) is the field of that name of the event
// that entered the state, a Go duration ("5s"). A guard JSON cannot
// name as a string is an object: {"type": "not", "params": {"guard":
// "NAME"}} is XState's not("NAME"), {"type": "stateIn", "params":
// {"state": "#ID.PATH"}} its stateIn("#ID.PATH"), true when that state
// is active (the In(STATE) of SCXML). A step's leaf is the persisted
// form: in a parallel state, the leaf of each region in region order
// joined by "|", and its composites those that hold every leaf. Prints
// one line per difference and exits 1 when there is any.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const interop = process.env.FSMGEN_INTEROP;
if (!interop) throw new Error('FSMGEN_INTEROP is not set');
const require = createRequire(path.join(interop, 'package.json'));
const { createMachine, createActor, SimulatedClock, not, stateIn } = require('xstate');

const [configPath, tracesPath] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
const traces = JSON.parse(fs.readFileSync(tracesPath, 'utf8'));

// goDuration parses a Go duration such as 1h30m, 52m30s, 500ms, in ms.
function goDuration(s) {
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s)/g;
  const unit = { h: 3600000, m: 60000, s: 1000, ms: 1 };
  let ms = 0;
  let m;
  let seen = '';
  while ((m = re.exec(s)) !== null) {
    ms += parseFloat(m[1]) * unit[m[2]];
    seen += m[0];
  }
  if (seen !== s) throw new Error(`not a Go duration: ${s}`);
  return ms;
}

// transitions returns the transition objects of a state node: under on,
// after, always and onDone.
function transitions(node) {
  const ts = [];
  for (const group of [node.on, node.after]) {
    for (const v of Object.values(group ?? {})) ts.push(...[v].flat());
  }
  ts.push(...[node.always ?? []].flat(), ...[node.onDone ?? []].flat());
  return ts.filter((t) => t && typeof t === 'object');
}

// builtinGuard returns the XState guard of a guard object, or the guard
// itself when it is a name.
function builtinGuard(guard) {
  if (guard?.type === 'not') return not(builtinGuard(guard.params.guard));
  if (guard?.type === 'stateIn') return stateIn(guard.params.state);
  return guard;
}

// resolve replaces the guard objects of node and its descendants with
// XState's guards, in place.
function resolve(node) {
  for (const t of transitions(node)) if (t.guard) t.guard = builtinGuard(t.guard);
  for (const s of Object.values(node.states ?? {})) resolve(s);
  return node;
}

// names collects the guards, actions and named delays the config uses.
function names(node, out = { guards: new Set(), actions: new Set(), delays: new Set() }) {
  for (const a of [node.entry, node.exit].flat()) if (typeof a === 'string') out.actions.add(a);
  for (const k of Object.keys(node.after ?? {})) if (!/^\d+$/.test(k)) out.delays.add(k);
  for (const t of transitions(node)) {
    if (typeof t.guard === 'string') out.guards.add(t.guard);
    if (typeof t.guard?.params?.guard === 'string') out.guards.add(t.guard.params.guard);
    for (const a of [t.actions ?? []].flat()) if (typeof a === 'string') out.actions.add(a);
  }
  for (const s of Object.values(node.states ?? {})) names(s, out);
  return out;
}

// where returns the persisted form of a snapshot value (the leaves of its
// regions, in the config's order, joined by "|") and the composites that
// hold every leaf, innermost first.
function where(node, value) {
  const paths = [];
  const walk = (n, v, path) => {
    if (typeof v !== 'object') {
      paths.push([...path, v]);
      return;
    }
    for (const k of Object.keys(n.states)) if (k in v) walk(n.states[k], v[k], [...path, k]);
  };
  walk(node, value, []);
  const common = [];
  for (let i = 0; paths.every((p) => i < p.length - 1 && p[i] === paths[0][i]); i++) common.push(paths[0][i]);
  return { leaf: paths.map((p) => p[p.length - 1]).join('|'), in: common.reverse() };
}

const used = names(config);
let guards = {};
let acts = [];
const machine = createMachine(resolve(structuredClone(config)), {
  guards: Object.fromEntries([...used.guards].map((g) => [g, () => guards[g] === true])),
  actions: Object.fromEntries([...used.actions].map((a) => [a, () => acts.push(a)])),
  delays: Object.fromEntries([...used.delays].map((d) => [d, ({ event }) => goDuration(event[d])])),
});

const errors = [];
for (const tr of traces) {
  const clock = new SimulatedClock();
  let actor;
  acts = [];
  for (const step of tr.steps) {
    guards = step.guards ?? {};
    const at = `trace ${tr.name}, line ${step.line}`;
    let refused = false;
    if (step.start) {
      // createActor computes the initial state, eventless transitions
      // included: the guards must be set before.
      actor = createActor(machine, { clock });
      actor.start();
    } else if (!step.event) {
      clock.increment(step.afterMs);
    } else {
      const ev = { type: step.event, ...(step.payload ?? {}) };
      refused = !actor.getSnapshot().can(ev);
      actor.send(ev);
    }
    const got = where(config, actor.getSnapshot().value);
    const done = acts;
    acts = [];
    if (!step.checked) continue;
    const want = { leaf: step.leaf, in: step.in ?? [] };
    if (got.leaf !== want.leaf || got.in.join(' ') !== want.in.join(' ')) {
      errors.push(`${at}: in ${got.leaf} [${got.in.join(' ')}], want ${want.leaf} [${want.in.join(' ')}]`);
    }
    if (refused !== (step.refused === true)) {
      errors.push(`${at}: refused ${refused}, want ${step.refused === true}`);
    }
    if (done.join(' ') !== (step.do ?? []).join(' ')) {
      errors.push(`${at}: actions [${done.join(' ')}], want [${(step.do ?? []).join(' ')}]`);
    }
  }
  actor.stop();
}
for (const e of errors) console.log(e);
process.exit(errors.length > 0 ? 1 : 0);
