// Renders an HTML file to a PNG in headless Chromium (the system's, through Playwright):
//   node screenshot.js PAGE.html OUT.png WIDTH HEIGHT
// tests/clients/screenshot.py draws Neovim's terminal with it.
const { chromium } = require('playwright-core');
const { browserPath } = require('./browser');

async function main([page, out, width, height]) {
  const browser = await chromium.launch({ executablePath: browserPath(), args: ['--no-sandbox'] });
  try {
    const tab = await browser.newPage({ viewport: { width: Number(width), height: Number(height) } });
    await tab.goto(`file://${require('path').resolve(page)}`);
    await tab.screenshot({ path: out, fullPage: true });
  } finally {
    await browser.close();
  }
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error.message);
  process.exit(1);
});
