// The extension in a real VS Code: code-server in headless Chromium, driven through Playwright
// as a user would (keys, clicks). Run by tests/clients/test_vscode_e2e.py, which starts
// code-server and checks the files and counts this leaves behind:
//   node run.js CONFIG.json
// CONFIG: { url, python: { file, cursors: [[line, character], ...] }, json: { file }, screenshot }
// (0-based cursors, each after a character that is typed again there; json and screenshot are
// optional). Prints one JSON line: { suggestion: { line, character, text, shown }, json: { fixed } } or
// { error }: `text` is the ghost text on the cursor's line, `shown` the line as displayed with it.
// CONFIG with `typing: { file, line, text, logs, ready, request }` instead: opens `file`, waits
// until a log file under `logs` says `ready`, types `text` one key at a time at the start of (empty)
// `line` and waits for a suggestion; when VS Code's word suggestions are open too, closes them with
// Escape and waits for the answer to the request VS Code then sends (the logs say `request` once
// more); accepts what is shown then with Tab and saves the file. Prints { typed: { first, words,
// alone, tabs } }: `first` the suggestion shown after typing ({ text, shown } or null), `words`
// whether the word suggestions were open with it, `alone` the suggestion shown without them (or
// null), `tabs` what each Tab took ('word': a word suggestion, 'suggestion': the inline one).
// CONFIG with `onOff: { file, line, text, logs, ready, request, before, after }`: opens `file`, waits
// for `ready` in the logs and reads the status bar item; runs the command palette's `before` commands
// ([title, the status item's text to wait for]), types `text` at the start of `line` and reads what
// is shown (the one fixed wait: nothing may appear) and how often the logs say `request`; runs
// `after`, retypes the last character and waits for a suggestion; with `suggestNow`, runs Suggest Now.
// With `info`, waits for the info line. Prints { onOff: { status, off, requests, on, info, invoked } }:
// the status item's texts (at ready, then after each command), the suggestion while off (null: none),
// the requests logged while off, the suggestion after, the info line then (null: none), whether
// Suggest Now sent an Invoked request.
// CONFIG with `bench: { file, keys, paceMs, logs, ready }` (scripts/typing_bench.py): opens `file`, waits for
// `ready` in the logs, goes to the end of the file and presses each of `keys` (one character: typed; else a key
// name) `paceMs` apart, then saves. Prints { bench: { shown, words, logged } }: `shown` one entry a key, milliseconds
// from its keydown to the first moment ghost text is on screen after that key was drawn (the cursor moved),
// read every 5 ms in the page, before the next key (null: none was); `words` whether VS Code's word suggestions
// were open after it; `logged` what the logs gained meanwhile.
// CONFIG with `palette: { json, logs, ready, error }`: the status item's menu and the commands on
// the broken JSON file `json` (see palette() below). Prints { palette: { status, menu, logShown } }.
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');
const { browserPath } = require('./browser');

const FIRST_ANSWER_MS = 180000; // the first request waits for the model to load
const ANSWER_MS = 45000;
const KEY_DELAY_MS = 50; // between two keys typed as a person does
// ghost text: its first line, its preview part (past a selected word suggestion), its further lines
const GHOST = '.ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text';
const SUGGEST_WIDGET = '.monaco-editor .suggest-widget'; // VS Code's own word suggestions
const MAX_WORDS = 2; // a word suggestion still open after this many Tabs is not going away
const SETTLE_MS = 3000; // an answer's time once its request arrived: a model run here takes under a second

/** Opens `name` from the Explorer, as a click would, and waits for its editor to have focus. */
async function openFile(page, name) {
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).dblclick();
  await page.waitForSelector(`.tab.active[data-resource-name="${name}"]`);
  await page.waitForSelector('.monaco-editor.focused');
}

