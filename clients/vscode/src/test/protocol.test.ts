// The real server from Node over vscode-jsonrpc, as the extension's client talks to it:
// initialize, open a document, ask for an inline completion, watch infill/draft converge.
// DIFFUSION_INFILL_SERVER is the server command as a JSON array (tests/clients sets it).
import { strict as assert } from 'node:assert';
import { ChildProcess, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { Draft } from '../drafts';

const COMMAND = process.env.DIFFUSION_INFILL_SERVER;
const skip = COMMAND ? false : 'DIFFUSION_INFILL_SERVER is not set';
const CODE = 'import os\n\n\ndef main():\n    lines = read_lines(os.path.join("data", "input.txt"))\n    print(len(lines))\n';
const CURSORS = [[4, 36], [5, 14], [4, 12]];

let server: ChildProcess;
let connection: MessageConnection;
const drafts: Draft[] = [];

before(async () => {
  if (!COMMAND) {
    return;
  }
  const [command, ...args] = JSON.parse(COMMAND) as string[];
  server = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  connection.onNotification('infill/draft', (draft: Draft) => {
    drafts.push(draft);
  });
  connection.onNotification(() => undefined); // progress, messages
  connection.onRequest(() => null); // window/workDoneProgress/create ...
  connection.listen();
});

after(async () => {
  if (!COMMAND) {
    return;
  }
  await connection.sendRequest('shutdown');
  await connection.sendNotification('exit');
  connection.dispose();
  await new Promise((resolve) => (server.exitCode !== null ? resolve(null) : server.on('exit', resolve)));
});

test('initialize advertises inline completion and its commands: accept, and fix (a large fix run when chosen)', { skip }, async () => {
  const result: any = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    capabilities: { textDocument: { inlineCompletion: {} }, general: { positionEncodings: ['utf-16'] } },
    // every request runs the model: no quiet characters, no drafts from the document
    initializationOptions: { diffusionInfill: { mode: 'single-line', quietAfter: '', documentDrafts: false } },
  });
  await connection.sendNotification('initialized', {});
  assert.ok(result.capabilities.inlineCompletionProvider);
  assert.deepEqual([...result.capabilities.executeCommandProvider.commands].sort(), [
    'diffusionInfill.accept',
    'diffusionInfill.fix',
  ]);
});

test('drafts converge before the answer, which matches the final draft', { skip }, async () => {
  const uri = 'file:///tmp/protocol_test.py';
  await connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'python', version: 1, text: CODE },
  });
  for (const [line, character] of CURSORS) {
    drafts.length = 0;
    const position = { line, character };
    const items: any[] = await connection.sendRequest('textDocument/inlineCompletion', {
      textDocument: { uri }, position, context: { triggerKind: 2 },
    });
    const mine = drafts.filter((d) => d.uri === uri && d.position.line === line && d.position.character === character);
    assert.ok(mine.length > 0, 'no infill/draft before the answer');
    assert.deepEqual(mine.map((d) => d.final), [...mine.slice(1).map(() => false), true]);
    const final = mine[mine.length - 1];
    if (final.text === '') {
      assert.deepEqual(items, []);
      continue;
    }
    const [item] = items;
    assert.deepEqual(item.range.start, position);
    assert.ok(item.insertText.startsWith(final.text));
    assert.equal(item.command.command, 'diffusionInfill.accept');
  }
});
