// What to paint for an `infill/draft` notification: pure logic, no `vscode` at run time,
// so that it is unit-tested under plain Node.

/** The params of the server's `infill/draft` notification (README, "infill/draft"). */
export interface Draft {
  uri: string;
  version: number;
  position: { line: number; character: number };
  text: string;
  step: number;
  final: boolean;
  source?: string; // model, document or typed_along
  ms?: number; // since the run (or the answer without one) began
  confidence?: number | null; // the final completion's estimated chance of being accepted
  items?: ItemInfo[]; // final drafts: each item's own info, in the answer's order
}

/** What an info line says of one item (the final draft's `items`). */
export interface ItemInfo {
  step: number;
  ms: number;
  confidence: number | null;
  source: string;
}

/** The editor as a draft needs it: the document's uri and version, and the cursor. */
export interface EditorState {
  uri: string;
  version: number;
  cursor: { line: number; character: number };
}

/** One decoration: `text` after (line, character); `more` when the draft has more lines. */
export interface Ghost {
  line: number;
  character: number;
  text: string;
  more: number;
}

export const MORE_LINES = ' ⏎ …';

/**
 * The ghost text to paint for `draft` in `editor`: null clears it (a final draft, whose item the
 * inline completion shows; an empty one) and undefined leaves the screen alone (a draft for
 * another document, version or cursor: a stale one never paints).
 */
export function ghostFor(draft: Draft, editor: EditorState | undefined): Ghost | null | undefined {
  if (!editor || editor.uri !== draft.uri) {
    return undefined;
  }
  const { line, character } = draft.position;
  if (editor.version !== draft.version || editor.cursor.line !== line || editor.cursor.character !== character) {
    return undefined;
  }
  if (draft.final || draft.text === '') {
    return null;
  }
  const lines = draft.text.split(/\r\n|\r|\n/);
  return { line, character, text: lines[0], more: lines.length - 1 };
}

/** The label of a decoration: the first line, and a marker when more lines follow. */
export function label(ghost: Ghost): string {
  return ghost.text + (ghost.more > 0 ? MORE_LINES : '');
}

/** True when `a` and `b` paint the same thing (a repaint is skipped: no flicker). */
export function sameGhost(a: Ghost | null | undefined, b: Ghost | null | undefined): boolean {
  return !!a && !!b && a.line === b.line && a.character === b.character && a.text === b.text && a.more === b.more;
}

/** The `diffusionInfill` section as the server reads it: only the keys the user set, nulls dropped. */
export function serverSettings(section: Record<string, unknown>): Record<string, unknown> {
  const keys = ['model', 'device', 'dtype', 'quantize', 'maxGapTokens', 'maxSteps', 'entropyBound', 'mode',
    'enabledLanguages', 'invokedItems', 'minConfidence', 'documentDrafts', 'quietAfter',
    'engine', 'url', 'promptFormat', 'timeout', 'invokedTimeout'];
  const settings: Record<string, unknown> = {};
  for (const key of keys) {
    const value = section[key];
    if (value !== undefined && value !== null) {
      settings[key] = value;
    }
  }
  return settings;
}