/** Saves the edited active editor and waits until it is written (its tab no longer marked dirty). */
async function save(page) {
  await page.waitForSelector('.tab.active.dirty', { timeout: 30000 });
  await page.keyboard.press('Control+S');
  await page.waitForSelector('.tab.active.dirty', { state: 'detached', timeout: 30000 });
}

async function goTo(page, line, character) {
  await page.keyboard.press('Control+G');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(`${line + 1}:${character + 1}`);
  await page.keyboard.press('Enter');
}

/** How many times the files under `dir` (code-server's logs, the extension's output among them) say `text`. */
function logCount(dir, text) {
  if (!fs.existsSync(dir)) {
    return 0;
  }
  return fs.readdirSync(dir, { recursive: true }).map((name) => path.join(dir, name))
    .filter((file) => fs.statSync(file).isFile())
    .reduce((count, file) => count + fs.readFileSync(file, 'utf8').split(text).length - 1, 0);
}

/** The text of each file under `dir` (code-server's logs), by path. */
function logTexts(dir) {
  return Object.fromEntries(fs.readdirSync(dir, { recursive: true }).map((name) => path.join(dir, name))
    .filter((file) => fs.statSync(file).isFile()).map((file) => [file, fs.readFileSync(file, 'utf8')]));
}

/** Waits until the logs under `dir` say `text` more than `times` times. */
async function waitForLog(page, dir, text, times = 0, timeout = FIRST_ANSWER_MS) {
  const deadline = Date.now() + timeout;
  while (logCount(dir, text) <= times) {
    if (Date.now() > deadline) {
      throw new Error(`the logs under ${dir} never said "${text}" (${times + 1} times)`);
    }
    await page.waitForTimeout(200);
  }
}

/** The ghost text on `ghost`'s line, all its parts, and the line as the user sees it: VS Code may
 * split one insertion into several ghost parts, around text already there or where the selected word
 * suggestion ends, so one part alone is not what Tab inserts (innerText: what is displayed, without
 * the part of the line a multi-line suggestion moves down). */
async function shownWith(ghost) {
  const [text, shown] = await ghost.evaluate((node, selector) => {
    const line = node.closest('.view-line');
    return [[...line.querySelectorAll(selector)].map((part) => part.textContent).join(''), line.innerText];
  }, GHOST);
  return { text: text.replace(/\u00a0/g, ' '), shown: shown.replace(/\u00a0/g, ' ') };
}

/** Accepts the suggestion shown with Tab, as a person does, and saves the file; returns what each
 * Tab took. While VS Code's word suggestions are open (on by default), Tab takes their selected word
 * and the rest of the inline suggestion stays as ghost text for the next Tab. */
async function accept(page) {
  const took = [];
  while (await page.isVisible(SUGGEST_WIDGET)) {
    if (took.length === MAX_WORDS) {
      throw new Error(`the word suggestions stayed open after ${MAX_WORDS} Tabs`);
    }
    await page.keyboard.press('Tab');
    took.push('word');
    await page.waitForSelector(GHOST, { timeout: ANSWER_MS });
  }
  await page.keyboard.press('Tab');
  took.push('suggestion');
  await page.waitForSelector(GHOST, { state: 'detached', timeout: 10000 });
  await save(page);
  return took;
}

/** Retypes the character before each cursor until an inline suggestion is shown; accepts it with Tab. */
async function suggestion(page, config, lines) {
  let wait = FIRST_ANSWER_MS;
  for (const [line, character] of config.python.cursors) {
    await goTo(page, line, character);
    await page.keyboard.press('Backspace');
    await page.keyboard.type(lines[line][character - 1]);
    const ghost = await page.waitForSelector(GHOST, { timeout: wait }).catch(() => null);
    wait = ANSWER_MS;
    if (!ghost) {
      continue;
    }
    const { text, shown } = await shownWith(ghost);
    if (config.screenshot) {
      await page.screenshot({ path: config.screenshot });
    }
    await accept(page);
    return { line, character, text, shown };
  }
  return null;
}

