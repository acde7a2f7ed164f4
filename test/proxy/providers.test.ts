// Several upstream providers (docs/proxy-billing.md, "Providers"): two fake upstreams behind one
// node; one killed mid-run while the other keeps serving; circuit breakers opening and closing; a
// model only one provider serves; every provider failing with the reservation released; keys sent as
// each kind expects; billing checked on SQLite and PostgreSQL.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from '../../src/fakeupstream/index.js';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { chatBody, type Node, postJson, startNode, testCost, TEST_MODEL, waitUntil } from './forward-helpers.js';

function providersFile(providers: unknown[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'quartet-providers-')), 'providers.json');
  writeFileSync(file, JSON.stringify({ providers }));
  return file;
}

/** Requests the fake upstream answered at a billed path. */
const served = (upstream: FakeUpstream) => upstream.requests.filter((r) => r.method === 'POST').length;

describe.each(databaseKinds)('several providers on %s', (kind) => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let node: Node;
  let key: string;
  beforeAll(async () => {
    a = await startFakeUpstream({ apiKey: 'key-a' });
    b = await startFakeUpstream({ apiKey: 'key-b' });
    const file = providersFile([
      { name: 'a', base_url: a.url, api_key: 'key-a', weight: 1 },
      { name: 'b', base_url: b.url, api_key_env: 'TEST_KEY_B', weight: 1 },
      {
        name: 'b-only',
        base_url: b.url,
        api_key: 'key-b',
        models: [
          {
            id: 'only/b',
            upstream_id: 'b-native-name',
            pricing: { prompt: '0.000002', completion: '0.000004', request: '0' },
          },
        ],
      },
    ]);
    node = await startNode(kind, {
      upstream: a,
      env: {
        PROXY_PROVIDERS_FILE: file,
        TEST_KEY_B: 'key-b',
        PROXY_BREAKER_FAILURES: '3',
        PROXY_BREAKER_COOLDOWN_SECONDS: '1',
      },
    });
    key = await node.account(100_000_000);
  });
  afterAll(async () => {
    await node?.close();
    await a?.close();
    await b?.close();
  });
  afterEach(() => {
    a.resetFaults();
    b.resetFaults();
  });

  const chat = (body: Record<string, unknown> = {}) =>
    postJson(`${node.url}/v1/chat/completions`, chatBody(body), { authorization: `Bearer ${key}` });

  it('lists the union of the providers models, each at its price', async () => {
    const { json } = await request(`${node.url}/v1/models`);
    const ids = (json as any).data.map((m: any) => m.id).sort();
    expect(ids).toEqual(['only/b', 'test/embed', TEST_MODEL]);
    const onlyB = (json as any).data.find((m: any) => m.id === 'only/b');
    expect(onlyB.pricing).toMatchObject({ prompt: '0.000002', completion: '0.000004' });
  });

  it('sends a model only one provider serves to that provider, under its own name and key', async () => {
    const before = { a: served(a), b: served(b) };
    for (let i = 0; i < 5; i++) {
      const answer = await chat({ model: 'only/b' });
      expect(answer.status).toBe(200);
    }
    expect(served(a)).toBe(before.a);
    expect(served(b)).toBe(before.b + 5);
    const last = b.requests.at(-1)!;
    expect((last.body as any).model).toBe('b-native-name');
    expect(last.headers.authorization).toBe('Bearer key-b');
  });

  it('keeps serving, and billing each request once, while one provider is killed mid-run', async () => {
    const before = await node.balance(key);
    const ledgerBefore = (await node.ledger()).length;
    const beforeA = served(a);
    let charged = 0;
    // A's replacement on the same port is started after the run (the other tests use it).
    const port = a.port;
    for (let i = 0; i < 30; i++) {
      if (i === 10) await a.close();
      const answer = await chat();
      expect(answer.status).toBe(200);
      charged += testCost((answer.json as any).usage);
    }
    expect(served(a)).toBeGreaterThan(beforeA); // it served some before it died
    const after = await node.balance(key);
    expect(before.balance - after.balance).toBe(charged);
    expect(after).toMatchObject({ reserved: 0, requests: before.requests + 30 });
    const rows = (await node.ledger()).slice(ledgerBefore);
    expect(rows).toHaveLength(30);
    expect(rows.every((row) => Number(row.upstream_status) === 200)).toBe(true);
    a = await startFakeUpstream({ apiKey: 'key-a', port });
    // The breaker of the killed provider closes again after its cool-down and one good probe.
    await waitUntil('provider a serves again', async () => {
      await chat();
      return served(a) > 0;
    });
  });

  it('opens a failing provider’s breaker after 3 failures, then probes it once and closes it', async () => {
    a.faults.status = 500;
    const beforeA = served(a);
    const started = Date.now();
    for (let i = 0; i < 30; i++) expect((await chat()).status).toBe(200);
    // Three failures, then no more attempts while b can serve, but one probe per cool-down (1 s)
    // that passed during the run (a slow machine may take longer than one for these 30 requests).
    const probes = Math.floor((Date.now() - started) / 1000);
    expect(served(a) - beforeA).toBeGreaterThanOrEqual(3);
    expect(served(a) - beforeA).toBeLessThanOrEqual(3 + probes);
    a.resetFaults();
    const failedAttempts = served(a);
    await waitUntil('the probe reaches a after the cool-down', async () => {
      expect((await chat()).status).toBe(200);
      return served(a) > failedAttempts;
    });
    // The probe succeeded: a is back in the rotation.
    const afterProbe = served(a);
    for (let i = 0; i < 20; i++) expect((await chat()).status).toBe(200);
    expect(served(a)).toBeGreaterThan(afterProbe);
  });

  it('releases the reservation once when every provider fails, and charges nothing', async () => {
    const before = await node.balance(key);
    a.faults.status = 503;
    b.faults.status = 503;
    const failed = await chat();
    expect(failed.status).toBe(503);
    const onlyB = await chat({ model: 'only/b' });
    expect(onlyB.status).toBe(503);
    const after = await node.balance(key);
    expect(after).toMatchObject({ balance: before.balance, reserved: 0, spent: before.spent });
    const rows = (await node.ledger()).slice(-2);
    expect(rows.map((row) => Number(row.charged_msat))).toEqual([0, 0]);
  });

  it('answers 502 with the reservation released when no provider can be reached', async () => {
    const before = await node.balance(key);
    const port = b.port;
    await b.close();
    try {
      const answer = await chat({ model: 'only/b' });
      expect(answer.status).toBe(502);
      expect((answer.json as any).error.code).toBe('upstream_unreachable');
      expect(await node.balance(key)).toMatchObject({ balance: before.balance, reserved: 0 });
    } finally {
      b = await startFakeUpstream({ apiKey: 'key-b', port });
    }
  });
});

