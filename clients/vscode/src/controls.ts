// The status bar item (the server's state from `infill/status`, with a menu), the commands, and
// the `diffusionInfill.enable` setting by language that the inline completion middleware obeys.
import * as vscode from 'vscode';
import { LanguageClient, State } from 'vscode-languageclient/node';
import { Enable, ServerStatus, enabledFor, offFor, statusView, switched } from './status';

const SECTION = 'diffusionInfill';
const DEFAULT_ENABLE: Enable = { '*': true };

function readEnable(): Enable {
  return vscode.workspace.getConfiguration(SECTION).get<Enable>('enable', DEFAULT_ENABLE);
}

function activeLanguage(): string | undefined {
  return vscode.window.activeTextEditor?.document.languageId;
}

export class Controls implements vscode.Disposable {
  private enable = readEnable();  // read on change, not at every request
  private status: ServerStatus | string | undefined;
  private restarting = false;  // the server stops on purpose: "starting", not an error
  private readonly item = vscode.window.createStatusBarItem('diffusionInfill.status', vscode.StatusBarAlignment.Right, 100);
  private readonly disposables: vscode.Disposable[] = [this.item];

  constructor(private readonly client: LanguageClient) {
    this.item.name = 'diffusion-infill';
    const command = (id: string, run: () => unknown) => vscode.commands.registerCommand(`${SECTION}.${id}`, run);
    this.disposables.push(
      client.onNotification('infill/status', (status: ServerStatus) => this.show(status)),
      client.onDidChangeState((event) => {
        if (event.newState === State.Starting) {
          this.show(undefined);
        } else if (event.newState === State.Stopped) {
          this.show(this.restarting ? undefined : 'the server stopped');
        }
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.render()),
      vscode.workspace.onDidChangeConfiguration((event) => event.affectsConfiguration(`${SECTION}.enable`) && this.reread()),
      command('toggle', () => this.toggle('*')),
      command('toggleLanguage', () => {
        const language = activeLanguage();
        return language && this.toggle(language);
      }),
      command('trigger', () => vscode.commands.executeCommand('editor.action.inlineSuggest.trigger')),
      command('restart', () => this.restart()),
      command('showLog', () => client.outputChannel.show(true)),
      command('fixSelection', () => vscode.commands.executeCommand('editor.action.codeAction', { kind: 'quickfix', apply: 'ifSingle' })),
      command('menu', () => this.menu()),
    );
    this.render();
    this.item.show();
  }

  /** Whether a document of `language` gets suggestions now. */
  suggests(language: string): boolean {
    return enabledFor(this.enable, language);
  }

  dispose(): void {
    this.disposables.forEach((disposable) => disposable.dispose());
  }

  private show(status: ServerStatus | string | undefined): void {
    this.status = status;
    this.render();
  }

  private render(): void {
    const view = statusView(this.status, offFor(this.enable, activeLanguage()));
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.accessibilityInformation = { label: view.tooltip };
    this.item.command = view.failed ? `${SECTION}.showLog` : `${SECTION}.menu`;
  }

  private reread(): void {
    this.enable = readEnable();
    this.render();
    if (!this.suggests(activeLanguage() ?? '*')) {
      void vscode.commands.executeCommand('editor.action.inlineSuggest.hide');  // what is shown goes too
    }
  }

  /** Switches `key` ("*" or a languageId) in the user's `enable`; honoured at once (reread). */
  private async toggle(key: string): Promise<void> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const user = config.inspect<Enable>('enable')?.globalValue ?? DEFAULT_ENABLE;
    const on = key === '*' ? offFor(this.enable, undefined) === undefined : this.suggests(key);
    await config.update('enable', switched(user, key, !on), vscode.ConfigurationTarget.Global);
  }

  private async restart(): Promise<void> {
    this.restarting = true;
    try {
      await this.client.restart();
    } finally {
      this.restarting = false;
    }
  }

  private async menu(): Promise<void> {
    const language = activeLanguage();
    const everywhere = offFor(this.enable, undefined) === undefined;
    const items: (vscode.QuickPickItem & { command: string })[] = [
      { label: everywhere ? '$(circle-slash) Turn off everywhere' : '$(check) Turn on everywhere', command: 'toggle' },
      ...(language ? [{ label: `${this.suggests(language) ? '$(circle-slash) Turn off' : '$(check) Turn on'} for ${language}`, command: 'toggleLanguage' }] : []),
      { label: '$(sparkle) Suggest now', command: 'trigger' },
      { label: '$(wrench) Fix selection', command: 'fixSelection' },
      { label: '$(debug-restart) Restart the server', command: 'restart' },
      { label: '$(output) Show the log', command: 'showLog' },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: this.item.tooltip as string });
    if (picked) {
      await vscode.commands.executeCommand(`${SECTION}.${picked.command}`);
    }
  }
}
