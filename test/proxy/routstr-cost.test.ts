// The cost as Routstr's clients read it (docs/proxy-billing.md#cost-in-answers): X-Routstr-* cost
// headers and x-routstr-request-id beside quartet's own, and `usage.cost` in JSON answers and in a
// stream's usage chunk, with the X-Cashu change and the stream's framing as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, testCost, type Node } from './forward-helpers.js';

// At PROXY_BTC_USD=100000 (forward-helpers.ts), 1 USD is 1,000,000 msat.
const usdOf = (msat: number) => msat / 1_000_000;

describe.each(databaseKinds)('Routstr cost fields on %s', (kind) => {
  let node: Node;
  let mint: DevMint;
  let key: string;
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode(kind, { env: { PROXY_MINTS: mint.url, PROXY_MINT_TIMEOUT_MS: '2000' } });
    key = await node.account(10_000_000);
  });

  const chat = (body: Record<string, unknown>, headers: Record<string, string>) =>
    postJson(`${node.url}/v1/chat/completions`, chatBody(body), headers);

  it('sends the cost headers and usage.cost on a JSON answer, beside quartet’s own', async () => {
    const answer = await chat({}, { authorization: `Bearer ${key}` });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('application/json');
    const json = answer.json;
    const total = testCost(json.usage);
    expect(total).toBeGreaterThan(0);
    const h = (name: string) => answer.headers.get(name);
    expect(Number(h('x-routstr-cost-msats'))).toBe(total);
    expect(Number(h('x-routstr-input-cost-msats')) + Number(h('x-routstr-output-cost-msats'))).toBeLessThanOrEqual(
      total,
    );
    expect(h('x-routstr-input-cost-msats')).toBe(h('x-cost-input-msat'));
    expect(h('x-routstr-output-cost-msats')).toBe(h('x-cost-output-msat'));
    expect(Number(h('x-routstr-cost-usd'))).toBeCloseTo(usdOf(total), 9);
    expect(h('x-routstr-request-id')).toBeTruthy();
    expect(Number(h('x-cashu-cost-msat'))).toBe(total);

    expect(json.usage.cost).toEqual({
      total_msats: total,
      input_msats: Number(h('x-routstr-input-cost-msats')),
      output_msats: Number(h('x-routstr-output-cost-msats')),
      total_usd: usdOf(total),
      total_msat: total,
      input_msat: Number(h('x-cost-input-msat')),
      output_msat: Number(h('x-cost-output-msat')),
      request_msat: Number(h('x-cost-request-msat')),
    });
    expect(json.cost).toEqual(json.usage.cost);
    expect(json.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('gives each request its own x-routstr-request-id', async () => {
    const ids = new Set<string | null>();
    for (let i = 0; i < 2; i++) {
      ids.add((await chat({}, { authorization: `Bearer ${key}` })).headers.get('x-routstr-request-id'));
    }
    expect(ids.size).toBe(2);
  });

  it('streams without the cost headers (not known yet) and puts usage.cost in the usage chunk', async () => {
    const answer = await chat({ stream: true }, { authorization: `Bearer ${key}` });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/event-stream');
    expect(answer.headers.get('x-routstr-request-id')).toBeTruthy();
    expect(answer.headers.get('x-routstr-cost-msats')).toBeNull();
    const events = answer.text.split('\n\n').filter((e) => e.trim());
    expect(events.at(-1)).toBe('data: [DONE]');
    const usageChunk = JSON.parse(events.at(-2)!.slice(6));
    const total = testCost(usageChunk.usage);
    expect(usageChunk.usage.cost).toMatchObject({ total_msats: total, total_usd: usdOf(total), total_msat: total });
    expect(usageChunk.cost).toEqual(usageChunk.usage.cost);
    for (const e of events.slice(0, -2)) expect(JSON.parse(e.slice(6)).usage?.cost).toBeUndefined();
  });

  it('keeps the X-Cashu change header with the Routstr cost headers', async () => {
    const answer = await chat({}, { 'x-cashu': await mint.mintToken(100) });
    expect(answer.status).toBe(200);
    const json = answer.json;
    const charged = Number(answer.headers.get('x-routstr-cost-msats'));
    expect(charged).toBe(json.usage.cost.total_msats);
    expect(charged % 1000).toBe(0); // X-Cashu charges round up to whole sats
    expect(answer.headers.get('x-cashu')).toBeTruthy();
  });
});
