// The providers file (providers.ts) and the models the providers serve (provider-models.ts): what the
// operator writes, the mistakes that stop the start, and model lists read from a provider with a markup.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFullConfig } from '../../src/services.js';
import { ConfigError } from '../../src/env.js';
import { multiplyDecimal, ProviderCatalog } from '../../src/proxy/forward/provider-models.js';
import { loadModels } from '../../src/proxy/billing/pricing.js';
import { parseProviders, servesPath, withProviderKey } from '../../src/proxy/common/providers.js';

const parse = (providers: unknown, env: Record<string, string> = {}) => parseProviders({ providers }, 'test', env);
const silent = { warn() {} };

describe('providers file', () => {
  it('keeps PROXY_UPSTREAM_URL and PROXY_UPSTREAM_KEY as one implicit provider serving everything', () => {
    const config = loadFullConfig({ PROXY_UPSTREAM_URL: 'http://127.0.0.1:9999', PROXY_UPSTREAM_KEY: 'k' }).proxy
      .forward;
    expect(config.providers).toMatchObject([
      { name: 'upstream', kind: 'openai', baseUrl: 'http://127.0.0.1:9999', key: 'k', paths: null, models: null },
    ]);
  });

  it('reads each provider with its defaults: kind openai, weight 1; anthropic serves its own paths', () => {
    const [openai, claude] = parse(
      [
        { name: 'oai', base_url: 'https://api.openai.com', api_key_env: 'OAI_KEY', models: ['openai/gpt-4o'] },
        { name: 'claude', kind: 'anthropic', base_url: 'https://api.anthropic.com', api_key: 'sk-ant', weight: 3 },
      ],
      { OAI_KEY: 'sk-oai' },
    );
    expect(openai).toMatchObject({ kind: 'openai', key: 'sk-oai', weight: 1, paths: null });
    expect(openai.models).toEqual([{ id: 'openai/gpt-4o', upstreamId: 'openai/gpt-4o', entry: null }]);
    expect(claude).toMatchObject({ kind: 'anthropic', key: 'sk-ant', weight: 3 });
    expect(servesPath(claude, '/v1/messages')).toBe(true);
    expect(servesPath(claude, '/v1/messages/count_tokens')).toBe(true);
    expect(servesPath(claude, '/v1/chat/completions')).toBe(false);
    expect(servesPath(claude, '/v1/messagesx')).toBe(false);
  });

  it.each([
    [[], /1 to 64 providers/],
    [[{ name: 'x', base_url: 'ftp://host' }], /http\(s\)/],
    [[{ name: 'x', base_url: 'http://h', kind: 'gemini' }], /"kind" must be one of openai, anthropic, openrouter/],
    [[{ name: 'x', base_url: 'http://h', api_key_env: 'MISSING' }], /MISSING, which is not set/],
    [[{ name: 'x', base_url: 'http://h', api_key: 'a', api_key_env: 'B' }], /not both/],
    [[{ name: 'x', base_url: 'http://h', weight: 0 }], /"weight" must be an integer/],
    [[{ name: 'x', base_url: 'http://h', fetch_models: { markup: '-1' } }], /markup/],
    [[{ name: 'x', base_url: 'http://h', paths: ['v1'] }], /"paths"/],
    [
      [
        { name: 'x', base_url: 'http://h' },
        { name: 'x', base_url: 'http://i' },
      ],
      /two providers have this name/,
    ],
  ])('stops the start with one line naming the mistake: %j', (providers, message) => {
    expect(() => parse(providers)).toThrow(ConfigError);
    expect(() => parse(providers)).toThrow(message);
  });

  it('refuses a listed model without a price that PROXY_MODELS_FILE does not price either', () => {
    const providers = parse([{ name: 'x', base_url: 'http://h', models: ['nobody/knows'] }]);
    expect(() => new ProviderCatalog(providers, loadModels(null))).toThrow(/"nobody\/knows" has no "pricing"/);
  });

  it('sends the key as each kind expects, and never the caller’s', () => {
    const [openai, claude] = parse([
      { name: 'o', base_url: 'http://h', api_key: 'op' },
      { name: 'a', kind: 'anthropic', base_url: 'http://h', api_key: 'an' },
    ]);
    const caller = ['content-type', 'application/json', 'authorization', 'Bearer caller', 'x-api-key', 'caller'];
    expect(withProviderKey(openai, caller, false)).toEqual([
      'content-type',
      'application/json',
      'authorization',
      'Bearer op',
    ]);
    expect(withProviderKey(openai, caller, true)).toEqual([
      'content-type',
      'application/json',
      'authorization',
      'Bearer op',
      'x-api-key',
      'op',
    ]);
    expect(withProviderKey(claude, [...caller, 'anthropic-version', '2024-01-01'], false)).toEqual([
      'content-type',
      'application/json',
      'anthropic-version',
      '2024-01-01',
      'x-api-key',
      'an',
    ]);
    expect(withProviderKey(claude, caller, false)).toEqual([
      'content-type',
      'application/json',
      'x-api-key',
      'an',
      'anthropic-version',
      '2023-06-01',
    ]);
  });
});

