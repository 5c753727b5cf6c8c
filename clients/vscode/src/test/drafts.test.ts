import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Draft, MORE_LINES, ghostFor, label, sameGhost, serverSettings } from '../drafts';

const URI = 'file:///src/shapes.py';
const editor = { uri: URI, version: 7, cursor: { line: 10, character: 36 } };
const draft = (changes: Partial<Draft> = {}): Draft => ({
  uri: URI, version: 7, position: { line: 10, character: 36 }, text: 'self.width', step: 3, final: false, ...changes,
});

test('a draft for the cursor is painted after it', () => {
  assert.deepEqual(ghostFor(draft(), editor), { line: 10, character: 36, text: 'self.width', more: 0 });
});

test('a multi-line draft paints its first line and a marker', () => {
  const ghost = ghostFor(draft({ text: 'if x:\n    y\n' }), editor);
  assert.deepEqual(ghost, { line: 10, character: 36, text: 'if x:', more: 2 });
  assert.equal(label(ghost!), 'if x:' + MORE_LINES);
});

test('stale drafts never paint: another document, version or cursor, or no editor', () => {
  assert.equal(ghostFor(draft({ uri: 'file:///other.py' }), editor), undefined);
  assert.equal(ghostFor(draft({ version: 6 }), editor), undefined);
  assert.equal(ghostFor(draft({ position: { line: 10, character: 35 } }), editor), undefined);
  assert.equal(ghostFor(draft(), undefined), undefined);
});

test('the final draft and an empty draft clear the decoration', () => {
  assert.equal(ghostFor(draft({ final: true }), editor), null);
  assert.equal(ghostFor(draft({ text: '' }), editor), null);
});

test('an unchanged draft is not repainted', () => {
  assert.ok(sameGhost(ghostFor(draft({ step: 4 }), editor), ghostFor(draft({ step: 5 }), editor)));
  assert.ok(!sameGhost(ghostFor(draft(), editor), ghostFor(draft({ text: 'self.w' }), editor)));
  assert.ok(!sameGhost(undefined, ghostFor(draft(), editor)));
});

test('settings sent to the server: only the diffusionInfill keys that are set', () => {
  const section = { model: null, maxSteps: 12, mode: 'single-line', showDrafts: true, server: { command: ['x'] } };
  assert.deepEqual(serverSettings(section), { maxSteps: 12, mode: 'single-line' });
  // false and '' are settings too: document drafts off, no quiet characters
  assert.deepEqual(serverSettings({ documentDrafts: false, quietAfter: '', minConfidence: 0.5 }),
    { minConfidence: 0.5, documentDrafts: false, quietAfter: '' });
  assert.deepEqual(serverSettings({ quantize: 'int4' }), { quantize: 'int4' });
});

test('package.json contributes every server setting', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const manifest = require('../../package.json');
  const properties = Object.keys(manifest.contributes.configuration.properties);
  for (const key of ['model', 'device', 'dtype', 'quantize', 'maxGapTokens', 'maxSteps', 'entropyBound', 'mode',
    'enabledLanguages', 'invokedItems', 'minConfidence', 'documentDrafts', 'quietAfter', 'engine', 'url',
    'promptFormat', 'timeout', 'invokedTimeout']) {
    assert.ok(properties.includes(`diffusionInfill.${key}`), key);
  }
  assert.ok(manifest.activationEvents.every((event: string) => event.startsWith('onLanguage:')));
});

test('drafts are not painted unless asked for: the gate may withdraw them, so only final completions show', () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  assert.equal(manifest.contributes.configuration.properties['diffusionInfill.showDrafts'].default, false);
});