/** The suggestion shown now, or null. */
async function shownNow(page) {
  const ghost = await page.$(GHOST);
  return ghost && shownWith(ghost);
}

/** Once the server is ready, types `config.typing.text` at the start of its line, a key at a time, and
 * reads the suggestion with VS Code's word suggestions open and without them; accepts the last one. */
async function typed(page, config) {
  const { file, line, text, logs, ready, request } = config.typing;
  await openFile(page, file);  // the extension starts the server for it
  await waitForLog(page, logs, ready);
  await goTo(page, line, 0);
  await page.keyboard.type(text, { delay: KEY_DELAY_MS });
  const first = await page.waitForSelector(GHOST, { timeout: ANSWER_MS }).then(shownWith, () => null);
  if (config.screenshot) {
    await page.screenshot({ path: config.screenshot });
  }
  // With a word selected in VS Code's list, VS Code asks for what extends that word; without the
  // list (closed with Escape, as a person dismisses it), for what follows the text typed.
  const words = await page.isVisible(SUGGEST_WIDGET);
  let alone = first;
  if (words) {
    const asked = logCount(logs, request);
    await page.keyboard.press('Escape');
    await waitForLog(page, logs, request, asked, ANSWER_MS);
    await page.waitForTimeout(SETTLE_MS);
    alone = await shownNow(page);
  }
  return { first, words, alone, tabs: alone ? await accept(page) : [] };
}

const STATUS_ITEM = '.statusbar-item'; // ours: the one whose text starts with "infill:"
const INVOKED = ' invoked\n'; // the end of the server's -v line for an Invoked inline completion request

/** The text of the extension's status bar item (its icon is not text), once it reads `wanted`. */
async function statusItem(page, wanted) {
  const item = page.locator(STATUS_ITEM, { hasText: wanted }).first();
  await item.waitFor({ timeout: FIRST_ANSWER_MS });
  return (await item.innerText()).trim();
}

/** Runs a command by its title from the command palette (F1), as a person does. */
async function runCommand(page, title) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(title);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Runs each [title, status] of `commands` and waits for the status item to read `status`. */
async function commands(page, steps, status) {
  for (const [title, wanted] of steps) {
    await runCommand(page, title);
    status.push(await statusItem(page, wanted));
  }
}

/** Suggestions off (by a command or a setting) while typing a line, then on again. */
async function onOff(page, config) {
  const { file, line, text, logs, ready, request, before, after } = config.onOff;
  await openFile(page, file);
  await waitForLog(page, logs, ready);
  const status = [await statusItem(page, 'infill:')];
  await page.waitForFunction(() => ![...document.querySelectorAll('.statusbar-item')]
    .some((item) => /infill: (starting|loading)/.test(item.innerText)), null, { timeout: FIRST_ANSWER_MS });
  status[0] = await statusItem(page, 'infill:');
  await commands(page, before, status);
  await page.locator('.monaco-editor .view-lines').first().click();  // the editor has focus again
  await goTo(page, line, 0);
  const asked = logCount(logs, request);
  await page.keyboard.type(text, { delay: KEY_DELAY_MS });
  await page.waitForTimeout(SETTLE_MS);
  const off = await shownNow(page);
  const requests = logCount(logs, request) - asked;
  await page.keyboard.press('Escape');
  await commands(page, after, status);
  await page.locator('.monaco-editor .view-lines').first().click();
  await goTo(page, line, text.length);
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text.slice(-1));
  const on = await page.waitForSelector(GHOST, { timeout: ANSWER_MS }).then(shownWith, () => null);
  // the info line (diffusionInfill.infoLine): an `after` decoration, drawn by CSS, not in innerText
  const info = await page.waitForFunction(() => {
    for (const node of document.querySelectorAll('.view-line span')) {
      const content = getComputedStyle(node, '::after').content;
      if (content.includes(' steps · ')) {
        return JSON.parse(content);
      }
    }
    return null;
  }, null, { timeout: config.onOff.info ? ANSWER_MS : SETTLE_MS }).then((found) => found.jsonValue(), () => null);
  let invoked = false;  // Suggest Now sends an Invoked request (the server's -v log names its trigger)
  if (config.onOff.suggestNow) {
    const asked = logCount(logs, INVOKED);
    await page.keyboard.press('Escape');
    await runCommand(page, 'diffusion-infill: Suggest Now');
    invoked = await waitForLog(page, logs, INVOKED, asked, ANSWER_MS).then(() => true, () => false);
  }
  return { status, off, requests, on, info, invoked };
}