describe('the real-deployment example of docs/proxy-billing.md', () => {
  it('is a valid providers file', () => {
    const doc = readFileSync(new URL('../../docs/proxy-billing.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Providers'));
    const json = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]);
    const env = { OPENAI_API_KEY: 'a', OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' };
    const providers = parseProviders(json, 'docs', env);
    expect(providers.map((p) => [p.name, p.kind, p.weight])).toEqual([
      ['openai', 'openai', 3],
      ['openrouter', 'openrouter', 1],
      ['anthropic', 'anthropic', 1],
    ]);
    const catalog = new ProviderCatalog(providers, loadModels(null));
    expect([...catalog.models.keys()].sort()).toEqual([
      'anthropic/claude-sonnet-4',
      'openai/gpt-4o',
      'openai/gpt-4o-mini',
    ]);
    expect(catalog.upstreamId('openai', 'openai/gpt-4o')).toBe('gpt-4o');
    expect(catalog.upstreamId('openrouter', 'openai/gpt-4o')).toBe('openai/gpt-4o');
    expect(catalog.models.get('anthropic/claude-sonnet-4')!.usd.input_cache_write).toBe('0.00000375');
  });
});

describe('the models providers serve', () => {
  it('prices a model several providers serve at the highest of their prices, field by field', () => {
    const priced = (prompt: string, completion: string) => ({
      id: 'm',
      context_length: 1000,
      pricing: { prompt, completion },
    });
    const providers = parse([
      { name: 'cheap-in', base_url: 'http://h', models: [priced('0.000001', '0.00001')] },
      { name: 'cheap-out', base_url: 'http://i', models: [priced('0.000003', '0.000002')] },
    ]);
    const catalog = new ProviderCatalog(providers, loadModels(null));
    expect(catalog.models.get('m')!.usd).toEqual({ prompt: '0.000003', completion: '0.00001', request: '0' });
    expect([...catalog.models.keys()]).toEqual(['m']);
    expect(catalog.upstreamId('cheap-in', 'm')).toBe('m');
    expect(catalog.upstreamId('cheap-in', 'openai/gpt-4o')).toBeNull();
  });

  it('multiplies decimal prices exactly', () => {
    expect(multiplyDecimal('0.00000015', '1.2')).toBe('0.00000018');
    expect(multiplyDecimal('0.0000025', '1')).toBe('0.0000025');
    expect(multiplyDecimal('3', '1.5')).toBe('4.5');
    expect(multiplyDecimal('0', '2')).toBe('0');
    expect(multiplyDecimal('1.5e-7', '2')).toBe('0.0000003');
  });

  describe('read from a provider’s model list', () => {
    let server: Server;
    let url: string;
    let answer: { status: number; body: unknown };
    const seen: (string | undefined)[] = [];
    beforeAll(async () => {
      server = createServer((req, res) => {
        seen.push(req.headers.authorization);
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('serves the priced models of the list at its prices times the markup, leaving out unpriced ones', async () => {
      answer = {
        status: 200,
        body: {
          data: [
            { id: 'vendor/a', context_length: 8000, pricing: { prompt: '0.000001', completion: '0.000002' } },
            { id: 'openrouter/auto', pricing: { prompt: '-1', completion: '-1' } },
            { id: 'no-price' },
          ],
        },
      };
      const providers = parse([{ name: 'or', base_url: url, api_key: 'sk-or', fetch_models: { markup: '1.25' } }]);
      const catalog = new ProviderCatalog(providers, loadModels(null));
      expect(catalog.models.size).toBe(0);
      await catalog.refresh(loadFullConfig({}).proxy.forward, silent);
      expect([...catalog.models.keys()]).toEqual(['vendor/a']);
      expect(catalog.models.get('vendor/a')!.usd).toEqual({
        prompt: '0.00000125',
        completion: '0.0000025',
        request: '0',
      });
      expect(seen.at(-1)).toBe('Bearer sk-or');
    });

    it('keeps the models it had when the list cannot be read, and says so', async () => {
      answer = { status: 200, body: { data: [{ id: 'vendor/b', pricing: { prompt: '0.000001', completion: '0' } }] } };
      const providers = parse([{ name: 'or', base_url: url, fetch_models: true }]);
      const catalog = new ProviderCatalog(providers, loadModels(null));
      await catalog.refresh(loadFullConfig({}).proxy.forward, silent);
      answer = { status: 502, body: { error: 'down' } };
      const warnings: unknown[] = [];
      await catalog.refresh(loadFullConfig({}).proxy.forward, { warn: (obj) => warnings.push(obj) });
      expect([...catalog.models.keys()]).toEqual(['vendor/b']);
      expect(warnings).toEqual([expect.objectContaining({ provider: 'or', err: 'status 502' })]);
    });
  });
});
