// The parts of the extension that do not need VS Code: the commands it
// runs, reading machine names, rendering a diagram with fsmgen, and the
// preview's HTML. extension.js wires them to the editor; test/ tests them
// against a real fsmgen.
'use strict';

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

// command returns the fsmgen command line for args: fsmgen.path, then
// fsmgen.args (["tool", "fsmgen"] when fsmgen.path is go), then args.
function command(config, ...args) {
  const cmd = (config.path || 'fsmgen').trim() || 'fsmgen';
  return { command: cmd, args: [...(config.args || []), ...args] };
}

// serverCommand is the command that starts the language server.
function serverCommand(config) {
  return command(config, 'lsp');
}

// machinesIn returns the names of the machines a .fsm text declares, in
// order.
function machinesIn(text) {
  const out = [];
  for (const m of text.matchAll(/^[ \t]*machine[ \t]+([A-Za-z_][A-Za-z0-9_]*)/gm)) out.push(m[1]);
  return out;
}

// renderDiagram runs fsmgen diagram on a document's current text (saved
// or not) and resolves to { mermaid } or, when fsmgen refuses it,
// { error } with fsmgen's messages. The text is written to a temporary
// file of the same name, so that messages name the file as the editor
// does.
async function renderDiagram(config, { fileName, text, machine }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmgen-preview-'));
  try {
    const file = path.join(dir, path.basename(fileName));
    fs.writeFileSync(file, text);
    const { command: cmd, args } = command(config, 'diagram', '-format', 'mermaid', ...(machine ? ['-machine', machine] : []), file);
    const { code, stdout, stderr } = await run(cmd, args, path.dirname(fileName));
    if (code !== 0) {
      return { error: stderr.split(file).join(path.basename(fileName)).trim() || `${cmd} exited with ${code}` };
    }
    return { mermaid: stdout };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function run(cmd, args, cwd) {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: fs.existsSync(cwd) ? cwd : undefined, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') {
        resolve({ code: -1, stdout: '', stderr: `cannot run ${cmd}: ${err.message}; set fsmgen.path` });
        return;
      }
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

function escapeHTML(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// previewHtml is the page of the preview: the Mermaid source rendered by
// the bundled mermaid.min.js (scriptUri), or fsmgen's error.
function previewHtml({ title, mermaid, error, scriptUri, cspSource, nonce }) {
  const body = error
    ? `<pre class="error">${escapeHTML(error)}</pre>`
    : `<pre class="mermaid">${escapeHTML(mermaid)}</pre>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src ${cspSource} 'unsafe-inline'; font-src ${cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHTML(title)}</title>
<style>body { padding: 1em; } .error { color: var(--vscode-errorForeground); white-space: pre-wrap; }</style>
</head>
<body>
${body}
<script nonce="${nonce}" src="${scriptUri}"></script>
<script nonce="${nonce}">
mermaid.initialize({ startOnLoad: true, securityLevel: 'strict',
  theme: document.body.classList.contains('vscode-dark') ? 'dark' : 'default' });
</script>
</body>
</html>
`;
}

module.exports = { command, serverCommand, machinesIn, renderDiagram, previewHtml };
