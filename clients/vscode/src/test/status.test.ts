import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { enabledFor, infoLine, offFor, statusView, switched } from '../status';

const READY = { state: 'ready' as const, engine: 'local', model: 'the embedded model', message: 'from /models/tiny' };

test('a language entry wins over "*", and everything is on by default', () => {
  const enable = { '*': true, markdown: false };
  assert.equal(enabledFor(enable, 'python'), true);
  assert.equal(enabledFor(enable, 'markdown'), false);
  assert.equal(enabledFor({ '*': false, python: true }, 'python'), true);
  assert.equal(enabledFor({ '*': false }, 'json'), false);
  assert.equal(enabledFor({}, 'json'), true);
});

test('off names the key that turns a language off', () => {
  assert.equal(offFor({ '*': true, python: false }, 'python'), 'python');
  assert.equal(offFor({ '*': false }, 'python'), '*');
  assert.equal(offFor({ '*': false }, undefined), '*');
  assert.equal(offFor({ '*': true }, 'python'), undefined);
  assert.deepEqual(switched({ '*': true }, 'python', false), { '*': true, python: false });
});

test('the status item: starting, loading, ready naming the model and engine, error, off', () => {
  assert.equal(statusView(undefined).text, '$(loading~spin) infill: starting');
  assert.equal(statusView({ ...READY, state: 'loading', message: '' }).text, '$(loading~spin) infill: loading');
  const ready = statusView(READY);
  assert.equal(ready.text, '$(check) infill: ready');
  assert.match(ready.tooltip, /the embedded model \(engine local\), from \/models\/tiny/);
  assert.equal(ready.failed, false);
  const error = statusView({ ...READY, state: 'error', message: 'no such directory' });
  assert.equal(error.text, '$(error) infill: error');
  assert.match(error.tooltip, /no such directory/);
  assert.equal(error.failed, true);  // a click opens the log
  assert.equal(statusView('the server stopped').failed, true);
  assert.equal(statusView(READY, '*').text, '$(circle-slash) infill: off');
  assert.equal(statusView(READY, 'python').text, '$(circle-slash) infill: off (python)');
  assert.equal(statusView({ ...READY, state: 'error' }, '*').failed, true);  // an error shows through off
});

test('the info line: steps, milliseconds, confidence, source', () => {
  const draft = { uri: 'file:///a.py', version: 1, position: { line: 0, character: 0 }, text: 'x', final: true };
  assert.equal(infoLine({ ...draft, step: 5, ms: 96, confidence: 0.625, source: 'model' }),
    '5 steps · 96 ms · confidence 0.63 · model');
  assert.equal(infoLine({ ...draft, step: 0, ms: 1, confidence: null, source: 'document' }),
    '0 steps · 1 ms · confidence - · document');
});

test('the info line is the first item\'s own: an answer from memory ran 0 steps, its item took 3', () => {
  const draft = { uri: 'file:///a.py', version: 1, position: { line: 0, character: 0 }, text: 'x', final: true };
  const items = [{ step: 3, ms: 2, confidence: 0.5, source: 'model' }, { step: 6, ms: 90, confidence: 0.1, source: 'model' }];
  assert.equal(infoLine({ ...draft, step: 0, ms: 2, confidence: 0.5, source: 'model', items }),
    '3 steps · 2 ms · confidence 0.50 · model');
});
