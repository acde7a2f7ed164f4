// Callers who leave before their answer began are not billed and their upstream request is
// cancelled or never sent; the operator's limit of requests in flight answers 503 at once; and
// without a limit, hundreds of live streams reach the upstream together (known defect 18).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, FREE_PATH, postJson, startNode, testCost, waitUntil, type Node } from './forward-helpers.js';

/**
 * A chat completion on a connection of its own, which `leave()` closes as a caller who gives up
 * does (fetch's abort may keep the connection and read on); `done()` reads the answer whole and
 * resolves with it, or with the error of a connection that was closed.
 */
function send(node: Node, key: string, body: Record<string, unknown>) {
  const payload = Buffer.from(JSON.stringify(chatBody(body)));
  const request = httpRequest(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': payload.length },
    agent: false,
  });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    request.on('response', resolve).on('error', reject);
  });
  response.catch(() => {}); // a test that leaves may never look at it
  request.end(payload);
  const done = () =>
    response
      .then(async (answer) => {
        const chunks: Buffer[] = [];
        for await (const chunk of answer) chunks.push(chunk as Buffer);
        return { status: answer.statusCode, text: Buffer.concat(chunks).toString('utf8') };
      })
      .catch((error: Error) => error);
  /** Resolves once the first bytes of the answer's body have arrived (and leaves them to `done()`). */
  const firstByte = () =>
    response.then(
      (answer) =>
        new Promise<void>((resolve) =>
          answer.once('data', (chunk: Buffer) => {
            answer.pause();
            answer.unshift(chunk);
            resolve();
          }),
        ),
    );
  return { done, firstByte, leave: () => request.destroy() };
}

describe.each(databaseKinds)('a caller who leaves, on %s', (kind) => {
  let node: Node;
  openForSuite(
    () => startNode(kind),
    (opened) => (node = opened),
  );
  beforeEach(() => {
    node.upstream.resetFaults();
    node.upstream.resetStats();
  });

  it('is never sent upstream nor billed when it leaves while its request waits for a reservation', async () => {
    // The first request holds the whole small balance while the upstream thinks; the second
    // waits for it to settle (docs/proxy-billing.md), and its caller leaves meanwhile.
    node.upstream.faults.delayMs = 800;
    const key = await node.account(300);
    const first = send(node, key, {});
    await waitUntil('the first request upstream', async () => node.upstream.stats.received === 1);
    const second = send(node, key, {});
    await new Promise((resolve) => setTimeout(resolve, 300));
    second.leave();
    expect(await second.done()).toBeInstanceOf(Error);
    const answer = await first.done();
    expect(answer).toMatchObject({ status: 200 });
    await waitUntil('both requests finished', async () => {
      const rows = await node.ledger();
      return rows.length === 2 && rows.every((row) => row.status !== 'reserved');
    });
    const [settled, released] = await node.ledger();
    expect(settled.status).toBe('settled');
    expect(released).toMatchObject({ status: 'released' });
    expect(Number(released.charged_msat)).toBe(0);
    expect(node.upstream.stats.received).toBe(1);
    const usage = JSON.parse((answer as { text: string }).text).usage;
    expect(await node.balance(key)).toMatchObject({ balance: 300 - testCost(usage), reserved: 0, requests: 1 });
  });

  for (const stream of [false, true]) {
    it(`is cancelled upstream and not billed if it leaves before the first byte (stream: ${stream})`, async () => {
      node.upstream.faults.delayMs = 3000;
      const key = await node.account(1_000_000);
      const request = send(node, key, { stream });
      await waitUntil('the request upstream', async () => node.upstream.stats.received === 1);
      request.leave();
      // The upstream sees its connection close before it answered: the node aborted the request.
      await waitUntil('the upstream request aborted', async () => node.upstream.stats.closedEarly === 1, 2500);
      await waitUntil('the reservation released', async () => (await node.ledger()).at(-1).status !== 'reserved');
      expect((await node.ledger()).at(-1)).toMatchObject({ status: 'released' });
      expect(await node.balance(key)).toMatchObject({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });
    });
  }

  it('still pays for what was delivered when it leaves after the first byte of a stream', async () => {
    node.upstream.faults.chunkDelayMs = 60;
    node.upstream.faults.completionTokens = 10;
    const key = await node.account(1_000_000);
    const request = send(node, key, { stream: true });
    await request.firstByte();
    request.leave();
    await waitUntil('the settlement', async () => (await node.ledger()).at(-1).status !== 'reserved', 5000);
    const row = (await node.ledger()).at(-1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'upstream', completion_tokens: 10 });
    expect(node.upstream.stats.closedEarly).toBe(0); // read to its end, not cancelled
    const cost = testCost({ prompt_tokens: row.prompt_tokens, completion_tokens: 10 });
    expect(await node.balance(key)).toMatchObject({ balance: 1_000_000 - cost, reserved: 0, requests: 1 });
  });
});

