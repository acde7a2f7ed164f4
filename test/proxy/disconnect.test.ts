// Callers who leave before anything of their answer reached them are not billed: their request is
// cancelled upstream, or never sent, and its reservation released; a caller who leaves after the
// first byte still pays for what was delivered (known defect 18). The operator's limit of requests
// in flight queues up to its bounded queue and answers 503 with Retry-After beyond it. The
// upstream holds every answer until the test gives it, so nothing here depends on timing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTokenMetadata } from '@cashu/cashu-ts';
import { loadFullConfig } from '../../src/services.js';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { ConfigError } from '../../src/env.js';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, FREE_PATH, postJson, startNode, testCost, waitUntil, type Node } from './forward-helpers.js';
import {
  type HeldRequest,
  type HoldingUpstream,
  metric,
  sendChat,
  startHoldingUpstream,
  type Usage,
} from './holding.js';

const USAGE: Usage = { prompt_tokens: 12, completion_tokens: 4 };

/**
 * A node in front of a holding upstream of the suite's own, with these variables (and those of
 * `later`, known only once the suite's other parts have started).
 */
function holdingNode(
  kind: Parameters<typeof startNode>[0],
  env: Record<string, string> = {},
  later: () => Record<string, string> = () => ({}),
) {
  const suite = {} as { node: Node; upstream: HoldingUpstream };
  beforeAll(async () => {
    suite.upstream = await startHoldingUpstream();
  });
  afterAll(() => suite.upstream?.close());
  openForSuite(
    () => startNode(kind, { env: { PROXY_UPSTREAM_URL: suite.upstream.url, ...env, ...later() } }),
    (opened) => (suite.node = opened),
  );
  return suite;
}

/** The requests the upstream receives from now on: `next(n)` resolves with the n first of them. */
function arrivals(upstream: HoldingUpstream) {
  const base = upstream.held.length;
  return {
    next: async (count: number) => (await upstream.received(base + count)).slice(base, base + count),
    get count() {
      return upstream.held.length - base;
    },
  };
}

/** The ledger rows written from now on, once none of them is still reserved. */
async function ledgerSince(node: Node, before: number, count: number) {
  let rows: any[] = [];
  await waitUntil(`${count} finished ledger rows`, async () => {
    rows = (await node.ledger()).slice(before);
    return rows.length === count && rows.every((row) => row.status !== 'reserved');
  });
  return rows;
}

