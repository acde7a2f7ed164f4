// Tokens of a mint the node does not trust (issue 30): swapped into the primary mint by a melt at
// their mint that pays a mint quote of the primary one (src/proxy/wallet/foreign.ts). Two dev mints
// of this process pay each other's invoices. The crash points are the states a crash leaves,
// written with the node's own code, then finished by the running node's recovery loop.
import { OutputData } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { ForeignSwaps, parseForeign } from '../../src/proxy/wallet/foreign.js';
import { meltProofs, mintProofs } from '../../src/proxy/wallet/lightning-mint.js';
import { MintClient } from '../../src/proxy/wallet/mint-client.js';
import { MintJournal } from '../../src/proxy/wallet/mint-journal.js';
import { claimOpInputs, insertMintOp } from '../../src/proxy/wallet/store.js';
import { parseToken, sha256Hex } from '../../src/proxy/wallet/tokens.js';
import { databaseKinds, type DatabaseKind } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, info, openAccount, receiveAtMint, topup, waitFor } from './wallet-helpers.js';
import { accountId } from './wallet-node.js';
import { chatBody, startNode, TEST_MODEL, type Node } from './forward-helpers.js';

const quiet = { info() {}, warn() {}, error() {} };

/** The node's unspent proofs at a mint, summed (what it holds there). */
async function holdings(server: TestServer, mintUrl: string): Promise<number> {
  const rows = await server.db.kysely
    .selectFrom('proxy_proofs')
    .select('amount')
    .where('mint_url', '=', mintUrl)
    .where('state', '=', 'unspent')
    .execute();
  return rows.reduce((sum, r) => sum + Number(r.amount), 0);
}

async function foreignOps(server: TestServer) {
  return server.db.kysely
    .selectFrom('proxy_mint_ops')
    .selectAll()
    .where('kind', '=', 'foreign')
    .orderBy('id')
    .execute();
}

async function startMints() {
  // The foreign mint charges input fees (100 ppk): the swap pays them and the melt's fee reserve.
  const trusted = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
  const foreign = await startDevMint({ unit: 'sat', inputFeePpk: 100, port: 0 });
  return { trusted, foreign };
}

function foreignNode(kind: DatabaseKind, trusted: DevMint, env: Record<string, string>) {
  return startTestServer(kind, {
    env: {
      SERVICES: 'proxy',
      PROXY_MINTS: trusted.url,
      PROXY_MINT_TIMEOUT_MS: '2000',
      PROXY_RECOVERY_INTERVAL_MS: '200',
      ...env,
    },
  });
}

