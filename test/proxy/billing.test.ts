// Billing over HTTP: exact charges from usage, reservations released on failures, small
// balances, never negative, and concurrency in one process and in two processes sharing
// PostgreSQL. Callers who disconnect: disconnect.test.ts.
import { beforeEach, describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { createTestDatabase, databaseKinds, postgresAvailable } from '../support/databases.js';
import { startFakeUpstream } from '../../src/fakeupstream/index.js';
import { Billing } from '../../src/proxy/billing/billing.js';
import { chatBody, postJson, startNode, testCost, waitUntil, type Node } from './forward-helpers.js';

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

describe.each(databaseKinds)('billing on %s', (kind) => {
  let node: Node;
  openForSuite(
    () => startNode(kind, { env: { PROXY_UPSTREAM_TIMEOUT_MS: '1000' } }),
    (opened) => (node = opened),
  );
  beforeEach(() => node.upstream.resetFaults());

  it('charges exactly the usage at the model price, request after request', async () => {
    const key = await node.account(5_000_000);
    let expected = 0;
    for (const [content, max] of [
      ['short', undefined],
      ['a somewhat longer question about nodes', 3],
      ['ünïcödé ✓ text', 50],
    ] as const) {
      const answer = await postJson(
        `${node.url}/v1/chat/completions`,
        chatBody({ messages: [{ role: 'user', content }], max_tokens: max }),
        auth(key),
      );
      expect(answer.status).toBe(200);
      const cost = testCost(answer.json.usage);
      expect(Number(answer.headers.get('x-cashu-cost-msat'))).toBe(cost);
      expected += cost;
    }
    const account = await node.balance(key);
    expect(account).toMatchObject({ balance: 5_000_000 - expected, reserved: 0, spent: expected, requests: 3 });
    const ledger = (await node.ledger()).filter((row) => row.status === 'settled').slice(-3);
    expect(ledger.reduce((sum, row) => sum + Number(row.charged_msat), 0)).toBe(expected);
    for (const row of ledger) expect(Number(row.charged_msat)).toBeLessThanOrEqual(Number(row.reserved_msat));
  });

  it('lowers max_tokens so a small balance affords a small request, and refuses one it cannot afford', async () => {
    // Prompt bound = body bytes (~90 msat at 1 msat/token) + 10 msat per request:
    // 200 msat affords ~50 output tokens, not 4096.
    const key = await node.account(200);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(key));
    expect(answer.status).toBe(200);
    const forwarded = node.upstream.requests.at(-1)!.body as any;
    expect(forwarded.max_tokens).toBeGreaterThanOrEqual(16);
    expect(forwarded.max_tokens).toBeLessThan(100);
    const cost = testCost(answer.json.usage);
    expect(await node.balance(key)).toMatchObject({ balance: 200 - cost, reserved: 0 });

    const poor = await node.account(50);
    const count = node.upstream.requests.length;
    const refused = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(poor));
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({
      type: 'insufficient_quota',
      code: 'insufficient_balance',
      available_msat: 50,
    });
    expect(refused.json.error.minimum_msat).toBeGreaterThan(50);
    expect(node.upstream.requests.length).toBe(count);
    expect(await node.balance(poor)).toMatchObject({ balance: 50, reserved: 0 });
  });

  it('charges nothing and releases the reservation when the upstream answers 500 or 429', async () => {
    const key = await node.account(100_000);
    for (const status of [500, 429]) {
      node.upstream.faults.status = status;
      const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(key));
      expect(answer.status).toBe(status);
      expect(answer.json.error.message).toContain(String(status));
      expect(answer.headers.get('x-cashu-cost-msat')).toBe('0');
    }
    expect(await node.balance(key)).toEqual({ balance: 100_000, reserved: 0, spent: 0, requests: 0 });
    const rows = (await node.ledger()).slice(-2);
    expect(rows.map((row) => [row.status, row.upstream_status])).toEqual([
      ['released', 500],
      ['released', 429],
    ]);
  });

  it('charges nothing when the upstream’s JSON answer breaks off half way (502)', async () => {
    const key = await node.account(100_000);
    node.upstream.faults.cutJsonAnswer = true;
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(key));
    expect(answer.status).toBe(502);
    expect(await node.balance(key)).toEqual({ balance: 100_000, reserved: 0, spent: 0, requests: 0 });
    expect((await node.ledger()).at(-1).status).toBe('released');
  });

  it('releases the reservation on a timeout (504)', async () => {
    const key = await node.account(100_000);
    // undici checks timeouts of a second or more on a coarse clock (up to a second late): the
    // upstream answers well after that, or a loaded machine sees the answer first.
    node.upstream.faults.delayMs = 3500;
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(key));
    expect(answer.status).toBe(504);
    expect(await node.balance(key)).toEqual({ balance: 100_000, reserved: 0, spent: 0, requests: 0 });
  });

  it('serves 200 concurrent requests at most what the balance covers, charging exactly what it spends', async () => {
    const probe = await node.account(1_000_000);
    const one = await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(probe));
    const cost = testCost(one.json.usage);
    const start = 10 * cost;
    const key = await node.account(start);
    node.upstream.faults.delayMs = 20;
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(key))),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    const served = answers.filter((a) => a.status === 200);
    // The reservation bound (body bytes) is above the real cost, so the last few may not fit.
    expect(served.length).toBeGreaterThanOrEqual(5);
    expect(served.length).toBeLessThanOrEqual(10);
    const charged = served.reduce((sum, a) => sum + Number(a.headers.get('x-cashu-cost-msat')), 0);
    const account = await node.balance(key);
    expect(account.reserved).toBe(0);
    expect(account.balance).toBeGreaterThanOrEqual(0);
    expect(start - account.balance).toBe(charged);
    expect(account.spent).toBe(charged);
    expect(account.requests).toBe(served.length);
  });

  it('counts billed requests and charges on /metrics', async () => {
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    expect(metrics).toMatch(/quartet_proxy_billed_requests_total\{outcome="settled"\} \d+/);
    expect(metrics).toMatch(/quartet_proxy_billed_requests_total\{outcome="released"\} \d+/);
    expect(metrics).toMatch(/quartet_proxy_charged_msat_total \d+/);
  });
});

