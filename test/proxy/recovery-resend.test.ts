// Crash test: the node is killed with SIGKILL after journaling a top-up and a refund but before
// the swaps are performed (the dev mint holds them, then drops them unperformed). After a
// restart the recovery sends them again: credited once, refund token made.
import { describe, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { crashHarness } from './fixtures/wallet-crash.js';

describe.each(databaseKinds)('crash before the swaps reached the mint, on %s', (kind) => {
  const h = crashHarness(kind);

  it('killed before the swaps reached the mint: sent again, credited once, refund token made', async () => {
    const { payer, refunder, t } = await h.crashDuring('drop');
    await h.expectSettled(payer, refunder, t);
  }, 240_000); // two node processes started one after the other, each up to 90 s on a busy machine
});
