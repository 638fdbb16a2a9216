// Debian's Chromium for the browser tests (.ci/run installs it), started quietly: without these
// flags Chromium keeps calling out of this closed network (updates, sync) at every start.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => Boolean(path && existsSync(path)),
);

/** A test's option that skips it, saying why, where no Chromium is installed. */
export const needsChromium = { skip: CHROMIUM ? false : 'no chromium here (.ci/run installs it)' };

const QUIET = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM as string, args: QUIET });
