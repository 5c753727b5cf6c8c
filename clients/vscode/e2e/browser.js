// The system's Chromium (Debian: chromium), which Playwright drives: no browser download.
const { execFileSync } = require('child_process');

exports.browserPath = () => {
  if (process.env.CHROMIUM) {
    return process.env.CHROMIUM;
  }
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {
      // not this name
    }
  }
  throw new Error('no chromium on PATH (Debian: apt-get install chromium)');
};
