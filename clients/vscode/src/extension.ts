// diffusion-infill for VS Code: starts `diffusion-infill serve`; vscode-languageclient (10+)
// provides its inline completions and code actions, and this file paints the converging
// `infill/draft` notifications as a decoration until the final item is shown.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions, ServerOptions,
} from 'vscode-languageclient/node';
import { Draft, Ghost, ghostFor, label, sameGhost, serverSettings } from './drafts';

const SECTION = 'diffusionInfill';
const LANGUAGES = ['python', 'javascript', 'typescript', 'javascriptreact', 'typescriptreact', 'json', 'markdown'];
let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const [command, ...args] = config.get<string[]>('server.command', ['diffusion-infill', 'serve']);
  // stdio without `transport`: TransportKind.stdio would add a `--stdio` argument the server rejects
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ language })),
    initializationOptions: { [SECTION]: serverSettings(config as unknown as Record<string, unknown>) },
  };
  // The server's keys only, pushed on change: the whole section (synchronize.configurationSection)
  // would also send the extension's own keys (server.command, showDrafts, trace), which the server
  // does not know and warns about at every start.
  const pushSettings = (event: vscode.ConfigurationChangeEvent) => {
    if (event.affectsConfiguration(SECTION)) {
      const section = vscode.workspace.getConfiguration(SECTION) as unknown as Record<string, unknown>;
      void client?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: serverSettings(section) } });
    }
  };
  client = new LanguageClient('diffusionInfill', 'diffusion-infill', serverOptions, clientOptions);

  const decoration = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorGhostText.foreground'), fontStyle: 'italic' },
  });
  let shown: { editor: vscode.TextEditor; ghost: Ghost } | undefined;
  const clear = () => {
    shown?.editor.setDecorations(decoration, []);
    shown = undefined;
  };
  const paint = (draft: Draft) => {
    if (!vscode.workspace.getConfiguration(SECTION).get<boolean>('showDrafts', true)) {
      return;
    }
    const editor = vscode.window.activeTextEditor;
    const state = editor && {
      uri: editor.document.uri.toString(),
      version: editor.document.version,
      cursor: editor.selection.active,
    };
    const ghost = ghostFor(draft, state);
    if (ghost === null) {
      clear();
    } else if (ghost && editor && !sameGhost(ghost, shown?.ghost)) {
      const at = new vscode.Position(ghost.line, ghost.character);
      editor.setDecorations(decoration, [{ range: new vscode.Range(at, at), renderOptions: { after: { contentText: label(ghost) } } }]);
      shown = { editor, ghost };
    }
  };

  context.subscriptions.push(
    decoration,
    client.onNotification('infill/draft', paint),
    vscode.window.onDidChangeTextEditorSelection(clear),
    vscode.workspace.onDidChangeTextDocument(clear),
    vscode.workspace.onDidChangeConfiguration(pushSettings),
    vscode.window.onDidChangeActiveTextEditor(clear),
    client,
  );
  await client.start();
}

export function deactivate(): Thenable<void> | undefined {
  return client?.stop();
}
