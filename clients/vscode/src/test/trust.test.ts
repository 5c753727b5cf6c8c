import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { serverSettings } from '../drafts';
import {
  API_URL_VARIABLE, Inspected, MACHINE_ONLY, RESTRICTED, allowedSection, consentQuestion, keyUrl, serverEnvironment,
  userValue, workspaceDestination,
} from '../trust';

const DEFAULTS: Record<string, unknown> = { engine: 'local', url: null, model: null };

/** What VS Code's inspect() reports when the user set `user` and the workspace set `workspace`. */
function configuration(user: Record<string, unknown>, workspace: Record<string, unknown>) {
  const section = { ...DEFAULTS, ...user, ...workspace, maxSteps: 12 };
  const inspect = (key: string): Inspected => ({ defaultValue: DEFAULTS[key], globalValue: user[key],
    workspaceValue: workspace[key] });
  return { section, inspect };
}

const REMOTE = { engine: 'openai', url: 'http://127.0.0.1:9/v1', model: 'served' };

test("an untrusted workspace's engine, url and model are replaced by the user's", () => {
  const { section, inspect } = configuration({ model: '/models/mine' }, REMOTE);
  assert.deepEqual(serverSettings(allowedSection(section, inspect, false)), { engine: 'local', model: '/models/mine', maxSteps: 12 });
  assert.deepEqual(serverSettings(allowedSection(section, inspect, true)), { ...REMOTE, maxSteps: 12 });
});

test("the workspace's destination needs the user's consent; the user's own does not", () => {
  const workspace = configuration({}, REMOTE);
  assert.equal(workspaceDestination(workspace.section, workspace.inspect), REMOTE.url);
  const user = configuration(REMOTE, {});
  assert.equal(workspaceDestination(user.section, user.inspect), undefined);
  // the workspace turns on the engine the user pointed at their own server: code would go out
  const engineOnly = configuration({ url: REMOTE.url }, { engine: 'openai' });
  assert.equal(workspaceDestination(engineOnly.section, engineOnly.inspect), REMOTE.url);
  const local = configuration({}, { url: REMOTE.url });  // a URL without engine openai sends nothing
  assert.equal(workspaceDestination(local.section, local.inspect), undefined);
});

test('a command comes from the user or the default, never the workspace', () => {
  assert.deepEqual(userValue({ defaultValue: ['diffusion-infill', 'serve'], workspaceValue: ['touch', 'x'] }),
    ['diffusion-infill', 'serve']);
  assert.deepEqual(userValue({ defaultValue: ['a'], globalValue: ['b'], workspaceFolderValue: ['c'] }), ['b']);
});

test('package.json declares what the extension applies: scopes and restricted settings', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const manifest = require('../../package.json');
  const properties = manifest.contributes.configuration.properties;
  for (const key of MACHINE_ONLY) {
    assert.equal(properties[`diffusionInfill.${key}`].scope, 'machine', key);
  }
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, 'limited');
  for (const key of RESTRICTED) {
    assert.ok(['machine', 'machine-overridable'].includes(properties[`diffusionInfill.${key}`].scope), key);
    assert.ok(untrusted.restrictedConfigurations.includes(`diffusionInfill.${key}`), key);
  }
});

test('the API key goes to the URL of the user\'s settings, or to a workspace\'s URL the user allowed', () => {
  const user = configuration({ url: 'http://mine:8000/v1' }, REMOTE);
  assert.equal(keyUrl(user.inspect, undefined), 'http://mine:8000/v1');  // not the workspace's, though trusted
  assert.equal(keyUrl(user.inspect, REMOTE.url), REMOTE.url);  // asked, and allowed
  const workspaceOnly = configuration({}, REMOTE);
  assert.equal(keyUrl(workspaceOnly.inspect, undefined), undefined);  // the key goes nowhere
  assert.deepEqual(serverEnvironment({ PATH: '/bin' }, REMOTE.url), { PATH: '/bin', [API_URL_VARIABLE]: REMOTE.url });
  assert.deepEqual(serverEnvironment({ PATH: '/bin' }, undefined), { PATH: '/bin' });
});

test('the question says the API key is sent, and that the answer is kept for this workspace', () => {
  const { message, detail } = consentQuestion(REMOTE.url);
  assert.match(message, /http:\/\/127\.0\.0\.1:9\/v1, with your API key/);
  assert.match(detail, /this URL in this workspace only/);
});
