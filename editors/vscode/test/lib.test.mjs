// Tests the extension's commands against the real fsmgen that FSMGEN_BIN
// names (go test ./cmd/fsmgen -run TestVSCode builds it): the diagram the
// preview shows and fsmgen's errors in its place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const lib = require('../lib.js');

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.join(here, '..', '..', '..');
const bin = process.env.FSMGEN_BIN;
if (!bin) throw new Error('FSMGEN_BIN is not set: run these tests through go test ./cmd/fsmgen -run TestVSCode (make test does)');
const config = { path: bin, args: [] };

test('the commands put fsmgen.args first', () => {
  assert.deepEqual(lib.serverCommand({ path: 'go', args: ['tool', 'fsmgen'] }), { command: 'go', args: ['tool', 'fsmgen', 'lsp'] });
  assert.deepEqual(lib.serverCommand({}), { command: 'fsmgen', args: ['lsp'] });
});

test('machinesIn lists the machines of a file', () => {
  const text = fs.readFileSync(path.join(repo, 'runtime', 'linearchain', 'linear_chain.fsm'), 'utf8');
  assert.deepEqual(lib.machinesIn(text), ['Instance', 'Step']);
});

test('the preview draws what fsmgen diagram draws, from unsaved text', async () => {
  const file = path.join(repo, 'machines', 'shop', 'shop.fsm');
  const text = fs.readFileSync(file, 'utf8').replace('PENDING_PAYMENT -> PACKING    on Pay', 'PENDING_PAYMENT -> PACKING on Pay\n    PENDING_PAYMENT -> IN_TRANSIT on Delivered');
  const got = await lib.renderDiagram(config, { fileName: file, text });
  assert.equal(got.error, undefined);
  assert.match(got.mermaid, /^stateDiagram-v2\n/);
  assert.match(got.mermaid, /PENDING_PAYMENT --> IN_TRANSIT : Delivered\n/);
  const two = await lib.renderDiagram(config, { fileName: path.join(repo, 'runtime', 'linearchain', 'linear_chain.fsm'),
    text: fs.readFileSync(path.join(repo, 'runtime', 'linearchain', 'linear_chain.fsm'), 'utf8'), machine: 'Instance' });
  assert.match(two.mermaid, /RUNNING --> COMPLETED/);
});

test('the preview shows fsmgen\'s errors, named after the file', async () => {
  const got = await lib.renderDiagram(config, { fileName: '/nowhere/door.fsm', text: 'machine Door {\n    initial CLOSED\n    event Open\n    CLOSED -> OPEN on Open\n}\n' });
  assert.equal(got.mermaid, undefined);
  assert.equal(got.error, 'door.fsm:4:15: unknown state OPEN');
});

test('a missing fsmgen is an error that says which setting to fix', async () => {
  const got = await lib.renderDiagram({ path: '/nonexistent/fsmgen' }, { fileName: '/tmp/x.fsm', text: '' });
  assert.match(got.error, /^cannot run \/nonexistent\/fsmgen: .*; set fsmgen.path$/);
});

test('the preview page loads only the bundled mermaid, by nonce', () => {
  const html = lib.previewHtml({ title: 'Diagram: <x>', mermaid: 'stateDiagram-v2\n  A --> B: <b>', scriptUri: 'vscode-resource://m.js', cspSource: 'vscode-resource:', nonce: 'abc' });
  assert.match(html, /script-src 'nonce-abc';/);
  assert.match(html, /<script nonce="abc" src="vscode-resource:\/\/m.js"><\/script>/);
  assert.match(html, /<pre class="mermaid">stateDiagram-v2\n  A --&gt; B: &lt;b&gt;<\/pre>/);
  assert.match(html, /<title>Diagram: &lt;x&gt;<\/title>/);
});
