// Debian's Chromium through playwright-core, for the viewer's and the admin page's browser tests.
// QUARTET_TEST_BROWSER=0 (the fast loop, test/README.md) skips them.
import { chromium, type Browser } from 'playwright-core';

export const browserTests = process.env.QUARTET_TEST_BROWSER !== '0';

/** A headless Chromium; `extraArgs` add switches such as --host-resolver-rules. */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}
