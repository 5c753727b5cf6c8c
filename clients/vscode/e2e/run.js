// The extension in a real VS Code: code-server in headless Chromium, driven through Playwright
// as a user would (keys, clicks). Run by tests/clients/test_vscode_e2e.py, which starts
// code-server and checks the files and counts this leaves behind:
//   node run.js CONFIG.json
// CONFIG: { url, python: { file, cursors: [[line, character], ...] }, json: { file }, screenshot }
// (0-based cursors, each after a character that is typed again there; json and screenshot are
// optional). Prints one JSON line: { suggestion: { line, character, text, shown }, json: { fixed } } or
// { error }: `text` is the first ghost part, `shown` the cursor's line as displayed with it.
// CONFIG with `typing: { file, line, text }` instead: types `text` one key at a time at the
// start of (empty) `line` and prints { typed: the suggestion then shown, or null }.
const fs = require('fs');
const { chromium } = require('playwright-core');
const { browserPath } = require('./browser');

const FIRST_ANSWER_MS = 180000; // the first request waits for the model to load
const ANSWER_MS = 45000;
const KEY_DELAY_MS = 50; // between two keys typed as a person does
const GHOST = '.ghost-text-decoration, .ghost-text';

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
    const text = (await ghost.textContent()).replace(/\u00a0/g, ' ');
    // the line as the user sees it: VS Code may split one insertion into several ghost parts
    // around text already there, so the first part alone is not what Tab inserts
    // (innerText: what is displayed, without the part of the line a multi-line suggestion moves down)
    const shown = (await ghost.evaluate((node) => node.closest('.view-line').innerText)).replace(/\u00a0/g, ' ');
    if (config.screenshot) {
      await page.screenshot({ path: config.screenshot });
    }
    await page.keyboard.press('Tab');
    await page.waitForSelector(GHOST, { state: 'detached', timeout: 10000 });
    await save(page);
    return { line, character, text, shown };
  }
  return null;
}

/** Types `config.typing.text` at the start of its line, a key at a time, then waits for a suggestion. */
async function typed(page, config) {
  await openFile(page, config.typing.file);
  await goTo(page, config.typing.line, 0);
  await page.keyboard.type(config.typing.text, { delay: KEY_DELAY_MS });
  const ghost = await page.waitForSelector(GHOST, { timeout: FIRST_ANSWER_MS }).catch(() => null);
  if (config.screenshot) {
    await page.screenshot({ path: config.screenshot });
  }
  return ghost && (await ghost.textContent()).replace(/\u00a0/g, ' ');
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
  await page.waitForFunction(() => {  // the edit is applied once the editor holds valid JSON
    try {
      const view = document.querySelector('.editor-group-container.active .editor-instance .monaco-editor .view-lines');
      JSON.parse(view.innerText.replace(/\u00a0/g, ' '));
      return true;
    } catch {
      return false;
    }
  }, null, { timeout: 120000 });
  await save(page);
  return { fixed: true };
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
