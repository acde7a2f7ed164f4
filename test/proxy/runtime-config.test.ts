// The run-time configuration (docs/proxy-operator.md, "Run-time configuration"): a fresh database is
// seeded from PROXY_PROVIDERS_FILE once, and a later start with other files keeps what the database
// holds; a change made on one node is live on another node sharing the database within 5 s; a
// request reserved before a price change settles at the price it reserved at; `quartet proxy-config
// import` replaces the configuration with the files, and running nodes follow.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as configCommand } from '../../src/proxy/operator/config-cli.js';
import { type FakeUpstream, startFakeUpstream } from '../../src/fakeupstream/index.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { request } from '../support/http.js';
import { chatBody, postJson, TEST_MODEL, waitUntil, writeModelsFile } from './forward-helpers.js';
import { modelBody, type OperatorNode, startOperatorNode } from './operator-helpers.js';

function providersFile(providers: unknown[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'quartet-providers-')), 'providers.json');
  writeFileSync(file, JSON.stringify({ providers }));
  return file;
}

const priceOf = async (url: string, model: string) =>
  (await request(`${url}/v1/models`)).json.data.find((m: any) => m.id === model)?.pricing;

describe.each(databaseKinds)('run-time configuration on %s', (kind) => {
  let database: TestDatabase;
  let a: OperatorNode;
  let b: OperatorNode;
  let upstream: FakeUpstream;
  let providerId: number;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    upstream = await startFakeUpstream({ apiKey: 'operator-key' });
    const file = providersFile([
      { name: 'Main_Upstream', base_url: upstream.url, api_key: 'operator-key', weight: 3, models: [TEST_MODEL] },
      {
        name: 'claude',
        kind: 'anthropic',
        base_url: upstream.url,
        api_key: 'operator-key',
        models: [{ id: 'anthropic/x', upstream_id: 'x-1', pricing: { prompt: '0.000003', completion: '0.000015' } }],
      },
    ]);
    a = await startOperatorNode(kind, { database, upstream, env: { PROXY_PROVIDERS_FILE: file } });
    // The second node starts with other files: the database, seeded by the first, wins.
    b = await startOperatorNode(kind, { database, upstream, env: { PROXY_NAME: 'not used' } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await upstream?.close();
    await database?.drop();
  });

  it('seeds a fresh database from the files once; a node started later with other files keeps it', async () => {
    for (const node of [a, b]) {
      const list = (await node.api('GET', '/admin/api/upstream-providers')).json;
      expect(list.map((p: any) => [p.slug, p.provider_type, p.weight])).toEqual([
        ['main-upstream', 'openai', 3],
        ['claude', 'anthropic', 1],
      ]);
    }
    providerId = (await a.api('GET', '/admin/api/upstream-providers/main-upstream')).json.id;
    const claude = (await a.api('GET', '/admin/api/upstream-providers/claude/models')).json.db_models;
    expect(claude).toEqual([
      expect.objectContaining({ id: 'anthropic/x', forwarded_model_id: 'x-1', pricing: expect.any(Object) }),
    ]);
    expect((await request(`${b.url}/v1/info`)).json.name).not.toBe('not used');
  });

  it('makes a change on one node live on the other within 5 s', async () => {
    const started = Date.now();
    const changed = await a.api(
      'POST',
      `/admin/api/upstream-providers/${providerId}/models`,
      modelBody(TEST_MODEL, '0.00001', '0.00002'),
    );
    expect(changed.status).toBe(200);
    expect((await priceOf(a.url, TEST_MODEL)).prompt).toBe('0.00001');
    await waitUntil(
      'the other node to apply the new price',
      async () => (await priceOf(b.url, TEST_MODEL)).prompt === '0.00001',
      5000,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    // Settings too.
    await b.api('PATCH', '/admin/api/settings', { name: 'Shared name' });
    await waitUntil(
      'the name to reach the first node',
      async () => (await request(`${a.url}/v1/info`)).json.name === 'Shared name',
      5000,
    );
  });

  it('settles a request reserved before a price change at its reserved price; the next pays the new one', async () => {
    const key = await a.account(100_000_000);
    // At 0.00001 and 0.00002 USD per token: 10 and 20 msat.
    upstream.faults.chunkDelayMs = 150;
    upstream.faults.completionTokens = 8;
    try {
      const response = await fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody({ stream: true, stream_options: { include_usage: true } })),
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      await reader.read();
      // Mid-stream, the price goes up tenfold (on the other node: every node follows).
      const raised = await b.api(
        'POST',
        `/admin/api/upstream-providers/${providerId}/models`,
        modelBody(TEST_MODEL, '0.0001', '0.0002'),
      );
      expect(raised.status).toBe(200);
      await waitUntil(
        'the raise to reach the node',
        async () => (await priceOf(a.url, TEST_MODEL)).prompt === '0.0001',
        5000,
      );
      let text = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += Buffer.from(chunk.value);
      const usage = JSON.parse(
        text
          .split('\n')
          .filter((line) => line.startsWith('data: {') && line.includes('"usage":{'))
          .at(-1)!
          .slice(6),
      ).usage;
      const next = await postJson(`${a.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
      expect(next.status).toBe(200);
      const rows = (await a.ledger()).filter((r: any) => r.status === 'settled' && r.model === TEST_MODEL);
      const [streamed, after] = rows.slice(-2);
      expect(Number(streamed.charged_msat)).toBe(usage.prompt_tokens * 10 + usage.completion_tokens * 20);
      expect(Number(after.charged_msat)).toBe(
        next.json.usage.prompt_tokens * 100 + next.json.usage.completion_tokens * 200,
      );
    } finally {
      upstream.resetFaults();
    }
  });

  it('imports the files again by `quartet proxy-config import`; running nodes follow within 5 s', async () => {
    const file = providersFile([{ name: 'replacement', base_url: upstream.url, api_key: 'operator-key' }]);
    const code = await configCommand.run(['import'], {
      DATABASE_URL: database.url,
      SERVICES: 'proxy',
      PROXY_PROVIDERS_FILE: file,
      PROXY_MODELS_FILE: writeModelsFile(),
      PROXY_NAME: 'Imported name',
    });
    expect(code).toBe(0);
    for (const node of [a, b]) {
      await waitUntil(
        'the import to be applied',
        async () => (await request(`${node.url}/v1/info`)).json.name === 'Imported name',
        5000,
      );
      const list = (await node.api('GET', '/admin/api/upstream-providers')).json;
      expect(list.map((p: any) => p.slug)).toEqual(['replacement']);
      // Every model of PROXY_MODELS_FILE, at its price again.
      expect((await priceOf(node.url, TEST_MODEL)).prompt).toBe('0.000001');
    }
  });
});