describe.each(databaseKinds)('a caller who leaves, on %s', (kind) => {
  const suite = holdingNode(kind);

  for (const stream of [false, true]) {
    it(`is cancelled upstream and not billed if it leaves before the first byte (stream: ${stream})`, async () => {
      const { node, upstream } = suite;
      const key = await node.account(1_000_000);
      const before = (await node.ledger()).length;
      const incoming = arrivals(upstream);
      const caller = sendChat(node, key, { stream });
      const [held] = await incoming.next(1);
      caller.leave();
      expect(await held.closed).toBe(true); // the upstream saw the node abort the request
      const [row] = await ledgerSince(node, before, 1);
      expect(row).toMatchObject({ status: 'released' });
      expect(Number(row.charged_msat)).toBe(0);
      expect(await node.balance(key)).toEqual({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });
    });
  }

  it('is never sent upstream nor billed when it leaves while waiting for a reservation', async () => {
    // The first request holds the whole small balance at the upstream; the second waits for it
    // to settle (docs/proxy-billing.md, "Reservations"), and its caller leaves meanwhile.
    const { node, upstream } = suite;
    const key = await node.account(300);
    const before = (await node.ledger()).length;
    const incoming = arrivals(upstream);
    const first = sendChat(node, key);
    const [held] = await incoming.next(1);
    const second = sendChat(node, key);
    await new Promise((resolve) => setTimeout(resolve, 200)); // let it reach its wait; nothing is asserted on time
    second.leave();
    expect(await second.done()).toBeInstanceOf(Error);
    await new Promise((resolve) => setTimeout(resolve, 100)); // let the node see it leave before the first settles
    held.answerChat(USAGE);
    expect(await first.done()).toMatchObject({ status: 200 });
    await ledgerSince(node, before, 1);
    // Its settlement woke the second, which would have reserved at once: a third request of the
    // account, made after, finds the ledger with the first's row alone before its own.
    const third = sendChat(node, key);
    (await incoming.next(2))[1].answerChat(USAGE);
    expect(await third.done()).toMatchObject({ status: 200 });
    const rows = await ledgerSince(node, before, 2);
    expect(rows.map((row) => row.status)).toEqual(['settled', 'settled']);
    expect(incoming.count).toBe(2);
    const cost = testCost(USAGE);
    expect(await node.balance(key)).toEqual({ balance: 300 - 2 * cost, reserved: 0, spent: 2 * cost, requests: 2 });
  });

  it('still pays for what was delivered when it leaves after the first byte of a stream', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const before = (await node.ledger()).length;
    const incoming = arrivals(upstream);
    const caller = sendChat(node, key, { stream: true });
    const [held] = await incoming.next(1);
    held.startStream();
    await caller.firstByte();
    caller.leave();
    held.endStream(USAGE);
    expect(await held.closed).toBe(false); // read to its end, not cancelled
    const [row] = await ledgerSince(node, before, 1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'upstream', completion_tokens: 4 });
    const cost = testCost(USAGE);
    expect(await node.balance(key)).toEqual({ balance: 1_000_000 - cost, reserved: 0, spent: cost, requests: 1 });
  });

  it('among many at once, the balance falls by exactly the cost of the answers delivered', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const before = (await node.ledger()).length;
    const fates = ['answered', 'left before', 'left after the first byte'] as const;
    const plan = [false, true].flatMap((stream) =>
      fates.flatMap((fate) =>
        [0, 1].map(() => ({ stream, fate: !stream && fate !== 'left before' ? 'answered' : fate })),
      ),
    );
    const incoming = arrivals(upstream);
    const callers = plan.map((step, i) => ({
      ...step,
      usage: usageOf(i),
      caller: sendChat(node, key, { stream: step.stream, user: `caller-${i}` }),
    }));
    // Every one of them is at the upstream at once; each held request is matched to its caller.
    const held = new Map<string, HeldRequest>();
    for (const request of await incoming.next(plan.length)) held.set(request.body.user, request);
    const heldFor = (i: number) => held.get(`caller-${i}`)!;

    for (const [i, step] of callers.entries()) {
      if (step.fate === 'left before') step.caller.leave();
      if (step.fate === 'left after the first byte') heldFor(i).startStream();
    }
    for (const [i, step] of callers.entries()) {
      if (step.fate === 'left before') expect(await heldFor(i).closed).toBe(true);
      if (step.fate !== 'left after the first byte') continue;
      await step.caller.firstByte();
      step.caller.leave();
      heldFor(i).endStream(step.usage);
    }
    for (const [i, step] of callers.entries()) {
      if (step.fate !== 'answered') continue;
      if (step.stream) {
        heldFor(i).startStream();
        heldFor(i).endStream(step.usage);
      } else heldFor(i).answerChat(step.usage);
      expect(await step.caller.done()).toMatchObject({ status: 200 });
    }

    const rows = await ledgerSince(node, before, plan.length);
    const delivered = callers.filter((step) => step.fate !== 'left before');
    expect(rows.filter((row) => row.status === 'settled')).toHaveLength(delivered.length);
    expect(rows.filter((row) => row.status === 'released')).toHaveLength(plan.length - delivered.length);
    const spent = delivered.reduce((sum, step) => sum + testCost(step.usage), 0);
    expect(await node.balance(key)).toEqual({
      balance: 1_000_000 - spent,
      reserved: 0,
      spent,
      requests: delivered.length,
    });
  });
});

/** A different usage per caller, so that a charge for the wrong answer shows in the sum. */
const usageOf = (i: number): Usage => ({ prompt_tokens: 10 + i, completion_tokens: 1 + i });

