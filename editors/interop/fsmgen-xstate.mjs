// fsmgen-xstate turns the JSON that `fsmgen export -format xstate` writes
// into an XState v5 machine, with the guards the caller implements.
//
//   import { createActor } from 'xstate';
//   import { machineFromExport } from './fsmgen-xstate.mjs';
//   const machine = machineFromExport(JSON.parse(json), {
//     guards: { UserOwnsRun: ({ event }) => event.userID === owner },
//   });
//   const actor = createActor(machine).start();
//
// A guarded transition names its guard: "guard": "NAME". A negated one
// (`unless NAME` or `when !NAME` in the .fsm file) is written
// {"type": "not", "params": {"guard": "NAME"}}, since XState's not() is a
// function JSON cannot hold; machineFromExport replaces it with
// not("NAME"). Every guard the machine names must be implemented: a
// missing one is an error that lists them, not a transition that never
// fires. Timers are delayed transitions (after), final states have
// type "final", and the rest of the .fsm file (events and their payload
// fields, statuses, outcomes, retry policies) is under meta.fsmgen.
import { createMachine, not } from 'xstate';

// guardNames returns the names of the guards the exported config uses.
export function guardNames(config) {
  const names = new Set();
  forEachTransition(config, (t) => {
    if (typeof t.guard === 'string') names.add(t.guard);
    else if (t.guard && t.guard.type === 'not') names.add(t.guard.params.guard);
    else if (t.guard) names.add(t.guard.type);
  });
  return [...names].sort();
}

// machineFromExport returns the XState machine of an exported config. The
// config is copied, not changed.
export function machineFromExport(config, { guards = {}, ...implementations } = {}) {
  const missing = guardNames(config).filter((g) => typeof guards[g] !== 'function');
  if (missing.length > 0) {
    throw new Error(`machine ${config.id}: no implementation of guard ${missing.join(', ')}`);
  }
  const copy = structuredClone(config);
  const delays = { ...(implementations.delays ?? {}) };
  forEachTransition(copy, (t) => {
    if (t.guard && typeof t.guard === 'object' && t.guard.type === 'not') {
      t.guard = not(t.guard.params.guard);
    }
    // A timer whose duration is an event's field (after Polled.interval
    // min 1s max 10m Tick) is the named delay EVENT.FIELD: the field of the
    // event that entered the state (a Go time.Duration, nanoseconds),
    // clamped to its bounds.
    const fm = t.meta?.fsmgen;
    if (fm?.min && fm?.max && typeof fm.after === 'string') {
      const key = fm.after.split(' ')[0];
      const field = key.slice(key.indexOf('.') + 1);
      const [min, max] = [ms(fm.min), ms(fm.max)];
      delays[key] ??= ({ event }) => Math.min(max, Math.max(min, Number(event?.[field] ?? 0) / 1e6));
    }
  });
  return createMachine(copy, { ...implementations, guards, delays });
}

// ms is a .fsm duration (1d2h, 1m30s, 500ms) in milliseconds.
export function ms(text) {
  const units = { d: 864e5, h: 36e5, m: 6e4, s: 1e3, ms: 1, us: 1e-3, ns: 1e-6 };
  let total = 0;
  for (const [, n, u] of text.matchAll(/(\d+(?:\.\d+)?)(ms|us|ns|d|h|m|s)/g)) total += Number(n) * units[u];
  return total;
}

// leaf returns the innermost state of a snapshot's value: the value
// itself for a flat machine, the deepest key for a nested one.
export function leaf(value) {
  while (value && typeof value === 'object') value = Object.values(value)[0];
  return value;
}

// findState returns the state node config named name, at any depth.
export function findState(config, name) {
  for (const [key, state] of Object.entries(config.states ?? {})) {
    if (key === name) return state;
    const inner = findState(state, name);
    if (inner) return inner;
  }
  return undefined;
}

function forEachTransition(config, fn) {
  for (const state of Object.values(config.states ?? {})) {
    for (const group of [state.on, state.after]) {
      for (const ts of Object.values(group ?? {})) {
        for (const t of Array.isArray(ts) ? ts : [ts]) {
          if (t && typeof t === 'object') fn(t);
        }
      }
    }
    for (const ts of [state.always, state.onDone]) {
      for (const t of ts === undefined ? [] : Array.isArray(ts) ? ts : [ts]) {
        if (t && typeof t === 'object') fn(t);
      }
    }
    forEachTransition(state, fn);
  }
}
