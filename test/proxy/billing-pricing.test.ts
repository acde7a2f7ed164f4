// Pricing: exact msat arithmetic, the models file (OpenRouter's format), the BTC/USD rate from
// loopback price feeds with fallback, caching and a maximum age; and what the node does without
// a rate.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFullConfig } from '../../src/services.js';
import { ConfigError } from '../../src/env.js';
import { ceilTimes, costOf, loadModels, parseDecimal, Pricing, rateFromFeed } from '../../src/proxy/billing/pricing.js';
import { planReservation, promptTokenBound, meterRequest } from '../../src/proxy/billing/metering.js';
import { chatBody, postJson, startNode, TEST_MODEL } from './forward-helpers.js';

describe('msat arithmetic', () => {
  it('converts USD per token to msat exactly and rounds costs up', async () => {
    const config = loadFullConfig({ PROXY_BTC_USD: '97000.5' }).proxy.forward;
    const pricing = new Pricing(config);
    const price = await pricing.price(pricing.model('openai/gpt-4o-mini')!);
    // 0.00000015 USD × 1e11 msat/BTC ÷ 97000.5 USD/BTC, exactly.
    const perToken = (0.00000015 * 1e11) / 97000.5;
    expect(Number(price.prompt.num) / Number(price.prompt.den)).toBeCloseTo(perToken, 12);
    expect(ceilTimes(1_000_000, price.prompt)).toBe(Math.ceil(1_000_000 * perToken));
    expect(ceilTimes(1, price.prompt)).toBe(1);
    expect(ceilTimes(0, price.prompt)).toBe(0);
    const cost = costOf(price, 1000, 500);
    expect(cost.totalMsat).toBe(cost.inputMsat + cost.outputMsat + cost.requestMsat);
  });

  it('parses decimals exactly, exponents included, and refuses the rest', () => {
    expect(parseDecimal('0.00000015')).toEqual({ num: 3n, den: 20_000_000n });
    expect(parseDecimal('1.5e-7')).toEqual({ num: 3n, den: 20_000_000n });
    expect(parseDecimal('-1')).toBeNull();
    expect(parseDecimal('abc')).toBeNull();
  });

  it('bounds the prompt by its bytes and counts images as a fixed allowance', () => {
    const bound = (body: unknown, raw = JSON.stringify(body)) => promptTokenBound(body, Buffer.from(raw));
    const text = { model: 'm', messages: [{ role: 'user', content: 'héllo' }] };
    expect(bound(text)).toBe(Buffer.byteLength(JSON.stringify(text)));
    // Escaped as a client may send it: never below the text's own bytes.
    expect(bound(text, JSON.stringify(text).replace('é', '\\u00e9'))).toBe(Buffer.byteLength(JSON.stringify(text)));
    const image = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(100_000)}` } }],
        },
      ],
    };
    expect(bound(image)).toBeLessThan(2000);
    // An image's key spelt with an escape is still counted as an image.
    const byUrl = { model: 'm', messages: [{ role: 'user', content: [{ image_url: { url: 'https://x/y.png' } }] }] };
    expect(bound(byUrl, JSON.stringify(byUrl).replace('image_url', 'image\\u005furl'))).toBeGreaterThan(1500);
  });

  it('plans a full reservation, a clamped one for a small balance, or none', () => {
    const price = { prompt: { num: 1n, den: 1n }, completion: { num: 2n, den: 1n }, request: { num: 10n, den: 1n } };
    const metered = meterRequest(
      'chat',
      Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 })),
    );
    const limits = { maxOutputTokens: 4096, minOutputTokens: 16, modelMaxTokens: null };
    // The prompt is reserved at a third of its byte bound, and may be charged up to the bound (the ceiling).
    const fixed = Math.ceil(metered.promptBound / 3) + 10;
    const ceiling = metered.promptBound + 10;
    expect(planReservation(metered, price, 1_000_000, limits).plan).toEqual({
      reserveMsat: fixed + 200,
      ceilingMsat: ceiling + 200,
      maxTokens: 100,
      clamped: false,
    });
    expect(planReservation(metered, price, fixed + 41, limits).plan).toEqual({
      reserveMsat: fixed + 40,
      ceilingMsat: ceiling + 40,
      maxTokens: 20,
      clamped: true,
    });
    expect(planReservation(metered, price, fixed + 31, limits)).toMatchObject({ plan: null, minimumMsat: fixed + 32 });
    const n3 = meterRequest('chat', Buffer.from(JSON.stringify({ model: 'm', messages: [], max_tokens: 10, n: 3 })));
    expect(planReservation(n3, price, 1_000_000, limits).plan!.reserveMsat).toBe(
      Math.ceil(n3.promptBound / 3) + 10 + 60,
    );
  });
});

describe('models file', () => {
  const write = (json: unknown) => {
    const file = join(mkdtempSync(join(tmpdir(), 'quartet-models-')), 'm.json');
    writeFileSync(file, JSON.stringify(json));
    return file;
  };

  it("accepts OpenRouter's format and the bundled default", () => {
    const models = loadModels(
      write({
        data: [
          {
            id: 'a/b',
            pricing: { prompt: '0.000001', completion: '0.000002' },
            context_length: 8000,
            top_provider: { max_completion_tokens: 512 },
          },
        ],
      }),
    );
    expect(models.get('a/b')).toMatchObject({
      contextLength: 8000,
      maxCompletionTokens: 512,
      usd: { prompt: '0.000001', completion: '0.000002', request: '0' },
    });
    expect(loadModels(null).size).toBeGreaterThan(0);
  });

  it('stops the start with a clear message for models it cannot price', () => {
    expect(() =>
      loadModels(write({ data: [{ id: 'openrouter/auto', pricing: { prompt: '-1', completion: '-1' } }] })),
    ).toThrow(/openrouter\/auto.*pricing.prompt/);
    expect(() => loadModels('/nonexistent/models.json')).toThrow(ConfigError);
    expect(() => loadModels(write({ models: [] }))).toThrow(/expected/);
  });
});

describe('price feeds', () => {
  let feed: Server;
  let base: string;
  const answers: Record<string, { status: number; body: unknown }> = {};
  const hits: Record<string, number> = {};
  beforeAll(async () => {
    feed = createServer((req, res) => {
      const path = req.url ?? '/';
      hits[path] = (hits[path] ?? 0) + 1;
      const answer = answers[path] ?? { status: 404, body: {} };
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(feed.address() as AddressInfo).port}`;
  });
  afterAll(() => feed.close());

  const pricingWith = (feeds: string[], cacheMs = 60_000, maxAgeMs = 120_000) =>
    new Pricing({
      ...loadFullConfig({}).proxy.forward,
      priceFeeds: feeds,
      priceCacheMs: cacheMs,
      priceMaxAgeMs: maxAgeMs,
    });

  it('reads known feed shapes and a #path, and ignores nonsense', () => {
    expect(rateFromFeed({ data: { amount: '97000.12' } }, '')).toBe('97000.12');
    expect(rateFromFeed({ result: { XXBTZUSD: { c: ['96000.5', '1'] } } }, '')).toBe('96000.5');
    expect(rateFromFeed({ bitcoin: { usd: 95000 } }, '')).toBe('95000');
    expect(rateFromFeed({ deep: { x: '94000' } }, 'deep.x')).toBe('94000');
    expect(rateFromFeed({ price: 3 }, '')).toBeNull();
    expect(rateFromFeed({ price: 'NaN' }, '')).toBeNull();
  });

  it('falls back to the next feed, caches the rate, and keeps a recent one while every feed fails', async () => {
    answers['/down'] = { status: 500, body: {} };
    answers['/silly'] = { status: 200, body: { price: 1 } };
    answers['/good'] = { status: 200, body: { data: { amount: '50000' } } };
    const pricing = pricingWith([`${base}/down`, `${base}/silly`, `${base}/good`], 100, 400);
    expect((await pricing.currentRate()).text).toBe('50000');
    expect(hits['/down']).toBe(1);
    await pricing.currentRate();
    expect(hits['/good']).toBe(1); // cached
    const price = await pricing.price(pricing.model('openai/gpt-4o-mini')!);
    expect(ceilTimes(1_000_000, price.prompt)).toBe(300_000); // 0.15 USD per million at 50k USD/BTC = 300 sat

    answers['/good'] = { status: 500, body: {} };
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect((await pricing.currentRate()).text).toBe('50000'); // stale but within the maximum age
    await new Promise((resolve) => setTimeout(resolve, 400));
    await expect(pricing.currentRate()).rejects.toMatchObject({ status: 503 });
    // During an outage the feeds are not asked again before the retry pause is over.
    const asked = hits['/good'];
    await expect(pricing.currentRate()).rejects.toMatchObject({ status: 503 });
    expect(hits['/good']).toBe(asked);
  });

  it("uses a feed's rate over HTTP, and answers 503 without any rate", async () => {
    answers['/rate'] = { status: 200, body: { deep: { usd: '200000' } } };
    const node = await startNode('sqlite', { env: { PROXY_BTC_USD: '', PROXY_PRICE_FEEDS: `${base}/rate#deep.usd` } });
    try {
      const info = await (await fetch(`${node.url}/`)).json();
      expect(info.btc_usd).toBe('200000');
      const key = await node.account(1_000_000);
      const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
      // At twice the test rate every token costs half: prompt 0.5, completion 1, request 5 msat.
      const { prompt_tokens: p, completion_tokens: c } = answer.json.usage;
      expect(Number(answer.headers.get('x-cashu-cost-msat'))).toBe(Math.ceil(p / 2) + c + 5);
    } finally {
      await node.close();
    }
    const unpriced = await startNode('sqlite', { env: { PROXY_BTC_USD: '' } });
    try {
      const info = await (await fetch(`${unpriced.url}/`)).json();
      expect(info.btc_usd).toBeNull();
      expect(info.models.find((m: any) => m.id === TEST_MODEL).sats_pricing).toBeNull();
      const key = await unpriced.account(1_000_000);
      const answer = await postJson(`${unpriced.url}/v1/chat/completions`, chatBody(), {
        authorization: `Bearer ${key}`,
      });
      expect(answer.status).toBe(503);
      expect(answer.json.error.code).toBe('pricing_unavailable');
    } finally {
      await unpriced.close();
    }
  });
});
