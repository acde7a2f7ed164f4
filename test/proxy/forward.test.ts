// Forwarding over HTTP: the openai SDK against the node, free and billed paths, headers,
// streaming both ways, local namespaces, upstream failures; on SQLite and PostgreSQL.
import { request } from 'undici';
import http from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { chatBody, FREE_PATH, postJson, startNode, testCost, TEST_MODEL, type Node } from './forward-helpers.js';

describe.each(databaseKinds)('forwarding on %s', (kind) => {
  let node: Node;
  let key: string;
  let client: OpenAI;
  beforeAll(async () => {
    node = await startNode(kind, { env: { PROXY_UPSTREAM_TIMEOUT_MS: '1500' } });
    key = await node.account(10_000_000);
    client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await node?.close();
  });
  beforeEach(() => node.upstream.resetFaults());

  it('serves a chat completion to the openai SDK with cost headers and a cost in the body', async () => {
    const before = await node.balance(key);
    const { data, response } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: 'user', content: 'What is a node?' }] })
      .withResponse();
    expect(data.choices[0].message.content).toBeTruthy();
    const cost = testCost(data.usage!);
    expect(Number(response.headers.get('x-cashu-cost-msat'))).toBe(cost);
    expect(Number(response.headers.get('x-cost-input-msat'))).toBe(data.usage!.prompt_tokens);
    expect(Number(response.headers.get('x-cost-output-msat'))).toBe(data.usage!.completion_tokens * 2);
    expect((data as any).cost).toMatchObject({
      total_msat: cost,
      input_msat: data.usage!.prompt_tokens,
      output_msat: data.usage!.completion_tokens * 2,
      request_msat: 10,
    });
    const after = await node.balance(key);
    expect(before.balance - after.balance).toBe(cost);
    expect(after).toMatchObject({ reserved: 0, spent: before.spent + cost, requests: before.requests + 1 });
  });

  it('streams a chat completion to the openai SDK, usage forced upstream, cost in the usage chunk', async () => {
    const before = await node.balance(key);
    const { data: stream, response } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: 'user', content: 'Stream please' }], stream: true })
      .withResponse();
    expect(Number(response.headers.get('x-cashu-reserved-msat'))).toBeGreaterThan(0);
    let text = '';
    let usage: any;
    let cost: any;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) {
        usage = chunk.usage;
        cost = (chunk as any).cost;
      }
    }
    expect(text.split(' ').length).toBe(usage.completion_tokens);
    expect(node.upstream.requests.at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(cost.total_msat).toBe(testCost(usage));
    const after = await node.balance(key);
    expect(before.balance - after.balance).toBe(testCost(usage));
    expect(after.reserved).toBe(0);
  });

  it('meters completions and embeddings too', async () => {
    const before = await node.balance(key);
    const completion = await client.completions.create({
      model: TEST_MODEL,
      prompt: 'Once upon a time',
      max_tokens: 4,
    });
    const embedding = await client.embeddings.create({ model: 'test/embed', input: ['alpha', 'beta'] });
    expect(embedding.data).toHaveLength(2);
    const expected = testCost(completion.usage!) + embedding.usage.prompt_tokens * 1;
    expect(before.balance - (await node.balance(key)).balance).toBe(expected);
  });

  it('refuses an unknown model with 400 before forwarding anything', async () => {
    const count = node.upstream.requests.length;
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody({ model: 'no/such-model' }), {
      authorization: `Bearer ${key}`,
    });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
    expect(answer.json.error.message).toContain('no/such-model');
    expect(node.upstream.requests.length).toBe(count);
  });

  it('answers input errors of billed requests in the FastAPI shape', async () => {
    const noModel = await postJson(
      `${node.url}/v1/chat/completions`,
      { messages: [] },
      { authorization: `Bearer ${key}` },
    );
    expect(noModel.status).toBe(422);
    expect(noModel.json).toEqual({ detail: [{ loc: ['body', 'model'], msg: 'Field required', type: 'missing' }] });
    const badJson = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: '{"model":',
    });
    expect(badJson.status).toBe(422);
    expect((await badJson.json()).detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    const badMax = await postJson(`${node.url}/v1/chat/completions`, chatBody({ max_tokens: -1 }), {
      authorization: `Bearer ${key}`,
    });
    expect(badMax.status).toBe(422);
    expect(badMax.json.detail[0].loc).toEqual(['body', 'max_tokens']);
  });

  it('answers 402 stating the price to a billed request without any credential', async () => {
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody());
    expect(answer.status).toBe(402);
    expect(answer.json.error).toMatchObject({ type: 'insufficient_quota', code: 'payment_required' });
    expect(answer.json.error.price_msat).toBeGreaterThan(0);
    expect(answer.json.error.message).toMatch(/costs at most \d+ msat/);
    expect(answer.headers.get('x-cashu')).toMatch(/^creqA/);
  });

  it("forwards free paths to a valid key only, with the operator key instead of the caller's", async () => {
    // GET /v1/models is the node's own list (routstr.test.ts); one model's entry is forwarded.
    const models = await client.models.list();
    expect(models.data.length).toBeGreaterThan(0);
    const free = await fetch(`${node.url}${FREE_PATH}`, { headers: { authorization: `Bearer ${key}` } });
    expect(free.status).toBe(200);
    const sent = node.upstream.requests.at(-1)!;
    expect(sent.url).toBe(FREE_PATH);
    expect(sent.headers.authorization).toBe('Bearer operator-key');
    const head = await fetch(`${node.url}${FREE_PATH}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(head.status).toBe(200);
    expect(node.upstream.requests.at(-1)!.method).toBe('HEAD');
    const missing = await fetch(`${node.url}${FREE_PATH}`);
    expect(missing.status).toBe(422);
    expect(await missing.json()).toEqual({
      detail: [{ loc: ['header', 'authorization'], msg: 'Field required', type: 'missing' }],
    });
    const unknown = await fetch(`${node.url}${FREE_PATH}`, { headers: { authorization: 'Bearer sk-unknown' } });
    expect(unknown.status).toBe(401);
    const malformed = await fetch(`${node.url}${FREE_PATH}`, { headers: { authorization: 'Basic abc' } });
    expect(malformed.status).toBe(401);
  });

  it("strips hop-by-hop headers, the caller's credentials and identity, and keeps the query", async () => {
    // node:http, because fetch refuses to send a Connection header.
    await new Promise<void>((resolve, reject) => {
      const req = http.request(`${node.url}${FREE_PATH}?limit=2&after=x%20y`, {
        headers: {
          authorization: `Bearer ${key}`,
          connection: 'keep-alive, x-hop',
          'x-hop': '1',
          'x-forwarded-for': '10.0.0.1',
          cookie: 'quartet_admin=secret',
          'x-custom': 'kept',
        },
        agent: false,
      });
      req.on('response', (res) => res.resume().on('end', resolve));
      req.on('error', reject);
      req.end();
    });
    const sent = node.upstream.requests.at(-1)!;
    expect(sent.url).toBe(`${FREE_PATH}?limit=2&after=x%20y`);
    expect(sent.headers['x-custom']).toBe('kept');
    for (const name of ['x-hop', 'x-forwarded-for', 'cookie']) expect(sent.headers[name]).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain(key);
  });

  it('forwards writes on unpriced paths 1:1 and charges each the flat PROXY_WRITE_PRICE_MSAT', async () => {
    const before = await node.balance(key);
    const answer = await fetch(`${node.url}/debug/echo?x=1`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      body: 'file contents',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-echo-method')).toBe('PUT');
    expect(await answer.text()).toBe('file contents');
    // The default price: 1 sat, stated as every billed answer states its cost.
    expect(answer.headers.get('x-cashu-cost-msat')).toBe('1000');
    expect(answer.headers.get('x-routstr-cost-msats')).toBe('1000');
    const after = await node.balance(key);
    expect(before.balance - after.balance).toBe(1000);
    expect(after).toMatchObject({ reserved: 0, requests: before.requests + 1 });

    // What the upstream refuses costs nothing, as on billed paths.
    const refused = await fetch(`${node.url}/v1/files/no-such-file`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('x-cashu-cost-msat')).toBe('0');
    expect((await node.balance(key)).balance).toBe(after.balance);

    // Without a credential: 402 with the price, like a billed path.
    const unpaid = await fetch(`${node.url}/debug/echo`, { method: 'POST', body: 'x' });
    expect(unpaid.status).toBe(402);
    expect((await unpaid.json()).error).toMatchObject({ code: 'payment_required', price_msat: 1000 });
  });

  it('keeps its own namespaces local', async () => {
    for (const path of ['/v1/wallet/nothing', '/admin/nothing', '/api/nothing', '/openapi/nothing']) {
      const answer = await fetch(`${node.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      expect(answer.status, path).toBe(404);
    }
    // Dot segments that only resolve to a local namespace after the router has matched the
    // catch-all (fetch would resolve them itself, so send the raw path).
    for (const path of [
      '/v1/../api/nothing',
      '/x/%2e%2e/openapi/nothing',
      '/v1/..//docs/nothing',
      '/a/../1/nothing',
      '//api/nothing',
      '//v1/wallet/nothing',
    ]) {
      const answer = await request(`${node.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      await answer.body.dump();
      expect(answer.statusCode, path).toBe(404);
    }
    expect(node.upstream.requests.filter((r) => /nothing/.test(r.url)).map((r) => r.url)).toEqual([]);
  });

  it('shows each model with its sats pricing in GET /', async () => {
    const info = await (await fetch(`${node.url}/`)).json();
    expect(info.btc_usd).toBe('100000');
    expect(info.models).toContainEqual(
      expect.objectContaining({
        id: TEST_MODEL,
        pricing: { prompt: '0.000001', completion: '0.000002', request: '0.00001' },
        sats_pricing: { prompt: 0.001, completion: 0.002, request: 0.01 },
      }),
    );
  });

  it('answers 504 for a slow upstream and 502 for a socket error, releasing the reservation', async () => {
    const before = await node.balance(key);
    node.upstream.faults.hang = true;
    const slow = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
    expect(slow.status).toBe(504);
    expect(slow.json.error).toMatchObject({ code: 'upstream_timeout', type: 'upstream_error' });
    node.upstream.resetFaults();
    node.upstream.faults.resetAfterChunks = 0;
    const broken = await postJson(`${node.url}/v1/chat/completions`, chatBody({ stream: true }), {
      authorization: `Bearer ${key}`,
    });
    // The upstream sent its headers, then broke: the caller's stream breaks too, nothing charged.
    expect(broken.text).not.toContain('[DONE]');
    const after = await node.balance(key);
    expect(after).toMatchObject({ balance: before.balance, reserved: 0 });
  });
});

describe('forwarding to an unreachable upstream', () => {
  it('answers 502 in the OpenAI shape and releases the reservation', async () => {
    const node = await startNode('sqlite', { env: { PROXY_UPSTREAM_URL: 'http://127.0.0.1:9' } });
    try {
      const key = await node.account(1_000_000);
      const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
      expect(answer.status).toBe(502);
      expect(answer.json.error).toMatchObject({ code: 'upstream_unreachable', type: 'upstream_error' });
      expect(await node.balance(key)).toMatchObject({ balance: 1_000_000, reserved: 0, requests: 0 });
      const ledger = await node.ledger();
      expect(ledger.at(-1)).toMatchObject({ status: 'released', charged_msat: 0 });
      const free = await fetch(`${node.url}${FREE_PATH}`, { headers: { authorization: `Bearer ${key}` } });
      expect(free.status).toBe(502);
    } finally {
      await node.close();
    }
  });
});

describe('an operator who refuses writes on unpriced paths', () => {
  it('answers 403 not_forwarded with PROXY_FORWARD_UNBILLED_WRITES=false, and never calls the upstream', async () => {
    const node = await startNode('sqlite', { env: { PROXY_FORWARD_UNBILLED_WRITES: 'false' } });
    try {
      const key = await node.account(10_000);
      const seen = node.upstream.requests.length;
      const answer = await fetch(`${node.url}/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: 'x',
      });
      expect(answer.status).toBe(403);
      expect((await answer.json()).error.code).toBe('not_forwarded');
      expect(node.upstream.requests.length).toBe(seen);
      expect((await node.balance(key)).balance).toBe(10_000);
    } finally {
      await node.close();
    }
  });
});