const MODIFIERS = ['Control', 'Shift', 'Alt', 'Meta'];  // pressed with a key, not keys of their own

/** In the page: each key's keydown time and where the cursor was drawn then, and the first moment after
 * it that the cursor has moved (the key was drawn) and ghost text with a visible character is on screen. */
function recordKeys({ ghostSelector, modifiers, wordsSelector }) {
  const editor = '.monaco-editor.focused';
  const words = `${wordsSelector}.visible`;
  const selector = ghostSelector.split(',').map((part) => `${editor} ${part.trim()}`).join(', ');
  const cursor = () => {
    const node = document.querySelector(`${editor} .cursors-layer .cursor`);
    return node ? `${node.style.top} ${node.style.left}` : '';
  };
  const ghost = () => [...document.querySelectorAll(selector)].some((node) => /\S/.test(node.textContent));
  const keys = [];
  window.benchKeys = keys;
  window.addEventListener('keydown', (event) => {
    if (!modifiers.includes(event.key)) {  // a chord is one key: Control+Backspace
      keys.push({ t: performance.now(), at: cursor(), shown: null, words: false });
    }
  }, true);  // capture: before the editor handles it
  setInterval(() => {
    const last = keys[keys.length - 1];
    if (last && last.shown === null && cursor() !== last.at && ghost()) {
      last.shown = performance.now() - last.t;
    }
    if (last && document.querySelector(words)) {
      last.words = true;
    }
  }, 5);
}

/** scripts/typing_bench.py: `keys` pressed `paceMs` apart at the end of `file`; each key's key-to-ghost time. */
async function bench(page, config) {
  const { file, keys, paceMs, logs, ready } = config.bench;
  await openFile(page, file);
  await waitForLog(page, logs, ready);
  await page.keyboard.press('Control+End');
  await page.evaluate(recordKeys, { ghostSelector: GHOST, modifiers: MODIFIERS, wordsSelector: SUGGEST_WIDGET });
  const before = logTexts(logs);
  for (const key of keys) {
    await (key.length === 1 ? page.keyboard.type(key) : page.keyboard.press(key));
    await page.waitForTimeout(paceMs);
  }
  await page.waitForTimeout(SETTLE_MS);  // the last answers, and the output channel written to its file
  const shown = await page.evaluate(() => window.benchKeys.map((key) => key.shown));
  const words = await page.evaluate(() => window.benchKeys.map((key) => key.words));
  const logged = Object.entries(logTexts(logs)).map(([file, text]) => text.slice((before[file] ?? '').length)).join('');
  await page.keyboard.press('Escape');
  await save(page);
  return { shown, words, logged };
}

/** Selects all of the broken JSON file and runs "Fix JSON selection" from the quick fix menu,
 * asking again (as a user would) until the server, which starts with the file, offers it. */