describe.each(databaseKinds)('tokens of an untrusted mint on %s', (kind) => {
  let trusted: DevMint;
  let foreign: DevMint;
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    ({ trusted, foreign } = await startMints());
    server = await foreignNode(kind, trusted, { PROXY_FOREIGN_MINTS: foreign.url, PROXY_FOREIGN_MAX_SAT: '1000' });
    base = server.url;
  });
  afterAll(async () => {
    await server?.close();
    await trusted?.close();
    await foreign?.close();
  });

  it('a foreign top-up is swapped into the primary mint: credited less than its face, fees said', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    const held = await holdings(server, trusted.url);
    const token = await foreign.mintToken(64);
    const answer = await topup(base, key, token);
    expect(answer.status).toBe(200);
    // 64 sat: 1 sat input fee (one proof at 100 ppk), 1 sat melt fee reserve: 62 sat minted at the primary mint.
    expect(answer.body).toEqual({
      msats: 62_000,
      fee_msats: 2000,
      balance: 72_000,
      foreign_mint: foreign.url,
      swap_fee_msat: 1000,
    });
    expect(answer.body.msats).toBeGreaterThan(0);
    expect(answer.body.msats).toBeLessThan(64_000);
    expect(await holdings(server, trusted.url)).toBe(held + 62);
    // The token is spent at its mint; sent again it credits nothing more.
    await expect(receiveAtMint(foreign.url, token)).rejects.toThrow();
    const again = await topup(base, key, token);
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('cashu_token_already_spent');
    expect((await info(base, key)).body.balance).toBe(72_000);
  });

  it('a foreign token as the bearer opens an account holding what the swap minted', async () => {
    const token = await foreign.mintToken(100);
    const answer = await info(base, token);
    expect(answer.status).toBe(200);
    // 100 sat: 1 sat input fee, 1 sat fee reserve (1 % of 98): 98 sat.
    expect(answer.body.balance).toBe(98_000);
    const again = await info(base, token);
    expect(again.body.api_key).toBe(answer.body.api_key);
    expect(again.body.balance).toBe(98_000);
  });

  it('a melt refused with 11000 "not enough inputs" is quoted again for less and credited', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    await foreign.faults.set({ refuseMelts: 1 });
    const answer = await topup(base, key, await foreign.mintToken(64));
    expect(answer.status).toBe(200);
    // The refusal said 1 sat more was needed: 61 sat instead of 62.
    expect(answer.body).toMatchObject({ msats: 61_000, fee_msats: 3000, swap_fee_msat: 2000 });
    expect(foreign.faults.current.refuseMelts).toBeUndefined();
    const op = (await foreignOps(server)).at(-1)!;
    expect(parseForeign(op)).toMatchObject({ refusedMelts: 1, minted: 61, extraFee: 1 });
  });

  it('melts refused every time: 400, the token untouched and still good', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    await foreign.faults.set({ refuseMelts: 5 });
    const token = await foreign.mintToken(64);
    const answer = await topup(base, key, token);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('cashu_foreign_mint_swap_failed');
    await foreign.faults.clear();
    const later = await topup(base, key, token);
    expect(later.status).toBe(200);
    expect(later.body.msats).toBe(62_000);
  });

  it('over PROXY_FOREIGN_MAX_SAT: 400 amount_too_large, nothing melted', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    const token = await foreign.mintToken(1024);
    const answer = await topup(base, key, token);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('amount_too_large');
    expect(answer.body.error.message).toMatch(/at most 1000 sat/);
    expect(await receiveAtMint(foreign.url, token)).toBe(1023);
  });

  it('the foreign mint down while the melt is on its way: 503; the recovery melts again, credited once', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    const token = await foreign.mintToken(64);
    const before = (await foreignOps(server)).length;
    await foreign.faults.set({ delayMs: 400 });
    const pending = topup(base, key, token);
    await waitFor('the journaled swap', async () => (await foreignOps(server)).length > before);
    await foreign.faults.set({ down: true });
    const answer = await pending;
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('redemption_pending');
    await foreign.faults.clear();
    await waitFor('the credit', async () => (await info(base, key)).body.balance === 72_000);
    const again = await topup(base, key, token);
    expect(again.body.error.code).toBe('cashu_token_already_spent');
    expect((await info(base, key)).body.balance).toBe(72_000);
  });

  it("the melt's answer lost: the node asks the primary mint's quote, mints and credits once", async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    await foreign.faults.set({ loseMeltResponses: true });
    try {
      const answer = await topup(base, key, await foreign.mintToken(64));
      expect(answer.status).toBe(200);
      expect(answer.body.msats).toBe(62_000);
    } finally {
      await foreign.faults.clear();
    }
    expect((await info(base, key)).body.balance).toBe(72_000);
  });

  it('minted but the answer lost and no restore: 503; the recovery finishes it, credited once', async () => {
    const key = await openAccount(base, await trusted.mintToken(10));
    await trusted.faults.set({ loseMintResponses: true, noRestore: true });
    const token = await foreign.mintToken(64);
    const answer = await topup(base, key, token);
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('redemption_pending');
    expect((await info(base, key)).body.balance).toBe(10_000);
    await trusted.faults.clear();
    // The recovery loop restores the signatures (NUT-09) and credits; the token is spent.
    await waitFor('the credit', async () => (await info(base, key)).body.balance === 72_000);
    const again = await topup(base, key, token);
    expect(again.body.error.code).toBe('cashu_token_already_spent');
    expect((await info(base, key)).body.balance).toBe(72_000);
  });
});