describe('provider kinds', () => {
  let upstream: FakeUpstream;
  let node: Node;
  let key: string;
  beforeAll(async () => {
    upstream = await startFakeUpstream();
    const file = providersFile([
      { name: 'claude', kind: 'anthropic', base_url: upstream.url, api_key: 'sk-ant-operator' },
      { name: 'compatible', base_url: upstream.url, api_key: 'sk-or-operator', paths: ['/v1/chat'] },
    ]);
    node = await startNode('sqlite', { upstream, env: { PROXY_PROVIDERS_FILE: file } });
    key = await node.account(100_000_000);
  });
  afterAll(async () => {
    await node?.close();
    await upstream?.close();
  });

  it('sends an Anthropic provider its key as x-api-key with anthropic-version, never as a Bearer token', async () => {
    const answer = await postJson(
      `${node.url}/v1/messages`,
      { model: TEST_MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] },
      { authorization: `Bearer ${key}` },
    );
    expect(answer.status).toBe(200);
    const sent = upstream.requests.at(-1)!;
    expect(sent.url).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe('sk-ant-operator');
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers.authorization).toBeUndefined();
  });

  it('sends an OpenAI-compatible provider a Bearer key, on the paths it serves only', async () => {
    expect(
      (await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` })).status,
    ).toBe(200);
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers.authorization).toBe('Bearer sk-or-operator');
    expect(sent.headers['x-api-key']).toBeUndefined();
    const embeddings = await postJson(
      `${node.url}/v1/embeddings`,
      { model: 'test/embed', input: 'text' },
      { authorization: `Bearer ${key}` },
    );
    expect(embeddings.status).toBe(404);
    expect((embeddings.json as any).error.code).toBe('no_provider');
    expect(await node.balance(key)).toMatchObject({ reserved: 0 });
  });
});

describe.each(databaseKinds)('failover before and after the first byte on %s', (kind) => {
  let first: FakeUpstream;
  let second: FakeUpstream;
  let node: Node;
  let key: string;
  beforeAll(async () => {
    first = await startFakeUpstream({ apiKey: 'k' });
    second = await startFakeUpstream({ apiKey: 'k' });
    // Weights that make `first` the first choice (but for one draw in a million).
    const file = providersFile([
      { name: 'first', base_url: first.url, api_key: 'k', weight: 1_000_000 },
      { name: 'second', base_url: second.url, api_key: 'k', weight: 1 },
    ]);
    node = await startNode(kind, {
      upstream: first,
      env: { PROXY_PROVIDERS_FILE: file, PROXY_UPSTREAM_TIMEOUT_MS: '500', PROXY_BREAKER_FAILURES: '100' },
    });
    key = await node.account(100_000_000);
  });
  afterAll(async () => {
    await node?.close();
    await first?.close();
    await second?.close();
  });
  afterEach(() => {
    first.resetFaults();
    second.resetFaults();
  });

  it('retries a provider that sends no headers in time on the next one, billing once', async () => {
    first.faults.hang = true;
    const before = await node.balance(key);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
    expect(answer.status).toBe(200);
    expect(second.requests.at(-1)?.method).toBe('POST');
    const after = await node.balance(key);
    expect(before.balance - after.balance).toBe(testCost((answer.json as any).usage));
    expect(after).toMatchObject({ reserved: 0, requests: before.requests + 1 });
  });

  it('never retries a stream cut after its first event: the caller sees it cut, billed for what came', async () => {
    first.faults.resetAfterChunks = 2;
    const servedBySecond = served(second);
    const before = await node.balance(key);
    const answer = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody({ stream: true, max_tokens: 50 })),
    });
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toThrow();
    expect(served(second)).toBe(servedBySecond);
    await waitUntil('the cut stream settled', async () => (await node.balance(key)).reserved === 0);
    const row = (await node.ledger()).at(-1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'estimate' });
    expect(before.balance - (await node.balance(key)).balance).toBe(Number(row.charged_msat));
    expect(Number(row.charged_msat)).toBeGreaterThan(0);
  });
});
