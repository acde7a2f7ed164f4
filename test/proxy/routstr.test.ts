// What Routstr's clients (routstr-sdk, routstr-chat, routstrd) send and expect of a node
// (docs/proxy-wallet.md#routstr-clients): headers that stay with the node, empty JSON bodies, the node's
// own GET /v1/info and model list.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { chatBody, FREE_PATH, startNode, TEST_MODEL, type Node } from './forward-helpers.js';

const ROUTSTR_HEADERS = {
  'refund-lnurl': 'alice@wallet.example',
  'key-expiry-time': '1900000000',
  'x-routstr-client': 'routstr-sdk',
  'x-routstr-request-id': 'abc',
};

/** Runs `check` against a node of its own, started with `env`. */
async function withNode(env: Record<string, string>, check: (node: Node) => Promise<void>) {
  const node = await startNode('sqlite', { env });
  try {
    await check(node);
  } finally {
    await node.close();
  }
}

describe('a node for Routstr clients', () => {
  let node: Node;
  let key: string;
  afterAll(() => node?.close());
  beforeAll(async () => {
    node = await startNode('sqlite');
    key = await node.account(10_000_000);
  });
  beforeEach(() => {
    node.upstream.requests.length = 0;
  });

  describe('headers for the node alone', () => {
    const lastUpstreamHeaders = () => node.upstream.requests.at(-1)!.headers;

    // X-Cashu, a payment, is never forwarded either (xcashu.test.ts).
    it('keeps Refund-LNURL, Key-Expiry-Time and X-Routstr-* from the upstream on billed paths', async () => {
      const answer = await request(`${node.url}/v1/chat/completions`, 'POST', {
        token: key,
        json: chatBody(),
        headers: { ...ROUTSTR_HEADERS, 'x-custom': 'kept' },
      });
      expect(answer.status).toBe(200);
      const headers = lastUpstreamHeaders();
      for (const name of Object.keys(ROUTSTR_HEADERS)) expect(headers).not.toHaveProperty(name);
      expect(headers['x-custom']).toBe('kept');
    });

    it('keeps them from the upstream on free paths', async () => {
      const answer = await request(`${node.url}${FREE_PATH}`, 'GET', {
        token: key,
        headers: { ...ROUTSTR_HEADERS, 'x-custom': 'kept' },
      });
      expect(node.upstream.requests).toHaveLength(1);
      expect(answer.status).toBe(200);
      const headers = lastUpstreamHeaders();
      for (const name of Object.keys(ROUTSTR_HEADERS)) expect(headers).not.toHaveProperty(name);
      expect(headers['x-custom']).toBe('kept');
    });
  });

  describe('an empty JSON body', () => {
    const emptyJson = { 'content-type': 'application/json' };

    it('is no body for the wallet routes, as Routstr SDK sends it', async () => {
      // The test mint (port 9) is unreachable: the refund gets as far as the mint, past body parsing.
      const refund = await request(`${node.url}/v1/wallet/refund`, 'POST', {
        token: key,
        body: '',
        headers: emptyJson,
      });
      expect(refund.status).toBe(503);
      expect(refund.body.error.code).toBe('cashu_mint_unreachable');
      const topup = await request(`${node.url}/v1/wallet/topup`, 'POST', { token: key, body: '', headers: emptyJson });
      expect(topup.status).toBe(422);
      expect(topup.body.detail[0].loc).toEqual(['query', 'ecash_token']);
    });

    it('stays an error for the users and tasks API', async () => {
      const server = await startTestServer('sqlite', { env: { SERVICES: 'tasks' } });
      try {
        const answer = await request(`${server.url}/api/users/login`, 'POST', { body: '', headers: emptyJson });
        expect(answer.status).toBe(400);
      } finally {
        await server.close();
      }
    });
  });

  describe('GET /v1/info', () => {
    it('is answered by the node without a key, as a Routstr node answers it', async () => {
      const env = {
        PROXY_NAME: 'routstr test',
        PROXY_HTTP_URL: 'https://node.example',
        PROXY_ONION_URL: 'http://abc.onion',
      };
      await withNode(env, async (named) => {
        const answer = await request(`${named.url}/v1/info`);
        expect(answer.status).toBe(200);
        expect(answer.body).toEqual({
          name: 'routstr test',
          description: expect.any(String),
          version: '0.0.1',
          npub: null,
          mints: ['http://127.0.0.1:9'],
          http_url: 'https://node.example',
          onion_url: 'http://abc.onion',
        });
        expect(named.upstream.requests).toHaveLength(0);
        const openapi = await request(`${named.url}/openapi/proxy.json`);
        expect(openapi.body.paths['/v1/info'].get.responses['200']).toBeDefined();
      });
    });

    it('shows onion_url null when PROXY_ONION_URL is unset', async () => {
      expect((await request(`${node.url}/v1/info`)).body).toMatchObject({ http_url: null, onion_url: null });
    });
  });

  describe('GET /v1/models and GET /models', () => {
    // Test prices: 1 msat per prompt token, 2 per completion token, 10 per request; the test model takes
    // 32,000 tokens of context and writes at most 1,000. A prompt is reserved at a third of its bound:
    // 10,667 tokens at most.
    const testModel = {
      id: TEST_MODEL,
      name: 'Test model',
      context_length: 32000,
      pricing: { prompt: '0.000001', completion: '0.000002', request: '0.00001' },
      sats_pricing: {
        prompt: 0.001,
        completion: 0.002,
        request: 0.01,
        max_prompt_cost: 11,
        max_completion_cost: 2,
        max_cost: 13,
      },
    };

    it('lists the models with their sats pricing and maximal costs, without a key, not forwarded', async () => {
      for (const path of ['/v1/models', '/models']) {
        const answer = await request(`${node.url}${path}`);
        expect(answer.status).toBe(200);
        expect(answer.body.data).toContainEqual(testModel);
        // No context length: the prompt is bounded by the largest body (PROXY_MAX_BODY_BYTES, 8 MiB).
        expect(answer.body.data.find((m: any) => m.id === 'test/embed').sats_pricing).toMatchObject({
          max_prompt_cost: 2797,
          max_completion_cost: 0,
          max_cost: 2797,
        });
      }
      expect(node.upstream.requests).toHaveLength(0);
      const openapi = await request(`${node.url}/openapi/proxy.json`);
      expect(openapi.body.paths['/v1/models'].get.responses['200']).toBeDefined();
    });

    it('never refuses a request, however long, to a caller holding max_cost', async () => {
      const holder = await node.account(testModel.sats_pricing.max_cost * 1000);
      // 40,000 bytes of prompt: more than the context length, which bounds the prompt's tokens.
      const body = chatBody({ messages: [{ role: 'user', content: 'a '.repeat(20_000) }], max_tokens: 1000 });
      const answer = await request(`${node.url}/v1/chat/completions`, 'POST', { token: holder, json: body });
      expect(answer.status).toBe(200);
    });

    it('shows sats_pricing null without a BTC/USD rate, as GET / does', async () => {
      await withNode({ PROXY_BTC_USD: '' }, async (unpriced) => {
        const answer = await request(`${unpriced.url}/v1/models`);
        expect(answer.status).toBe(200);
        expect(answer.body.data.find((m: any) => m.id === TEST_MODEL)).toMatchObject({
          pricing: testModel.pricing,
          sats_pricing: null,
        });
      });
    });
  });
});
