// Crash test: the node is killed with SIGKILL after journaling a top-up and a refund but before
// the swaps reach the mint (the relay holds them, then drops them). After a restart the
// recovery sends them again: credited once, refund token made.
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { crashHarness } from './fixtures/wallet-crash.js';

describe.each(databaseKinds)('crash before the swaps reached the mint, on %s', (kind) => {
  const h = crashHarness(kind);

  it('killed before the swaps reached the mint: sent again, credited once, refund token made', async () => {
    let done = 0;
    const { payer, refunder, t } = await h.crashDuring(
      async () => {
        done = h.gateway().swapsDone();
        h.gateway().faults.holdSwaps = true;
      },
      async () => {
        h.gateway().faults.holdSwaps = false;
        h.gateway().releaseHeld(false); // the held requests die unsent
        expect(h.gateway().swapsDone()).toBe(done);
      },
    );
    await h.expectSettled(payer, refunder, t);
  }, 60_000);
});