describe.each(databaseKinds)("the operator's limit of requests in flight, no queue, on %s", (kind) => {
  const suite = holdingNode(kind, { PROXY_UPSTREAM_CONNECTIONS: '3' });

  it('answers the requests beyond it 503 with Retry-After at once, bills them nothing', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const incoming = arrivals(upstream);
    const admitted = [sendChat(node, key), sendChat(node, key, { stream: true }), sendChat(node, key)];
    const held = await incoming.next(3);
    expect(await metric(node, 'quartet_proxy_upstream_in_flight')).toBe(3);

    const other = await node.account(1_000_000);
    const refusedBefore = await metric(node, 'quartet_proxy_upstream_refused_total', 'reason="full"');
    const refused = await Promise.all(
      [{}, { stream: true }].map((extra) =>
        postJson(`${node.url}/v1/chat/completions`, chatBody(extra), { authorization: `Bearer ${other}` }),
      ),
    );
    for (const answer of refused) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.json.error).toMatchObject({ code: 'node_busy', type: expect.any(String) });
      expect(answer.json.error.message).toContain('(3)');
    }
    const free = await fetch(`${node.url}${FREE_PATH}`, { headers: { authorization: `Bearer ${other}` } });
    expect(free.status).toBe(503);
    expect(free.headers.get('retry-after')).toBe('1');
    await free.text();
    expect(await metric(node, 'quartet_proxy_upstream_refused_total', 'reason="full"')).toBe(refusedBefore + 3);
    expect(incoming.count).toBe(3);
    expect(await node.balance(other)).toEqual({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });

    for (const request of held) {
      if (request.body.stream) {
        request.startStream();
        request.endStream(USAGE);
      } else request.answerChat(USAGE);
    }
    for (const caller of admitted) expect(await caller.done()).toMatchObject({ status: 200 });
    await waitUntil(
      'every place given back',
      async () => (await metric(node, 'quartet_proxy_upstream_in_flight')) === 0,
    );
  });

  it('gets each place back whatever becomes of the exchange', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const incoming = arrivals(upstream);
    const placesBack = () =>
      waitUntil('the place given back', async () => (await metric(node, 'quartet_proxy_upstream_in_flight')) === 0);
    const free = (method: string) =>
      fetch(`${node.url}${FREE_PATH}`, { method, headers: { authorization: `Bearer ${key}` } });

    for (const method of ['GET', 'HEAD']) {
      const answer = free(method);
      (await incoming.next(incoming.count + 1)).at(-1)!.answer(200, { id: 'openai/gpt-4o-mini' });
      expect((await answer).status).toBe(200);
      await (await answer).text();
      await placesBack();
    }
    const failed = sendChat(node, key);
    (await incoming.next(incoming.count + 1)).at(-1)!.answer(500, { error: { message: 'upstream broke' } });
    expect(await failed.done()).toMatchObject({ status: 500 });
    await placesBack();
    for (const stream of [false, true]) {
      const left = sendChat(node, key, { stream });
      const held = (await incoming.next(incoming.count + 1)).at(-1)!;
      left.leave();
      expect(await held.closed).toBe(true);
      await placesBack();
    }

    // All three places are free: three go upstream together, a fourth is refused.
    const three = [sendChat(node, key), sendChat(node, key), sendChat(node, key)];
    const held = (await incoming.next(incoming.count + 3)).slice(-3);
    expect((await sendChat(node, key).done()) as { status: number }).toMatchObject({ status: 503 });
    for (const request of held) request.answerChat(USAGE);
    for (const caller of three) expect(await caller.done()).toMatchObject({ status: 200 });
    await placesBack();
  });
});

describe.each(databaseKinds)("the operator's limit with a queue, on %s", (kind) => {
  const suite = holdingNode(kind, { PROXY_UPSTREAM_CONNECTIONS: '1', PROXY_UPSTREAM_QUEUE: '1' });
  const queued = () => metric(suite.node, 'quartet_proxy_upstream_queued');

  it('queues while the queue has room and refuses beyond it; a queued request is sent when a place frees', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const before = (await node.ledger()).length;
    const incoming = arrivals(upstream);
    const first = sendChat(node, key);
    const [firstHeld] = await incoming.next(1);
    const second = sendChat(node, key, { stream: true });
    await waitUntil('the second request queued', async () => (await queued()) === 1);

    const third = await sendChat(node, key).done();
    expect(third).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    expect(JSON.parse((third as { text: string }).text).error).toMatchObject({ code: 'node_busy' });
    expect(incoming.count).toBe(1);

    firstHeld.answerChat(USAGE);
    expect(await first.done()).toMatchObject({ status: 200 });
    const [, secondHeld] = await incoming.next(2);
    expect(await queued()).toBe(0);
    secondHeld.startStream();
    secondHeld.endStream(USAGE);
    expect(await second.done()).toMatchObject({ status: 200 });

    await ledgerSince(node, before, 2);
    const cost = testCost(USAGE);
    expect(await node.balance(key)).toEqual({
      balance: 1_000_000 - 2 * cost,
      reserved: 0,
      spent: 2 * cost,
      requests: 2,
    });
  });

  it('never sends nor bills a queued request whose caller leaves', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const leaver = await node.account(1_000_000);
    const before = (await node.ledger()).length;
    const incoming = arrivals(upstream);
    const first = sendChat(node, key);
    const [held] = await incoming.next(1);
    const waiting = sendChat(node, leaver, { stream: true });
    await waitUntil('the second request queued', async () => (await queued()) === 1);
    waiting.leave();
    await waitUntil('the queue empty', async () => (await queued()) === 0);

    held.answerChat(USAGE);
    expect(await first.done()).toMatchObject({ status: 200 });
    const rows = await ledgerSince(node, before, 2);
    expect(rows.map((row) => row.status).sort()).toEqual(['released', 'settled']);
    expect(incoming.count).toBe(1);
    expect(await node.balance(leaver)).toEqual({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });
  });
});

