// Replays every trace of every machine through XState, from the exported
// JSON, and asserts the state after every step, refusals included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createActor, SimulatedClock } from 'xstate';
import { machineFromExport, guardNames, leaf, findState } from '../fsmgen-xstate.mjs';
import { machines } from '../traces.mjs';

for (const { base, dir, traces } of machines()) {
  test(`xstate ${base}`, async (t) => {
    const config = JSON.parse(fs.readFileSync(path.join(dir, `${base}.json`), 'utf8'));
    assert.equal(config.id, traces.machine);
    // Every guard reads the outcome the current step gives it, as the Go
    // test's guards read their map.
    let outcomes = {};
    const guards = Object.fromEntries(guardNames(config).map((g) => [g, () => outcomes[g] === true]));
    const machine = machineFromExport(config, { guards });
    for (const tr of traces.traces) {
      await t.test(tr.name, () => {
        const clock = new SimulatedClock();
        const actor = createActor(machine, { clock });
        actor.start();
        for (const [i, step] of tr.steps.entries()) {
          outcomes = step.guards;
          const where = `step ${i} (${step.event}${step.timerMs ? ` after ${step.timerMs}ms` : ''})`;
          if (step.timerMs) {
            clock.increment(step.timerMs);
          } else {
            const ev = { type: step.event };
            assert.equal(actor.getSnapshot().can(ev), !step.refused, `${where}: can() says ${!step.refused ? 'no' : 'yes'}, Go ${step.refused ? `refused (${step.refused})` : 'took it'}`);
            actor.send(ev);
          }
          assert.equal(leaf(actor.getSnapshot().value), step.state, `${where}: state`);
          // A top-level final state ends the actor; a final child with a
          // status ends the run but is an atomic node for XState.
          const final = config.states[step.state]?.type === 'final';
          assert.ok(findState(config, step.state), `${where}: no state ${step.state} in the config`);
          assert.equal(actor.getSnapshot().status, final ? 'done' : 'active', `${where}: status`);
        }
        actor.stop();
      });
    }
  });
}
