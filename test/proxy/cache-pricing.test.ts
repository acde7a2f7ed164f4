// Cached input billed at the model's cache prices (Routstr's `input_cache_read`/`input_cache_write`)
// where the upstream reports it: OpenAI's cached_tokens (chat, streams, the Responses API) and
// Anthropic's cache reads and writes; on SQLite and PostgreSQL.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from '../../src/fakeupstream/index.js';
import { costOf, parseDecimal } from '../../src/proxy/billing/pricing.js';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { chatBody, type Node, postJson, startNode } from './forward-helpers.js';

const MODEL = 'cached/model';
/**
 * At PROXY_BTC_USD=100000 (1 USD = 1,000,000 msat): input 1 msat a token, output 2, a cache read
 * 0.1, a cache write 1.25, no request fee.
 */
const CACHED_MODEL = {
  id: MODEL,
  context_length: 32000,
  pricing: {
    prompt: '0.000001',
    completion: '0.000002',
    input_cache_read: '0.0000001',
    input_cache_write: '0.00000125',
  },
};

describe('costOf with cached input', () => {
  const price = {
    prompt: parseDecimal('1')!,
    completion: parseDecimal('2')!,
    request: parseDecimal('0')!,
    cacheRead: parseDecimal('0.1')!,
    cacheWrite: parseDecimal('1.25')!,
  };

  it('prices the cached parts at their prices and rounds the input up once, not each part', () => {
    // 3 plain + 5 reads (0.5) + 2 writes (2.5) = 6 msat exactly; rounding each part would give 7.
    expect(costOf(price, 10, 0, { read: 5, write: 2 }).inputMsat).toBe(6);
    expect(costOf(price, 10, 0, { read: 3 }).inputMsat).toBe(8); // 7 + 0.3, rounded up
  });

  it('never counts more cached tokens than the prompt has', () => {
    expect(costOf(price, 10, 0, { read: 50 }).inputMsat).toBe(1);
    expect(costOf(price, 10, 0, { read: 4, write: 50 }).inputMsat).toBe(8); // 0.4 + 6 × 1.25
  });

  it('prices cached input as input for a model without cache prices', () => {
    const plain = { prompt: price.prompt, completion: price.completion, request: price.request };
    expect(costOf(plain, 10, 1, { read: 5, write: 2 })).toEqual(costOf(plain, 10, 1));
  });
});

describe.each(databaseKinds)('cached input on %s', (kind) => {
  let upstream: FakeUpstream;
  let node: Node;
  let key: string;
  beforeAll(async () => {
    upstream = await startFakeUpstream({ apiKey: 'operator-key' });
    const file = join(mkdtempSync(join(tmpdir(), 'quartet-cache-')), 'providers.json');
    writeFileSync(
      file,
      JSON.stringify({
        providers: [{ name: 'fake', base_url: upstream.url, api_key: 'operator-key', models: [CACHED_MODEL] }],
      }),
    );
    node = await startNode(kind, { upstream, env: { PROXY_PROVIDERS_FILE: file } });
    key = await node.account(10_000_000);
  });
  afterAll(async () => {
    await node?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.resetFaults());

  const auth = () => ({ authorization: `Bearer ${key}` });

  /** The charge in the headers, the balance and the ledger agree on `expected`, its input on `input`. */
  async function expectCharged(run: () => Promise<{ status: number; headers: Headers }>, input: number, total: number) {
    const before = await node.balance(key);
    const answer = await run();
    expect(answer.status).toBe(200);
    expect(Number(answer.headers.get('x-cost-input-msat'))).toBe(input);
    expect(Number(answer.headers.get('x-cashu-cost-msat'))).toBe(total);
    expect(before.balance - (await node.balance(key)).balance).toBe(total);
    const row = (await node.ledger()).at(-1);
    expect({ input: Number(row.input_msat), charged: Number(row.charged_msat) }).toEqual({ input, charged: total });
  }

  it('lists the cache prices in USD and in sats', async () => {
    const { json } = await request(`${node.url}/v1/models`);
    const model = (json as any).data.find((m: any) => m.id === MODEL);
    expect(model.pricing).toMatchObject({ input_cache_read: '0.0000001', input_cache_write: '0.00000125' });
    expect(model.sats_pricing).toMatchObject({ input_cache_read: 0.0001, input_cache_write: 0.00125 });
  });

  it('bills OpenAI cached_tokens of a chat completion at the cache read price', async () => {
    upstream.faults.usage =
      '{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010,"prompt_tokens_details":{"cached_tokens":800}}';
    // 200 × 1 + 800 × 0.1 = 280 input, 10 × 2 output.
    await expectCharged(
      () => postJson(`${node.url}/v1/chat/completions`, chatBody({ model: MODEL }), auth()),
      280,
      300,
    );
  });

  it('bills the cached tokens of a stream’s usage chunk the same way', async () => {
    upstream.faults.usage =
      '{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010,"prompt_tokens_details":{"cached_tokens":800}}';
    const before = await node.balance(key);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody({ model: MODEL, stream: true }), auth());
    expect(answer.status).toBe(200);
    const usageChunk = answer.text
      .split('\n\n')
      .map((event) => event.replace(/^data: /, ''))
      .filter((data) => data.startsWith('{'))
      .map((data) => JSON.parse(data))
      .find((chunk) => chunk.usage);
    expect(usageChunk.cost).toMatchObject({ input_msat: 280, total_msat: 300 });
    expect(before.balance - (await node.balance(key)).balance).toBe(300);
  });

  it('bills the Responses API’s input_tokens_details.cached_tokens, rounding the input up once', async () => {
    upstream.faults.usage =
      '{"input_tokens":1000,"input_tokens_details":{"cached_tokens":999},"output_tokens":3,"total_tokens":1003}';
    // 1 + 99.9 = 100.9, rounded up to 101; 3 × 2 output.
    const body = { model: MODEL, input: 'Hello' };
    await expectCharged(() => postJson(`${node.url}/v1/responses`, body, auth()), 101, 107);
  });

  it('bills Anthropic cache reads and writes at their prices', async () => {
    upstream.faults.usage =
      '{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":5,"output_tokens":7}';
    // 10 × 1 + 2 × 1.25 + 5 × 0.1 = 13 input, 7 × 2 output.
    const body = { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };
    await expectCharged(() => postJson(`${node.url}/v1/messages`, body, auth()), 13, 27);
  });
});
