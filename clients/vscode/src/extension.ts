// diffusion-infill for VS Code: starts `diffusion-infill serve`; vscode-languageclient (10+)
// provides its inline completions and code actions, and this file paints the converging
// `infill/draft` notifications as a decoration until the final item is shown (and, when asked
// for, an info line after it); controls.ts adds the status item, the commands and `enable`.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification, Executable, LanguageClient, LanguageClientOptions,
} from 'vscode-languageclient/node';
import { Controls } from './controls';
import { Draft, Ghost, ghostFor, label, sameGhost, serverSettings } from './drafts';
import { infoLine } from './status';
import {
  allowedSection, consentQuestion, keyUrl, serverEnvironment, userValue, workspaceDestination,
} from './trust';

const SECTION = 'diffusionInfill';
// The language table's VS Code defaults (engine/languages.py, tested against this list).
const LANGUAGES = [
  'python',
  'javascript',
  'typescript',
  'javascriptreact',
  'typescriptreact',
  'json',
  'jsonc',
  'markdown',
  'go',
  'rust',
  'c',
  'cpp',
  'java',
  'ruby',
  'shellscript',
  'yaml',
];
const ALLOWED_URLS = 'diffusionInfill.allowedUrls';  // workspaceState: the user's answer per URL, per workspace
let client: LanguageClient | undefined;

/** Whether the user lets this workspace send code (and the API key) to `url`: asked once per workspace. */
async function mayReceiveCode(context: vscode.ExtensionContext, url: string): Promise<boolean> {
  const answers = context.workspaceState.get<Record<string, boolean>>(ALLOWED_URLS, {});
  if (url in answers) {
    return answers[url];
  }
  const allow = 'Allow', deny = "Don't Allow";
  const { message, detail } = consentQuestion(url);
  const answer = await vscode.window.showWarningMessage(message, { modal: true, detail }, allow, deny);
  if (answer === undefined) {
    return false;  // dismissed: no answer to remember, asked again next time
  }
  await context.workspaceState.update(ALLOWED_URLS, { ...answers, [url]: answer === allow });
  return answer === allow;
}

/** The settings the server gets: the workspace's engine, url and model only when it is trusted and,
 * when they send code to a URL of their own, the user allowed that URL; and the URL the API key may go to. */
async function settingsForServer(context: vscode.ExtensionContext,
): Promise<{ settings: Record<string, unknown>; keyUrl: string | undefined }> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const inspect = (key: string) => config.inspect(key);
  let section = allowedSection(config as unknown as Record<string, unknown>, inspect, vscode.workspace.isTrusted);
  const url = workspaceDestination(section, inspect);
  const allowed = url !== undefined && (await mayReceiveCode(context, url));
  if (url !== undefined && !allowed) {
    section = allowedSection(section, inspect, false);
  }
  return { settings: serverSettings(section), keyUrl: keyUrl(inspect, allowed ? url : undefined) };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  // the user's or the machine's command, never a workspace's (package.json: scope machine)
  const [command, ...args] = userValue(config.inspect<string[]>('server.command')) as string[];
  let current = await settingsForServer(context);
  // stdio without `transport`: the server speaks stdio by default (it accepts `--stdio` too). The
  // server sends the API key only to the URL its environment names (read at start).
  const environment = () => serverEnvironment(process.env, current.keyUrl);
  const serverOptions: Executable = { command, args, options: { env: environment() } };
  let controls: Controls | undefined;
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ language })),
    initializationOptions: () => ({ [SECTION]: current.settings }),
    middleware: {  // diffusionInfill.enable: a language that is off is not even asked about
      provideInlineCompletionItems: (document, position, inline, token, next) =>
        controls?.suggests(document.languageId) === false ? undefined : next(document, position, inline, token),
    },
  };
  // The server's keys only, pushed on change: the whole section (synchronize.configurationSection)
  // would also send the extension's own keys (server.command, showDrafts, trace), which the server
  // does not know and warns about at every start.
  const pushSettings = async () => {
    const previousKeyUrl = current.keyUrl;
    current = await settingsForServer(context);
    if (current.keyUrl !== previousKeyUrl) {  // the key goes elsewhere now: a server started with that
      serverOptions.options = { env: environment() };
      await client?.restart();
      return;
    }
    await client?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: current.settings } });
  };
  client = new LanguageClient('diffusionInfill', 'diffusion-infill', serverOptions, clientOptions);
  controls = new Controls(client);

  const decoration = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorGhostText.foreground'), fontStyle: 'italic' },
  });
  const info = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 2em' },
  });
  let shown: { editor: vscode.TextEditor; ghost: Ghost } | undefined;
  let informed: vscode.TextEditor | undefined;
  const clearDraft = () => {
    shown?.editor.setDecorations(decoration, []);
    shown = undefined;
  };
  const clear = () => {
    clearDraft();
    informed?.setDecorations(info, []);
    informed = undefined;
  };
  const inform = (editor: vscode.TextEditor, draft: Draft) => {
    const end = editor.document.lineAt(draft.position.line).range.end;
    editor.setDecorations(info, [{ range: new vscode.Range(end, end), renderOptions: { after: { contentText: infoLine(draft) } } }]);
    informed = editor;
  };
  const paint = (draft: Draft) => {
    const config = vscode.workspace.getConfiguration(SECTION);
    const editor = vscode.window.activeTextEditor;
    const state = editor && {
      uri: editor.document.uri.toString(),
      version: editor.document.version,
      cursor: editor.selection.active,
    };
    const ghost = ghostFor(draft, state);
    if (ghost === null && editor && draft.final && draft.text && config.get<boolean>('infoLine', false)) {
      inform(editor, draft);
    }
    if (!config.get<boolean>('showDrafts', false)) {
      return;
    }
    if (ghost === null) {
      clearDraft();
    } else if (ghost && editor && !sameGhost(ghost, shown?.ghost)) {
      const at = new vscode.Position(ghost.line, ghost.character);
      editor.setDecorations(decoration, [{ range: new vscode.Range(at, at), renderOptions: { after: { contentText: label(ghost) } } }]);
      shown = { editor, ghost };
    }
  };

  context.subscriptions.push(
    decoration,
    info,
    controls,
    client.onNotification('infill/draft', paint),
    vscode.window.onDidChangeTextEditorSelection(clear),
    vscode.workspace.onDidChangeTextDocument(clear),
    vscode.workspace.onDidChangeConfiguration((event) => event.affectsConfiguration(SECTION) && void pushSettings()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void pushSettings()),  // the workspace's values apply now
    vscode.window.onDidChangeActiveTextEditor(clear),
    client,
  );
  await client.start();
}

export function deactivate(): Thenable<void> | undefined {
  return client?.stop();
}
