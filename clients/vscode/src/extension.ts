// diffusion-infill for VS Code: starts `diffusion-infill serve`; vscode-languageclient (10+)
// provides its inline completions and code actions, and this file paints the converging
// `infill/draft` notifications as a decoration until the final item is shown (and, when asked
// for, an info line after it); controls.ts adds the status item, the commands and `enable`.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions, ServerOptions,
} from 'vscode-languageclient/node';
import { Controls } from './controls';
import { Draft, Ghost, ghostFor, label, sameGhost, serverSettings } from './drafts';
import { infoLine } from './status';
import { allowedSection, userValue, workspaceDestination } from './trust';

const SECTION = 'diffusionInfill';
const LANGUAGES = ['python', 'javascript', 'typescript', 'javascriptreact', 'typescriptreact', 'json', 'markdown'];
const ALLOWED_URLS = 'diffusionInfill.allowedUrls';  // globalState: the user's answer per URL
let client: LanguageClient | undefined;

/** Whether the user lets a workspace send code to `url`: asked once, the answer remembered. */
async function mayReceiveCode(context: vscode.ExtensionContext, url: string): Promise<boolean> {
  const answers = context.globalState.get<Record<string, boolean>>(ALLOWED_URLS, {});
  if (url in answers) {
    return answers[url];
  }
  const allow = 'Allow', deny = "Don't Allow";
  const answer = await vscode.window.showWarningMessage(
    `This workspace's settings send the code around your cursor to ${url}. Allow it?`,
    { modal: true, detail: 'diffusion-infill remembers the answer for this URL.' }, allow, deny);
  if (answer === undefined) {
    return false;  // dismissed: no answer to remember, asked again next time
  }
  await context.globalState.update(ALLOWED_URLS, { ...answers, [url]: answer === allow });
  return answer === allow;
}

/** The settings the server gets: the workspace's engine, url and model only when it is trusted and,
 * when they send code to a URL of their own, the user allowed that URL. */
async function settingsForServer(context: vscode.ExtensionContext): Promise<Record<string, unknown>> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const inspect = (key: string) => config.inspect(key);
  let section = allowedSection(config as unknown as Record<string, unknown>, inspect, vscode.workspace.isTrusted);
  const url = workspaceDestination(section, inspect);
  if (url !== undefined && !(await mayReceiveCode(context, url))) {
    section = allowedSection(section, inspect, false);
  }
  return serverSettings(section);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  // the user's or the machine's command, never a workspace's (package.json: scope machine)
  const [command, ...args] = userValue(config.inspect<string[]>('server.command')) as string[];
  // stdio without `transport`: the server speaks stdio by default (it accepts `--stdio` too)
  const serverOptions: ServerOptions = { command, args };
  let controls: Controls | undefined;
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ language })),
    initializationOptions: { [SECTION]: await settingsForServer(context) },
    middleware: {  // diffusionInfill.enable: a language that is off is not even asked about
      provideInlineCompletionItems: (document, position, inline, token, next) =>
        controls?.suggests(document.languageId) === false ? undefined : next(document, position, inline, token),
    },
  };
  // The server's keys only, pushed on change: the whole section (synchronize.configurationSection)
  // would also send the extension's own keys (server.command, showDrafts, trace), which the server
  // does not know and warns about at every start.
  const pushSettings = async () => {
    const settings = await settingsForServer(context);
    await client?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
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
    if (!config.get<boolean>('showDrafts', true)) {
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
