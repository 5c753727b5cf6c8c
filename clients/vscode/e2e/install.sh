#!/usr/bin/env bash
# Installs what the extension's end-to-end test (tests/clients/test_vscode_e2e.py) needs:
# code-server (VS Code in the browser) and Playwright's driver into e2e/node_modules, and, as
# root with apt-get, Debian's chromium, ripgrep and the headers VS Code's native modules build
# against (code-server's docs/npm.md).
#
# code-server's own postinstall runs `npm install` in lib/vscode, where @vscode/ripgrep fetches
# its binary from GitHub. The same steps run here by hand, with Debian's rg put where that
# package looks for it (its bin/ folder, which makes its postinstall skip the download), so
# everything comes from npm and Debian. Run again, it does nothing unless package-lock.json changed.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.installed
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  echo "e2e: already installed"
  exit 0
fi

packages=(chromium ripgrep build-essential python3 pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev)
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
for tool in rg chromium; do
  command -v "$tool" >/dev/null || { echo "e2e: $tool is missing (Debian: apt-get install $tool)" >&2; exit 1; }
done

export npm_config_yes=true  # node-pty's post-install runs `npx node-gyp`, which asks before installing it
npm ci --ignore-scripts --no-audit --no-fund
npm rebuild argon2  # code-server's password hashing: its prebuilt binary is on GitHub, so it builds

vscode=node_modules/code-server/lib/vscode
(
  cd "$vscode"
  npm install --omit=dev --ignore-scripts --no-audit --no-fund
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  npm rebuild  # the native modules; @vscode/ripgrep finds bin/ and downloads nothing
  # what code-server's postinstall.sh does after its npm install
  ln -sfn node_modules node_modules.asar
  ln -sfn code-linux.sh bin/remote-cli/code-server
  ln -sfn browser-linux.sh bin/helpers/browser.sh
  cd extensions
  npm install --omit=dev --no-audit --no-fund
)
cp package-lock.json "$stamp"
echo "e2e: installed code-server $(node -p "require('./node_modules/code-server/package.json').version")"
