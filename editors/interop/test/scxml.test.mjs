// Replays every trace of every machine through SCION, a W3C SCXML
// interpreter, from the exported SCXML document, and asserts the state
// after every step, refusals included. Timers are SCXML delayed sends,
// run on node:test's mocked setTimeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { machines } from '../traces.mjs';

const require = createRequire(import.meta.url);
const scxml = require('@scion-scxml/scxml');

// load compiles an SCXML document with the guards in the interpreter's
// global scope, as the export's cond attributes expect them.
function load(file, guards) {
  return new Promise((resolve, reject) => {
    scxml.pathToModel(file, (err, model) => {
      if (err) return reject(err);
      model.prepare((err, fnModel) => (err ? reject(err) : resolve(fnModel)), { console, guards });
    });
  });
}

for (const { base, dir, traces } of machines()) {
  test(`scxml ${base}`, async (t) => {
    let outcomes = {};
    const guards = new Proxy({}, {
      get: (_, name) => () => outcomes[name] === true,
    });
    const fnModel = await load(path.join(dir, `${base}.scxml`), guards);
    const topLevel = new Set(Object.keys(JSON.parse(fs.readFileSync(path.join(dir, `${base}.json`), 'utf8')).states));
    for (const tr of traces.traces) {
      await t.test(tr.name, (t) => {
        t.mock.timers.enable({ apis: ['setTimeout'] });
        const sc = new scxml.core.Statechart(fnModel);
        sc.start();
        for (const [i, step] of tr.steps.entries()) {
          outcomes = step.guards;
          const where = `step ${i} (${step.event}${step.timerMs ? ` after ${step.timerMs}ms` : ''})`;
          if (step.timerMs) {
            t.mock.timers.tick(step.timerMs);
          } else {
            sc.gen({ name: step.event, data: {} });
          }
          assert.deepEqual(sc.getConfiguration(), [step.state], `${where}: configuration`);
        }
        const last = tr.steps.at(-1);
        // A final child with a status ends the run but is no <final> of
        // SCXML (it would complete its parent): only a top-level one is.
        const final = traces.final.includes(last.state) && topLevel.has(last.state);
        assert.equal(sc.isFinal(), final, `after the last step in ${last.state}: isFinal`);
      });
    }
  });
}
