// Parses every Mermaid diagram fsmgen's goldens hold (the generated
// packages' diagram.mmd of gen/testdata/golden and the nested machines'
// diagrams of gen/testdata/nested) with the mermaid the preview bundles:
// a diagram that does not parse would show an error in the preview.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.join(here, '..', '..', '..', 'gen', 'testdata');

// mermaid.parse runs DOMPurify, which needs a browser's DOM: parsing,
// which this checks, does not, so its hooks are stubbed.
async function loadMermaid() {
  const { default: purify } = await import('dompurify');
  Object.assign(purify, { addHook() {}, removeHook() {}, removeHooks() {}, sanitize: (s) => s });
  const { default: mermaid } = await import('mermaid');
  return mermaid;
}

function diagrams(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...diagrams(p));
    else if (entry.name.endsWith('.mmd')) out.push(p);
  }
  return out.sort();
}

test('the generated Mermaid diagrams parse', async (t) => {
  const mermaid = await loadMermaid();
  const files = diagrams(testdata);
  assert.ok(files.some((f) => f.includes(`${path.sep}nested${path.sep}`)), 'no nested diagram found');
  for (const f of files) {
    await t.test(path.relative(testdata, f), async () => {
      const got = await mermaid.parse(fs.readFileSync(f, 'utf8'));
      assert.equal(got.diagramType, 'stateDiagram');
    });
  }
});