describe('reservations of a stopped process', () => {
  it('are released by the sweep once their heartbeat is stale, and live ones are not', async () => {
    const node = await startNode('sqlite', { env: { PROXY_STALE_RESERVATION_SECONDS: '5' } });
    try {
      const key = await node.account(10_000);
      const db = node.server.db.kysely;
      const account = await db.selectFrom('proxy_accounts').select('id').executeTakeFirstOrThrow();
      // A long stream served right now keeps its reservation (the sweep runs every 2.5 s here).
      node.upstream.faults.chunkDelayMs = 1000;
      const stream = fetch(`${node.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth(key) },
        body: JSON.stringify(chatBody({ stream: true })),
      }).then((r) => r.text());
      // Once it holds its reservation (on a busy machine that can take longer than a sweep's
      // interval), a reservation left by a process that died an hour ago appears beside it: the
      // sweep that expires the dead one sees the live one too.
      await waitUntil(
        'the stream reserved',
        async () => (await node.ledger()).some((row) => row.status === 'reserved'),
        60_000,
      );
      await db
        .updateTable('proxy_accounts')
        .set((eb) => ({ reserved_msat: eb('reserved_msat', '+', 3000) }))
        .where('id', '=', account.id)
        .execute();
      const old = Date.now() - 3_600_000;
      await db
        .insertInto('proxy_requests')
        .values({
          account_id: account.id,
          request_id: 'dead',
          path: '/v1/chat/completions',
          model: 'test/model',
          stream: 1,
          payment: 'key',
          status: 'reserved',
          reserved_msat: 3000,
          created_at: old,
          heartbeat_at: old,
        })
        .execute();
      await waitUntil(
        'the sweep',
        async () => (await node.ledger()).some((row) => row.request_id === 'dead' && row.status === 'expired'),
        30_000,
      );
      const live = (await node.ledger()).find((row) => row.request_id !== 'dead')!;
      expect(live.status).toBe('reserved');
      expect((await node.balance(key)).reserved).toBe(Number(live.reserved_msat));
      await stream;
      expect(await node.balance(key)).toMatchObject({ reserved: 0 });
      expect((await node.ledger()).find((row) => row.request_id !== 'dead')!.status).toBe('settled');
    } finally {
      await node.close();
    }
  }, 120_000);
});

describe.skipIf(!postgresAvailable)('billing with two processes on one PostgreSQL', () => {
  type Answer = Awaited<ReturnType<typeof postJson>>;

  /** Two nodes on one fresh database and one upstream; `cost` is what one test request costs. */
  async function withTwoNodes(
    run: (nodes: {
      a: Node;
      b: Node;
      upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
      cost: number;
    }) => Promise<void>,
  ) {
    const database = await createTestDatabase('postgres');
    const upstream = await startFakeUpstream({ apiKey: 'operator-key' });
    const a = await startNode('postgres', { database, upstream });
    const b = await startNode('postgres', { database, upstream });
    try {
      const probe = await a.account(1_000_000);
      const cost = testCost((await postJson(`${a.url}/v1/chat/completions`, chatBody(), auth(probe))).json.usage);
      await run({ a, b, upstream, cost });
    } finally {
      await a.close();
      await b.close();
      await upstream.close();
      await database.drop();
    }
  }

  /** A key's answers: at most `most` served, and its account charged exactly what they cost. */
  async function expectExact(node: Node, key: string, start: number, answers: Answer[], most: number) {
    expect(answers.every((x) => x.status === 200 || x.status === 402)).toBe(true);
    const served = answers.filter((x) => x.status === 200);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(most);
    const charged = served.reduce((sum, x) => sum + Number(x.headers.get('x-cashu-cost-msat')), 0);
    const account = await node.balance(key);
    expect(account).toMatchObject({ reserved: 0, spent: charged, requests: served.length });
    expect(start - account.balance).toBe(charged);
    return served.length;
  }

  it(
    'never lets the two spend the same millisatoshi',
    () =>
      withTwoNodes(async ({ a, b, upstream, cost }) => {
        const start = 10 * cost;
        const key = await a.account(start);
        upstream.faults.delayMs = 20;
        const answers = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            postJson(`${(i % 2 ? a : b).url}/v1/chat/completions`, chatBody(), auth(key)),
          ),
        );
        const served = await expectExact(b, key, start, answers, 10);
        // Which process wins each race is the scheduler's choice (one may win all ten); what must
        // hold is above: both answered from one balance, and no msat was spent twice.
        const ledger = await a.ledger();
        expect(ledger.filter((row) => row.status === 'settled').length).toBe(served + 1);
      }),
    60_000,
  );

  it(
    'keeps every account of many exact when both serve them at once',
    () =>
      withTwoNodes(async ({ a, b, upstream, cost }) => {
        const start = 4 * cost;
        const keys = await Promise.all(Array.from({ length: 6 }, () => a.account(start)));
        upstream.faults.delayMs = 10;
        // Shared transactions of both processes take these accounts' rows in many combinations.
        const answers = await Promise.all(
          Array.from({ length: 240 }, (_, i) =>
            postJson(`${(i % 2 ? a : b).url}/v1/chat/completions`, chatBody(), auth(keys[i % keys.length])),
          ),
        );
        for (const [k, key] of keys.entries()) {
          await expectExact(
            b,
            key,
            start,
            answers.filter((_, i) => i % keys.length === k),
            4,
          );
        }
      }),
    60_000,
  );
});

describe.each(databaseKinds)('group commit on %s', (kind) => {
  /** A Billing of its own on a fresh node's database, with accounts of these balances (ids in order). */
  async function withBilling(
    balances: number[],
    run: (billing: Billing, db: Node['server']['db'], accountIds: number[]) => Promise<void>,
  ) {
    const node = await startNode(kind);
    try {
      const db = node.server.db;
      const billing = new Billing(db, node.server.config.proxy.forward, { warn() {}, error() {} });
      for (const balance of balances) await node.account(balance);
      const accountIds = (await db.kysely.selectFrom('proxy_accounts').select('id').orderBy('id').execute()).map(
        (row) => Number(row.id),
      );
      await run(billing, db, accountIds);
      await billing.close();
    } finally {
      await node.close();
    }
  }
  const request = (accountId: number, amountMsat: number, requestId = 'r') => ({
    accountId,
    amountFor: () => amountMsat,
    requestId,
    path: '/v1/chat/completions',
    model: 'test/model',
    stream: false,
    payment: 'key' as const,
  });
  /** A settlement of `totalMsat`, 40% input and 60% output. */
  const settlementOf = (totalMsat: number) => ({
    cost: {
      inputMsat: Math.round(totalMsat * 0.4),
      outputMsat: totalMsat - Math.round(totalMsat * 0.4),
      requestMsat: 0,
      totalMsat,
    },
    usage: { promptTokens: 4, completionTokens: 6 },
    usageSource: 'upstream' as const,
    upstreamStatus: 200,
  });

  it('settles, releases and reserves arriving together on several accounts as if one after another', () =>
    withBilling([10_000, 10_000], async (billing, db, [a, b]) => {
      const first = (await billing.reserve(request(a, 6000, 'first'))).reservation!;
      const toRelease = (await billing.reserve(request(b, 1000, 'released'))).reservation!;
      // All queued in one tick: the settle and the release come first and free what they held,
      // then the holds are taken in order from what each account has left.
      const [charged, , ...held] = await Promise.all([
        billing.settle(first, settlementOf(1000)),
        billing.release(toRelease, 'test'),
        billing.reserve(request(a, 5000, 'a1')),
        billing.reserve(request(a, 5000, 'a2')),
        billing.reserve(request(a, 1000, 'a3')),
        billing.reserve(request(b, 4000, 'b1')),
        billing.reserve(request(b, 7000, 'b2')),
      ]);
      expect(charged).toBe(1000);
      expect(held.map((r) => (r.reservation ? r.reservation.reservedMsat : null))).toEqual([
        5000,
        null,
        1000,
        4000,
        null,
      ]);
      // A refusal says what was available: a2 came after a1 took 5000 of 9000; b2 after b1 took 4000 of 10,000.
      expect(held.map((r) => r.availableMsat)).toEqual([9000, 4000, 4000, 10_000, 6000]);
      const ledger = await db.kysely
        .selectFrom('proxy_requests')
        .select(['id', 'request_id', 'account_id', 'reserved_msat', 'status', 'charged_msat'])
        .orderBy('id')
        .execute();
      const byId = new Map(ledger.map((row) => [Number(row.id), row]));
      for (const [i, name] of ['a1', 'a2', 'a3', 'b1', 'b2'].entries()) {
        const reservation = held[i].reservation;
        if (!reservation) continue;
        expect(byId.get(reservation.id)).toMatchObject({
          request_id: name,
          account_id: reservation.accountId,
          reserved_msat: reservation.reservedMsat,
          status: 'reserved',
        });
      }
      expect(byId.get(first.id)).toMatchObject({ status: 'settled', charged_msat: 1000 });
      expect(byId.get(toRelease.id)).toMatchObject({ status: 'released', charged_msat: 0 });
      const accounts = await db.kysely
        .selectFrom('proxy_accounts')
        .select(['balance_msat', 'reserved_msat', 'total_spent_msat', 'total_requests'])
        .orderBy('id')
        .execute();
      expect(accounts.map((row) => Object.values(row).map(Number))).toEqual([
        [9000, 6000, 1000, 1],
        [10_000, 4000, 0, 0],
      ]);
    }));

  it("tells a refused request when the account's reservation it waits for is settled", () =>
    withBilling([3000], async (billing, _db, [accountId]) => {
      expect(await billing.freed(accountId, 1000)).toBe(false); // nothing of it in flight: no wait
      const first = (await billing.reserve(request(accountId, 2500))).reservation!;
      expect(await billing.reserve(request(accountId, 2000))).toEqual({
        reservation: null,
        availableMsat: 500,
        limitMsat: null,
        refusal: null,
      });
      const waited = billing.freed(accountId, 5000);
      await billing.settle(first, settlementOf(100));
      expect(await waited).toBe(true);
      expect((await billing.reserve(request(accountId, 2000))).reservation).toMatchObject({
        accountId,
        reservedMsat: 2000,
      });
      expect(await billing.freed(accountId, 50)).toBe(false); // the hold is live, but nothing finishes in 50 ms
    }));

  it('keeps the other writes of a shared transaction when one of them fails', () =>
    withBilling([10_000, 10_000], async (billing, db, [a, b]) => {
      const ra = (await billing.reserve(request(a, 1000))).reservation!;
      const rb = (await billing.reserve(request(b, 1000))).reservation!;
      // Break account a behind the billing's back: settling it now violates 0 <= reserved.
      await db.kysely.updateTable('proxy_accounts').set({ reserved_msat: 0 }).where('id', '=', a).execute();
      const [first, second] = await Promise.allSettled([
        billing.settle(ra, settlementOf(300)),
        billing.settle(rb, settlementOf(300)),
      ]);
      expect(first.status).toBe('rejected');
      expect(second).toEqual({ status: 'fulfilled', value: 300 });
      const rows = await db.kysely
        .selectFrom('proxy_accounts')
        .select(['id', 'balance_msat', 'reserved_msat'])
        .orderBy('id')
        .execute();
      expect(rows.map((r) => [Number(r.balance_msat), Number(r.reserved_msat)])).toEqual([
        [10_000, 0],
        [9_700, 0],
      ]);
    }));
});