async function fixJson(page, config) {
  await openFile(page, config.json.file);
  const action = page.locator('.action-widget .monaco-list-row', { hasText: 'Fix JSON selection' });
  const deadline = Date.now() + FIRST_ANSWER_MS;
  for (;;) {
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+.');
    if (await action.waitFor({ timeout: 5000 }).then(() => true, () => false)) {
      break;
    }
    if (Date.now() > deadline) {
      throw new Error('"Fix JSON selection" was never offered');
    }
    await page.keyboard.press('Escape');
    await page.waitForTimeout(2000);
  }
  // the menu is keyboard-driven (a pointer block lies over it while it opens): walk to the action
  const focused = page.locator('.action-widget .monaco-list-row.focused');
  while ((await focused.getAttribute('aria-label')) !== 'Fix JSON selection') {
    await page.keyboard.press('ArrowDown');
  }
  await page.keyboard.press('Enter');
  await validJson(page);
  await save(page);
  return { fixed: true };
}

/** Waits until the active editor holds valid JSON (an edit was applied). */
async function validJson(page) {
  await page.waitForFunction(() => {
    try {
      const view = document.querySelector('.editor-group-container.active .editor-instance .monaco-editor .view-lines');
      JSON.parse(view.innerText.replace(/\u00a0/g, ' '));
      return true;
    } catch {
      return false;
    }
  }, null, { timeout: 120000 });
}

/** The command palette's commands and the status item's menu, on a broken JSON file: the menu's
 * entries, Fix Selection (the file saved), Show Log (the server's `ready` line on screen), Restart
 * Server (a second `ready` in the logs, the item ready again). With `error` (a model that cannot
 * load): the item reads error, and a click on it shows the log with `error` in it. */
async function palette(page, config) {
  const { json, logs, ready, error } = config.palette;
  const logView = (text) => page.locator('.part.panel .view-lines', { hasText: text }).first()
    .waitFor({ timeout: ANSWER_MS }).then(() => true, () => false);
  await openFile(page, json);
  if (error) {
    const status = await statusItem(page, 'infill: error');
    await page.locator(STATUS_ITEM, { hasText: 'infill: error' }).first().click();
    return { status, logShown: await logView(error) };
  }
  await waitForLog(page, logs, ready);
  const status = [await statusItem(page, 'infill: ready')];
  await page.locator(STATUS_ITEM, { hasText: 'infill: ready' }).first().click();
  await page.waitForSelector('.quick-input-list .monaco-list-row');
  const menu = (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((row) => row.trim());
  await page.keyboard.press('Escape');
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+A');
  await runCommand(page, 'diffusion-infill: Fix Selection');
  await validJson(page);
  await save(page);
  await runCommand(page, 'diffusion-infill: Show Log');
  const logShown = await logView(ready);
  const before = logCount(logs, ready);
  await runCommand(page, 'diffusion-infill: Restart Server');
  await waitForLog(page, logs, ready, before);
  status.push(await statusItem(page, 'infill: ready'));
  return { status, menu, logShown };
}

async function main(configPath) {
  const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
  const browser = await chromium.launch({ executablePath: browserPath(), args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 600 } });
    await page.goto(config.url, { timeout: 180000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120000 });
    try {
      if (config.typing) {
        console.log(JSON.stringify({ typed: await typed(page, config) }));
        return;
      }
      if (config.bench) {
        console.log(JSON.stringify({ bench: await bench(page, config) }));
        return;
      }
      if (config.palette) {
        console.log(JSON.stringify({ palette: await palette(page, config) }));
        return;
      }
      if (config.onOff) {
        console.log(JSON.stringify({ onOff: await onOff(page, config) }));
        return;
      }
      await openFile(page, config.python.file);
      const lines = fs.readFileSync(config.python.path, 'utf8').split('\n');
      const result = { suggestion: await suggestion(page, config, lines) };
      if (config.json) {
        result.json = await fixJson(page, config);
      }
      console.log(JSON.stringify(result));
    } catch (error) {
      if (config.failureScreenshot) {
        await page.screenshot({ path: config.failureScreenshot });
      }
      throw error;
    }
  } finally {
    await browser.close();
  }
}

main(process.argv[2]).catch((error) => {
  console.log(JSON.stringify({ error: error.message }));
  process.exit(1);
});
