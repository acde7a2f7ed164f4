// What Routstr's clients (routstr-sdk, routstr-chat, routstrd) send and expect of a node
// (docs/proxy-wallet.md#routstr-clients): headers that stay with the node, empty JSON bodies, the node's
// own GET /v1/info and model list.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../support/http.js';
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
