// Tokenizes .fsm files with the grammar, as VS Code does (vscode-textmate
// on the Oniguruma regular expressions of vscode-oniguruma): every .fsm
// file of the repository leaves no character unscoped (each non-blank
// character gets a scope beyond source.fsm, none invalid), and the scopes
// of test/sample.fsm are those of test/sample.scopes (UPDATE=1 rewrites it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const here = path.dirname(fileURLToPath(import.meta.url));
const extension = path.join(here, '..');
const repo = path.join(extension, '..', '..');

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const manifest = JSON.parse(fs.readFileSync(path.join(extension, 'package.json'), 'utf8'));
  const contributed = manifest.contributes.grammars.find((g) => g.scopeName === 'source.fsm');
  const grammarPath = path.join(extension, contributed.path);
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) =>
      scopeName === 'source.fsm' ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null,
  });
  return registry.loadGrammar('source.fsm');
}

// tokenize returns every token of text: line, column, text and scopes.
function tokenize(grammar, text) {
  const out = [];
  let stack = vsctm.INITIAL;
  text.split(/\r?\n/).forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack);
    for (const t of r.tokens) {
      out.push({ line: i + 1, col: t.startIndex + 1, text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes });
    }
    stack = r.ruleStack;
  });
  return out;
}

// fsmFiles returns the .fsm files under dir, node_modules and .git left out.
function fsmFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === '.git') continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...fsmFiles(p));
    else if (e.name.endsWith('.fsm')) out.push(p);
  }
  return out.sort();
}

const grammar = await loadGrammar();

test('every .fsm file of the repository is scoped throughout', () => {
  const files = fsmFiles(repo);
  assert.ok(files.length >= 15, `only ${files.length} .fsm files found under ${repo}`);
  for (const file of files) {
    const rel = path.relative(repo, file);
    for (const t of tokenize(grammar, fs.readFileSync(file, 'utf8'))) {
      if (t.text.trim() === '') continue;
      assert.ok(t.scopes.length > 1, `${rel}:${t.line}:${t.col}: ${JSON.stringify(t.text)} has no scope beyond source.fsm`);
      const bad = t.scopes.find((s) => s.startsWith('invalid'));
      assert.equal(bad, undefined, `${rel}:${t.line}:${t.col}: ${JSON.stringify(t.text)} is ${bad}`);
    }
  }
});

test('a character the language does not know is invalid', () => {
  const tokens = tokenize(grammar, 'machine M {\n    initial A @\n}\n');
  const at = tokens.find((t) => t.text === '@');
  assert.deepEqual(at.scopes, ['source.fsm', 'invalid.illegal.character.fsm']);
});

test('the scopes of test/sample.fsm', () => {
  const sample = path.join(here, 'sample.fsm');
  const golden = path.join(here, 'sample.scopes');
  const got = tokenize(grammar, fs.readFileSync(sample, 'utf8'))
    .filter((t) => t.text.trim() !== '')
    .map((t) => `${t.line}:${t.col}\t${t.text}\t${t.scopes.slice(1).join(' ')}`)
    .join('\n') + '\n';
  if (process.env.UPDATE === '1') fs.writeFileSync(golden, got);
  assert.equal(got, fs.readFileSync(golden, 'utf8'), 'scopes differ from test/sample.scopes (UPDATE=1 node --test rewrites it)');
});