function blindedOf(journal: { outputs: Parameters<typeof OutputData.deserialize>[0][] }) {
  return journal.outputs.map((o) => {
    const output = OutputData.deserialize(o);
    return {
      amount: Number(output.blindedMessage.amount.toString()),
      id: output.blindedMessage.id,
      B_: output.blindedMessage.B_,
    };
  });
}

describe.each(databaseKinds)('which untrusted mints are taken, on %s', (kind) => {
  let trusted: DevMint;
  let foreign: DevMint;

  beforeAll(async () => {
    ({ trusted, foreign } = await startMints());
  });
  afterAll(async () => {
    await trusted?.close();
    await foreign?.close();
  });

  for (const [setting, env] of [
    ['none (the default)', {}],
    ['none', { PROXY_FOREIGN_MINTS: 'none' }],
    ['a list without it', { PROXY_FOREIGN_MINTS: 'http://127.0.0.1:9' }],
  ] as const) {
    it(`PROXY_FOREIGN_MINTS ${setting}: 400 cashu_foreign_mint_swap_failed, the token untouched`, async () => {
      const server = await foreignNode(kind, trusted, env);
      try {
        const key = await openAccount(server.url, await trusted.mintToken(10));
        const token = await foreign.mintToken(16);
        const answer = await topup(server.url, key, token);
        expect(answer.status).toBe(400);
        expect(answer.body.error).toMatchObject({ code: 'cashu_foreign_mint_swap_failed', type: 'mint_error' });
        expect(await receiveAtMint(foreign.url, token)).toBe(15);
      } finally {
        await server.close();
      }
    });
  }

  it('PROXY_FOREIGN_MINTS any: a token of any mint is swapped', async () => {
    const server = await foreignNode(kind, trusted, { PROXY_FOREIGN_MINTS: 'any' });
    try {
      const key = await openAccount(server.url, await trusted.mintToken(10));
      const answer = await topup(server.url, key, await foreign.mintToken(32));
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ foreign_mint: foreign.url, msats: 30_000 });
    } finally {
      await server.close();
    }
  });
});

describe.each(databaseKinds)('a pending foreign swap sent again on %s', (kind) => {
  it('is finished at the primary mint alone, the foreign mint down: 200 with the one credit', async () => {
    const { trusted, foreign } = await startMints();
    // No recovery pass after the start: only the token sent again finishes the swap.
    const server = await foreignNode(kind, trusted, {
      PROXY_FOREIGN_MINTS: foreign.url,
      PROXY_RECOVERY_INTERVAL_MS: '3600000',
    });
    try {
      const key = await openAccount(server.url, await trusted.mintToken(10));
      const token = await foreign.mintToken(64);
      await trusted.faults.set({ loseMintResponses: true, noRestore: true });
      const first = await topup(server.url, key, token);
      expect(first.status).toBe(503);
      await trusted.faults.clear();
      await foreign.faults.set({ down: true });
      const again = await topup(server.url, key, token);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ msats: 62_000, foreign_mint: foreign.url, balance: 72_000 });
    } finally {
      await server.close();
      await trusted.close();
      await foreign.close();
    }
  });
});