describe.each(databaseKinds)('a request waiting in the queue too long, on %s', (kind) => {
  const suite = holdingNode(kind, {
    PROXY_UPSTREAM_CONNECTIONS: '1',
    PROXY_UPSTREAM_QUEUE: '5',
    PROXY_UPSTREAM_QUEUE_TIMEOUT_MS: '100',
  });

  it('is answered 503 with Retry-After and billed nothing', async () => {
    const { node, upstream } = suite;
    const key = await node.account(1_000_000);
    const other = await node.account(1_000_000);
    const incoming = arrivals(upstream);
    const first = sendChat(node, key);
    const [held] = await incoming.next(1);
    // The first is held for as long as the test likes: the second cannot but wait its longest.
    const late = await sendChat(node, other).done();
    expect(late).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    const error = JSON.parse((late as { text: string }).text).error;
    expect(error).toMatchObject({ code: 'node_busy' });
    expect(error.message).toContain('100 ms');
    expect(await metric(node, 'quartet_proxy_upstream_refused_total', 'reason="queue_timeout"')).toBe(1);
    expect(await node.balance(other)).toEqual({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });

    held.answerChat(USAGE);
    expect(await first.done()).toMatchObject({ status: 200 });
    expect(incoming.count).toBe(1);
  });
});

describe.each(databaseKinds)('an X-Cashu payer who leaves before the first byte, on %s', (kind) => {
  let mint: DevMint;
  // The mint first: the node is started knowing its address (and closed before it).
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
  });
  afterAll(() => mint?.close());
  const suite = holdingNode(kind, { PROXY_MINT_TIMEOUT_MS: '2000' }, () => ({ PROXY_MINTS: mint.url }));

  it('keeps the whole payment with the token, which pays for the next request', async () => {
    const { node, upstream } = suite;
    const token = await mint.mintToken(100);
    const before = (await node.ledger()).length;
    const incoming = arrivals(upstream);
    const caller = sendChat(node, { xCashu: token });
    const [held] = await incoming.next(1);
    caller.leave();
    expect(await held.closed).toBe(true);
    const [row] = await ledgerSince(node, before, 1);
    expect(row).toMatchObject({ status: 'released', payment: 'x-cashu' });

    // No change token went to nobody: the same token still holds all of it.
    const again = sendChat(node, { xCashu: token });
    void incoming.next(2).then(([, next]) => next.answerChat(USAGE)); // a 402 never gets there
    const answer = (await again.done()) as { status: number; headers: Record<string, string>; text: string };
    expect(answer.status).toBe(200);
    const charged = Number(answer.headers['x-cashu-cost-msat']);
    expect(charged).toBe(Math.ceil(testCost(USAGE) / 1000) * 1000);
    expect(Number(getTokenMetadata(answer.headers['x-cashu']).amount) * 1000 + charged).toBe(100_000);
  });
});

describe('the queue variables', () => {
  it('refuse a queue without a limit to queue behind', () => {
    expect(() => loadFullConfig({ PROXY_UPSTREAM_QUEUE: '10' })).toThrow(ConfigError);
    expect(() => loadFullConfig({ PROXY_UPSTREAM_QUEUE: '10' })).toThrow(/PROXY_UPSTREAM_CONNECTIONS/);
    const forward = loadFullConfig({ PROXY_UPSTREAM_CONNECTIONS: '8', PROXY_UPSTREAM_QUEUE: '10' }).proxy.forward;
    expect(forward).toMatchObject({ upstreamConnections: 8, upstreamQueue: 10, upstreamQueueTimeoutMs: 10_000 });
    expect(loadFullConfig({}).proxy.forward).toMatchObject({ upstreamConnections: 0, upstreamQueue: 0 });
  });
});
