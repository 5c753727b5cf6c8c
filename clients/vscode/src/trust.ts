// Which settings a workspace may choose: pure logic, no `vscode` at run time, so that it is
// unit-tested under plain Node. A cloned repository's .vscode/settings.json must not choose the
// command the extension runs, nor, unless the workspace is trusted, the model or where code is
// sent. package.json declares the same (scopes, restrictedConfigurations); the extension applies
// it itself too, so the rule does not rest on VS Code's defaults alone.

/** What `WorkspaceConfiguration.inspect` reports for a key: the fields read here. */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export type Inspect = (key: string) => Inspected | undefined;

/** Read from the user's (or the remote machine's) settings only: a workspace never chooses them. */
export const MACHINE_ONLY = ['server.command'];
/** Read from the user's settings only while the workspace is not trusted. */
export const RESTRICTED = ['engine', 'url', 'model'];

/** A key's value without the workspace's: the user's (or the machine's), else the default. */
export function userValue(inspected: Inspected | undefined): unknown {
  return inspected?.globalValue ?? inspected?.defaultValue;
}

/** `section` with the RESTRICTED keys taken from the user's settings unless the workspace is trusted. */
export function allowedSection(section: Record<string, unknown>, inspect: Inspect,
  trusted: boolean): Record<string, unknown> {
  if (trusted) {
    return { ...section };
  }
  const allowed = { ...section };
  for (const key of RESTRICTED) {
    allowed[key] = userValue(inspect(key));
  }
  return allowed;
}

/** Where `section` sends code: the URL with engine openai, else undefined (the in-process model). */
export function destination(section: Record<string, unknown>): string | undefined {
  return section.engine === 'openai' && typeof section.url === 'string' && section.url !== '' ? section.url : undefined;
}

/**
 * The URL code would go to because of the workspace's settings: undefined when code stays in the
 * server's process or goes where the user's own settings send it (no question to ask).
 */
export function workspaceDestination(section: Record<string, unknown>, inspect: Inspect): string | undefined {
  const url = destination(section);
  return url !== undefined && url !== destination(allowedSection(section, inspect, false)) ? url : undefined;
}

/** Where the server finds the URL the API key may go to, when its command line names none. */
export const API_URL_VARIABLE = 'DIFFUSION_INFILL_API_URL';

/**
 * The URL the server may send the API key to: the workspace's once the user allowed it (the
 * question said the key goes too), else the user's own `url`; undefined: none (the key stays home).
 */
export function keyUrl(inspect: Inspect, allowedWorkspaceUrl: string | undefined): string | undefined {
  const own = userValue(inspect('url'));
  return allowedWorkspaceUrl ?? (typeof own === 'string' && own !== '' ? own : undefined);
}

/** The server's environment: `base` with the key's URL, so that the server sends the key there and nowhere else. */
export function serverEnvironment(base: Record<string, string | undefined>,
  url: string | undefined): Record<string, string | undefined> {
  return url === undefined ? { ...base } : { ...base, [API_URL_VARIABLE]: url };
}

/** The question asked before a workspace's settings send code to `url`; the answer is kept for this workspace. */
export function consentQuestion(url: string): { message: string; detail: string } {
  return {
    message: `This workspace's settings send the code around your cursor to ${url}, with your API key `
      + '(DIFFUSION_INFILL_API_KEY or OPENAI_API_KEY, when the server has one). Allow it?',
    detail: 'diffusion-infill remembers the answer for this URL in this workspace only.',
  };
}