describe.each(databaseKinds)('crash points of a foreign swap, finished by the recovery, on %s', (kind) => {
  let trusted: DevMint;
  let foreign: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    ({ trusted, foreign } = await startMints());
    server = await foreignNode(kind, trusted, { PROXY_FOREIGN_MINTS: foreign.url });
  });
  afterAll(async () => {
    await server?.close();
    await trusted?.close();
    await foreign?.close();
  });

  /**
   * What the node has written when it dies at `point`: the swap journaled (quotes, outputs, the
   * token's proofs claimed) with its lease run out, and the mints as far as `point` got them.
   */
  async function crashAt(point: 'quoted' | 'melt-sent' | 'minted') {
    const key = await openAccount(server.url, await trusted.mintToken(10));
    const token = await foreign.mintToken(64);
    const journal = new MintJournal(server.db, 2000, trusted.url, quiet);
    const swaps = new ForeignSwaps(server.db, journal, trusted.url, quiet);
    const parsed = await parseToken(token, [trusted.url], (url) => journal.client(url), 1e12, {
      mints: [foreign.url],
      maxMsat: 1e9,
    });
    const plan = await swaps.plan(parsed);
    const account = await accountId(server, key);
    const now = Date.now();
    await server.db.kysely.transaction().execute(async (trx) => {
      const op = await insertMintOp(trx, {
        kind: 'foreign',
        purpose: 'topup',
        state: 'pending',
        mint_url: plan.mintUrl,
        unit: 'sat',
        token_hash: sha256Hex(token),
        request: plan.request,
        credit_account_id: account,
        credit_key_hash: null,
        credit_key_prefix: null,
        credit_msat: plan.creditMsat,
        debit_account_id: null,
        result: null,
        error: null,
        // A crash leaves the lease running; set in the future, so the recovery waits for it.
        lease_until: now + 1500,
        maybe_swapped: point === 'quoted' ? 0 : 1,
        created_at: now,
        updated_at: now,
      });
      await claimOpInputs(trx, op.id, parsed.ys);
    });
    const written = JSON.parse(plan.request);
    if (point !== 'quoted') {
      await meltProofs(new MintClient(foreign.url, 2000), written.meltQuote, written.inputs, []);
    }
    if (point === 'minted') {
      await mintProofs(new MintClient(trusted.url, 2000), written.mintQuote, blindedOf(written));
    }
    return { key, token, creditMsat: plan.creditMsat };
  }

  const points = {
    quoted: 'after the quotes, before the melt',
    'melt-sent': 'after the melt paid, before minting',
    minted: 'after minting, before crediting',
  } as const;
  for (const point of ['quoted', 'melt-sent', 'minted'] as const) {
    it(`crashed ${points[point]}: credited exactly once`, async () => {
      const held = await holdings(server, trusted.url);
      const { key, token, creditMsat } = await crashAt(point);
      expect(creditMsat).toBe(62_000);
      await waitFor('the recovery', async () => (await info(server.url, key)).body.balance === 10_000 + creditMsat);
      const ops = await foreignOps(server);
      expect(ops.at(-1)).toMatchObject({ state: 'done', credit_msat: creditMsat });
      // The bearer token of the account (10 sat) and the swap's 62 sat.
      expect(await holdings(server, trusted.url)).toBe(held + 10 + 62);
      // The token's own request after the restart: the same credit, not a second one.
      const again = await topup(server.url, key, token);
      expect(again.status).toBe(400);
      expect(again.body.error.code).toBe('cashu_token_already_spent');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await info(server.url, key)).body.balance).toBe(10_000 + creditMsat);
    });
  }
});

describe.each(databaseKinds)('an X-Cashu payment with a foreign token on %s', (kind) => {
  let trusted: DevMint;
  let foreign: DevMint;
  let node: Node;

  beforeAll(async () => {
    ({ trusted, foreign } = await startMints());
    node = await startNode(kind, { env: { PROXY_MINTS: trusted.url, PROXY_FOREIGN_MINTS: foreign.url } });
  });
  afterAll(async () => {
    await node?.close();
    await trusted?.close();
    await foreign?.close();
  });

  it('is swapped into the primary mint, and the change comes back as a token of the primary mint', async () => {
    const token = await foreign.mintToken(200);
    const answer = await call(
      node.url,
      'POST',
      '/v1/chat/completions',
      { 'x-cashu': token, 'content-type': 'application/json' },
      JSON.stringify(chatBody({ model: TEST_MODEL })),
    );
    expect(answer.status).toBe(200);
    const change = answer.headers.get('x-cashu');
    expect(change).toMatch(/^cashu/);
    // The change is at the trusted mint, worth less than the 198 sat the swap minted.
    const received = await receiveAtMint(trusted.url, change!);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(197);
    const op = (await foreignOps(node.server)).at(-1)!;
    expect(op).toMatchObject({ state: 'done', credit_msat: 197_000 });
  });
});