describe('streaming both ways on free paths', () => {
  it('streams request and response bodies without buffering them', async () => {
    const node = await startNode('sqlite');
    try {
      const key = await node.account(1_000);
      // Response: the first line arrives long before the last one is written.
      const started = Date.now();
      const response = await fetch(`${node.url}/debug/stream?n=4&delay=150`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const reader = response.body!.getReader();
      const first = await reader.read();
      const firstAt = Date.now();
      let rest = '';
      for (let part = await reader.read(); !part.done; part = await reader.read()) {
        rest += new TextDecoder().decode(part.value);
      }
      expect(new TextDecoder().decode(first.value)).toMatch(/^line 0/);
      // Each line carries the time the upstream wrote it: the first one was here before the last
      // was written, which no buffering proxy can do, however slow the machine.
      const lastWritten = Number(/^line 3 (\d+)$/m.exec(rest)?.[1]);
      expect(firstAt, rest).toBeLessThan(lastWritten);
      expect(Date.now() - started).toBeGreaterThanOrEqual(450);

      // Request: a body produced piece by piece reaches the upstream and comes back.
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent === 3) return controller.close();
          await new Promise((resolve) => setTimeout(resolve, 50));
          controller.enqueue(new TextEncoder().encode(`part ${sent++};`));
        },
      });
      const echo = await fetch(`${node.url}/debug/echo?q=1`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
        body,
        duplex: 'half',
      } as RequestInit);
      expect(echo.status).toBe(200);
      expect(await echo.text()).toBe('part 0;part 1;part 2;');
      expect(echo.headers.get('x-echo-url')).toBe('/debug/echo?q=1');
      const upstreamHeaders = JSON.parse(Buffer.from(echo.headers.get('x-echo-headers')!, 'base64').toString());
      expect(upstreamHeaders.authorization).toBe('Bearer operator-key');
    } finally {
      await node.close();
    }
  });
});
