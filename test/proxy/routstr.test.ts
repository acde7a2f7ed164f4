// What Routstr's clients (routstr-sdk, routstr-chat, routstrd) send and expect of a node
// (docs/proxy-wallet.md#routstr-clients): headers that stay with the node, empty JSON bodies, the node's
// own GET /v1/info and model list.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { chatBody, startNode, type Node } from './forward-helpers.js';

const ROUTSTR_HEADERS = {
  'refund-lnurl': 'alice@wallet.example',
  'key-expiry-time': '1900000000',
  'x-routstr-client': 'routstr-sdk',
  'x-routstr-request-id': 'abc',
};

describe('Routstr clients', () => {
  let node: Node;
  let key: string;
  beforeAll(async () => {
    node = await startNode('sqlite');
    key = await node.account(10_000_000);
  });
  afterAll(async () => {
    await node?.close();
  });
  beforeEach(() => {
    node.upstream.requests.length = 0;
  });

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
    const answer = await request(`${node.url}/v1/models/openai/gpt-4o`, 'GET', {
      token: key,
      headers: { ...ROUTSTR_HEADERS, 'x-custom': 'kept' },
    });
    expect(node.upstream.requests).toHaveLength(1);
    expect(answer.status).toBeLessThan(500);
    const headers = lastUpstreamHeaders();
    for (const name of Object.keys(ROUTSTR_HEADERS)) expect(headers).not.toHaveProperty(name);
    expect(headers['x-custom']).toBe('kept');
  });
});

describe('an empty JSON body on the proxy node', () => {
  let node: Node;
  let key: string;
  beforeAll(async () => {
    node = await startNode('sqlite');
    key = await node.account(10_000_000);
  });
  afterAll(async () => {
    await node?.close();
  });

  const emptyJson = { 'content-type': 'application/json' };

  it('is no body for the wallet routes, as Routstr SDK sends it', async () => {
    // The test mint (port 9) is unreachable: the refund gets as far as the mint, past body parsing.
    const refund = await request(`${node.url}/v1/wallet/refund`, 'POST', { token: key, body: '', headers: emptyJson });
    expect(refund.status).toBe(503);
    expect(refund.body.error.code).toBe('mint_unreachable');
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
    const node = await startNode('sqlite', {
      env: { PROXY_NAME: 'routstr test', PROXY_HTTP_URL: 'https://node.example', PROXY_ONION_URL: 'http://abc.onion' },
    });
    try {
      const answer = await request(`${node.url}/v1/info`);
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
      expect(node.upstream.requests).toHaveLength(0);
      const openapi = await request(`${node.url}/openapi/proxy.json`);
      expect(openapi.body.paths['/v1/info'].get.responses['200']).toBeDefined();
    } finally {
      await node.close();
    }
  });

  it('shows onion_url null when PROXY_ONION_URL is unset', async () => {
    const node = await startNode('sqlite');
    try {
      expect((await request(`${node.url}/v1/info`)).body).toMatchObject({ http_url: null, onion_url: null });
    } finally {
      await node.close();
    }
  });
});
