// The fsmgen extension: the .fsm language (grammar and configuration in
// package.json), the language server `fsmgen lsp` through
// vscode-languageclient, and a command that previews the machine's
// Mermaid diagram beside the editor.
'use strict';

const crypto = require('node:crypto');
const path = require('node:path');
const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');
const { serverCommand, machinesIn, renderDiagram, previewHtml } = require('./lib');

let client;

function config() {
  const c = vscode.workspace.getConfiguration('fsmgen');
  return { path: c.get('path'), args: c.get('args'), serverEnabled: c.get('server.enabled') };
}

async function startServer(context) {
  const cfg = config();
  if (!cfg.serverEnabled) return;
  const { command, args } = serverCommand(cfg);
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  client = new LanguageClient('fsmgen', 'fsmgen language server',
    { command, args, transport: TransportKind.stdio, options: { cwd } },
    { documentSelector: [{ language: 'fsm' }] });
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(`fsmgen: cannot start ${command} ${args.join(' ')}: ${err.message}. Set fsmgen.path.`);
  }
  context.subscriptions.push({ dispose: () => client && client.stop() });
}

async function restartServer(context) {
  if (client) {
    await client.stop();
    client = undefined;
  }
  await startServer(context);
}

// Preview is the diagram panel; it follows the .fsm document it shows.
class Preview {
  constructor(context) {
    this.context = context;
    this.panel = undefined;
    this.doc = undefined;
    this.machine = undefined;
    this.timer = undefined;
  }

  async show(doc) {
    const names = machinesIn(doc.getText());
    this.machine = names.length > 1
      ? await vscode.window.showQuickPick(names, { placeHolder: 'The machine to draw' })
      : undefined;
    if (names.length > 1 && !this.machine) return;
    this.doc = doc;
    const dist = vscode.Uri.joinPath(this.context.extensionUri, 'node_modules', 'mermaid', 'dist');
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('fsmgen.diagram', 'Diagram', vscode.ViewColumn.Beside,
        { enableScripts: true, localResourceRoots: [dist] });
      this.panel.onDidDispose(() => { this.panel = undefined; });
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    await this.update();
  }

  schedule(doc) {
    if (!this.panel || doc !== this.doc) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.update(), 300);
  }

  async update() {
    if (!this.panel || !this.doc) return;
    const doc = this.doc;
    const result = await renderDiagram(config(), { fileName: doc.fileName, text: doc.getText(), machine: this.machine });
    if (!this.panel) return;
    const title = `Diagram: ${this.machine || path.basename(doc.fileName)}`;
    const webview = this.panel.webview;
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.context.extensionUri, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js'));
    this.panel.title = title;
    webview.html = previewHtml({ ...result, title, scriptUri: script.toString(), cspSource: webview.cspSource, nonce: crypto.randomBytes(16).toString('hex') });
  }
}

async function activate(context) {
  const preview = new Preview(context);
  context.subscriptions.push(
    vscode.commands.registerCommand('fsmgen.previewDiagram', async () => {
      const doc = vscode.window.activeTextEditor?.document;
      if (!doc || doc.languageId !== 'fsm') {
        vscode.window.showInformationMessage('fsmgen: open a .fsm file to preview its diagram.');
        return;
      }
      await preview.show(doc);
    }),
    vscode.commands.registerCommand('fsmgen.restartServer', () => restartServer(context)),
    vscode.workspace.onDidChangeTextDocument((e) => preview.schedule(e.document)),
    vscode.workspace.onDidSaveTextDocument((doc) => preview.schedule(doc)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('fsmgen')) restartServer(context);
    }),
  );
  await startServer(context);
}

async function deactivate() {
  if (client) await client.stop();
}

module.exports = { activate, deactivate };
