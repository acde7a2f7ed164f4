// Without an operator's limit the node has no fixed pool to queue live streams behind: 300
// streams are all at the upstream at once (known defect 18: a pool of 256 held the rest back), and
// each is billed exactly. The upstream holds every answer until all 300 have arrived, so a cap
// below 300 shows as this test never getting there, whatever the machine's speed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, testCost, waitUntil, type Node } from './forward-helpers.js';
import { type HoldingUpstream, metric, sendChat, startHoldingUpstream } from './holding.js';

const STREAMS = 300;
const USAGE = { prompt_tokens: 12, completion_tokens: 4 };

describe('without a limit', () => {
  let upstream: HoldingUpstream;
  let node: Node;
  beforeAll(async () => {
    upstream = await startHoldingUpstream();
    node = await startNode('sqlite', { env: { PROXY_UPSTREAM_URL: upstream.url } });
  });
  afterAll(async () => {
    // The upstream first: a failed run leaves streams held, which the node's close would wait for.
    await upstream?.close();
    await node?.close();
  });

  it(`carries ${STREAMS} live streams to the upstream at once, each billed exactly`, async () => {
    const key = await node.account(1_000_000_000);
    const callers = Array.from({ length: STREAMS }, () => sendChat(node, key, { stream: true }));
    const held = await upstream.received(STREAMS);
    expect(upstream.open).toBe(STREAMS);
    expect(await metric(node, 'quartet_proxy_upstream_in_flight')).toBe(STREAMS);
    expect(await metric(node, 'quartet_proxy_upstream_queued')).toBe(0);

    for (const request of held) request.startStream();
    for (const caller of callers) await caller.firstByte();
    for (const request of held) request.endStream(USAGE);
    for (const caller of callers) {
      const answer = await caller.done();
      expect(answer).toMatchObject({ status: 200 });
      expect((answer as { text: string }).text).toContain('data: [DONE]');
    }
    await waitUntil('every settlement', async () => {
      const rows = await node.ledger();
      return rows.length === STREAMS && rows.every((row) => row.status === 'settled');
    });
    const spent = STREAMS * testCost(USAGE);
    expect(await node.balance(key)).toEqual({ balance: 1_000_000_000 - spent, reserved: 0, spent, requests: STREAMS });
  }, 120_000);
});
