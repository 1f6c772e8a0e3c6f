import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium: the browser tests drive it with playwright-core, which downloads no browser. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The browser of one test file: `open()` starts headless Chromium on a fresh profile (no cookie of
 * another test), with playwright's context options. Registers an afterAll that closes every
 * browser it opened and removes their profiles. Fails at once, saying how to install it, when
 * Chromium is missing (scripts/ensure-chromium.sh installs it before `pnpm test`).
 */
export function useChromium(): { open(options?: { httpCredentials?: { username: string; password: string } }): Promise<BrowserContext> } {
  const opened: Array<{ browser: BrowserContext; profile: string }> = [];
  afterAll(async () => {
    const all = opened.splice(0);
    await Promise.all(all.map(({ browser }) => browser.close().catch(() => undefined)));
    await Promise.all(all.map(({ profile }) => rm(profile, { recursive: true, force: true })));
  });
  return {
    async open(options = {}) {
      if (!existsSync(CHROMIUM)) {
        throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get update && apt-get install -y chromium), see the README`);
      }
      const profile = await mkdtemp(path.join(tmpdir(), 'herald-chromium-'));
      const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, ...options });
      opened.push({ browser, profile });
      return browser;
    },
  };
}