describe.each(databaseKinds)("the operator's limit of requests in flight, on %s", (kind) => {
  let node: Node;
  openForSuite(
    () => startNode(kind, { env: { PROXY_UPSTREAM_CONNECTIONS: '2' } }),
    (opened) => (node = opened),
  );

  it('answers 503 with Retry-After at once beyond the limit, bills nothing, and frees each slot', async () => {
    node.upstream.faults.delayMs = 1500;
    const key = await node.account(1_000_000);
    const held = [send(node, key, {}), send(node, key, { stream: true })];
    await waitUntil('two requests upstream', async () => node.upstream.stats.open === 2);

    const other = await node.account(1_000_000);
    const refused = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${other}` });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json.error).toMatchObject({ code: 'node_busy', type: expect.any(String) });
    expect(refused.json.error.message).toContain('(2)');
    const models = (method = 'GET') =>
      fetch(`${node.url}${FREE_PATH}`, { method, headers: { authorization: `Bearer ${other}` } });
    const free = await models();
    expect(free.status).toBe(503);
    await free.text();
    expect(node.upstream.stats.received).toBe(2);
    expect(await node.balance(other)).toMatchObject({ balance: 1_000_000, reserved: 0, requests: 0 });

    for (const request of held) expect(await request.done()).toMatchObject({ status: 200 });
    // Every kind of exchange gives its slot back when it is over.
    node.upstream.resetFaults();
    expect((await models()).status).toBe(200);
    expect((await models('HEAD')).status).toBe(200);
    node.upstream.faults.status = 500;
    expect(await send(node, other, {}).done()).toMatchObject({ status: 500 });
    node.upstream.resetFaults();
    expect(await send(node, other, { stream: true }).done()).toMatchObject({ status: 200 });
    node.upstream.faults.delayMs = 3000;
    const left = send(node, other, {});
    await waitUntil('the request upstream', async () => node.upstream.stats.open === 1);
    left.leave();
    await waitUntil('the upstream request aborted', async () => node.upstream.stats.open === 0);
    node.upstream.resetFaults();
    const again = await Promise.all([send(node, other, {}).done(), send(node, other, { stream: true }).done()]);
    expect(again).toMatchObject([{ status: 200 }, { status: 200 }]);
  });
});

describe('without a limit', () => {
  it('carries 300 live streams to the upstream at once', async () => {
    const node = await startNode('sqlite');
    try {
      // Each stream lasts about 5 s: the upstream sends one event every 600 ms.
      node.upstream.faults.chunkDelayMs = 600;
      node.upstream.faults.completionTokens = 5;
      const key = await node.account(1_000_000_000);
      const started = Date.now();
      const firstBytes = await Promise.all(
        Array.from({ length: 300 }, async () => {
          const request = send(node, key, { stream: true });
          await request.firstByte();
          const at = Date.now() - started;
          expect(await request.done()).toMatchObject({ status: 200 });
          return at;
        }),
      );
      expect(node.upstream.stats.maxOpen).toBe(300);
      // A generous bound: with a fixed pool the last ones waited for whole streams to end.
      expect(Math.max(...firstBytes)).toBeLessThan(10_000);
      await waitUntil('every settlement', async () => (await node.ledger()).every((row) => row.status === 'settled'));
    } finally {
      await node.close();
    }
  }, 60_000);
});
