// Starts the language server as the extension does, with the real fsmgen
// that FSMGEN_BIN names (go test ./cmd/fsmgen -run TestVSCode builds it),
// and speaks LSP to it over vscode-jsonrpc, as vscode-languageclient does:
// initialize, a document with an error, its diagnostics, shutdown and exit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const lib = require('../lib.js');
const rpc = require('vscode-jsonrpc/node');

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.join(here, '..', '..', '..');
const bin = process.env.FSMGEN_BIN;
if (!bin) throw new Error('FSMGEN_BIN is not set: run these tests through go test ./cmd/fsmgen -run TestVSCode (make test does)');
const config = { path: bin, args: [] };

test('the language server the extension starts answers over LSP', async () => {
  const { command, args } = lib.serverCommand(config);
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const early = exited.then((code) => { throw new Error(`${command} ${args.join(' ')} exited with ${code} before answering: ${stderr}`); });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  conn.listen();
  const file = path.join(repo, 'machines', 'shop', 'shop.fsm');
  const uri = 'file://' + file;
  const diagnostics = new Promise((resolve) => {
    conn.onNotification('textDocument/publishDiagnostics', (p) => { if (p.uri === uri) resolve(p); });
  });
  const init = await Promise.race([early, conn.sendRequest('initialize', { processId: process.pid, rootUri: 'file://' + repo, capabilities: {} })]);
  early.catch(() => {});
  assert.ok(init.capabilities.hoverProvider, 'hover');
  assert.ok(init.capabilities.definitionProvider, 'definition');
  assert.ok(init.capabilities.documentFormattingProvider, 'formatting');
  await conn.sendNotification('initialized', {});
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'fsm', version: 1, text: fs.readFileSync(file, 'utf8').replace('on Pay', 'on Payy') } });
  const got = await Promise.race([early, diagnostics]);
  assert.ok(got.diagnostics.some((d) => /unknown event Payy/.test(d.message)), JSON.stringify(got.diagnostics));
  await conn.sendRequest('shutdown');
  await conn.sendNotification('exit');
  assert.equal(await exited, 0);
  conn.dispose();
});
