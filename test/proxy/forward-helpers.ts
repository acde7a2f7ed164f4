// Helpers of the forwarding, billing, streaming, X-Cashu and admin tests: a node in front of the
// fake upstream, with round test prices, and accounts funded directly in the database.
import { randomBytes, createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream, type FakeUpstream } from '../../src/fakeupstream/index.js';
import type { DatabaseKind, TestDatabase } from '../support/databases.js';
import { request } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * At PROXY_BTC_USD=100000, 1 USD = 1,000,000 msat: prompt 1 msat/token, completion 2 msat/token,
 * 10 msat per request.
 */
export const TEST_MODEL = 'test/model';
export const PRICES = { prompt: 1, completion: 2, request: 10 };

export function writeModelsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'quartet-models-'));
  const file = join(dir, 'models.json');
  writeFileSync(
    file,
    JSON.stringify({
      data: [
        {
          id: TEST_MODEL,
          name: 'Test model',
          context_length: 32000,
          pricing: { prompt: '0.000001', completion: '0.000002', request: '0.00001' },
          top_provider: { max_completion_tokens: 1000 },
        },
        { id: 'test/embed', name: 'Test embeddings', pricing: { prompt: '0.000001', completion: '0' } },
      ],
    }),
  );
  return file;
}

export interface Node {
  server: TestServer;
  upstream: FakeUpstream;
  url: string;
  /** Creates an account holding `msat`; returns its API key. */
  account(msat: number): Promise<string>;
  balance(key: string): Promise<{ balance: number; reserved: number; spent: number; requests: number }>;
  ledger(): Promise<any[]>;
  close(): Promise<void>;
}

export interface NodeOptions {
  env?: Record<string, string>;
  database?: TestDatabase;
  upstream?: FakeUpstream;
}

export async function startNode(kind: DatabaseKind, options: NodeOptions = {}): Promise<Node> {
  const upstream = options.upstream ?? (await startFakeUpstream({ apiKey: 'operator-key' }));
  const server = await startTestServer(kind, {
    database: options.database,
    env: {
      SERVICES: 'proxy',
      PROXY_UPSTREAM_URL: upstream.url,
      PROXY_UPSTREAM_KEY: 'operator-key',
      PROXY_BTC_USD: '100000',
      PROXY_MODELS_FILE: writeModelsFile(),
      PROXY_MINTS: 'http://127.0.0.1:9',
      ...options.env,
    },
  });
  const db = server.db.kysely;
  const keyHash = (key: string) => createHash('sha256').update(key).digest('hex');
  return {
    server,
    upstream,
    url: server.url,
    async account(msat) {
      const key = `sk-${randomBytes(24).toString('hex')}`;
      await db
        .insertInto('proxy_accounts')
        .values({
          key_hash: keyHash(key),
          key_prefix: key.slice(0, 12),
          balance_msat: msat,
          mint_url: 'http://127.0.0.1:9',
          unit: 'sat',
          created_at: Date.now(),
          last_used_at: null,
        })
        .execute();
      return key;
    },
    async balance(key) {
      const row = await db
        .selectFrom('proxy_accounts')
        .selectAll()
        .where('key_hash', '=', keyHash(key))
        .executeTakeFirstOrThrow();
      return {
        balance: Number(row.balance_msat),
        reserved: Number(row.reserved_msat),
        spent: Number(row.total_spent_msat),
        requests: Number(row.total_requests),
      };
    },
    async ledger() {
      return db.selectFrom('proxy_requests').selectAll().orderBy('id').execute();
    },
    async close() {
      await server.close();
      if (!options.upstream) await upstream.close();
    },
  };
}

/** The cost in msat of a usage at the test prices. */
export function testCost(usage: { prompt_tokens: number; completion_tokens: number }): number {
  return usage.prompt_tokens * PRICES.prompt + usage.completion_tokens * PRICES.completion + PRICES.request;
}

/** A path forwarded free to a valid key (GET /v1/models itself is the node's own list). */
export const FREE_PATH = '/v1/models/openai/gpt-4o-mini';

export const chatBody = (extra: Record<string, unknown> = {}) => ({
  model: TEST_MODEL,
  messages: [{ role: 'user', content: 'Hello there, node!' }],
  ...extra,
});

/** POSTs `body` as JSON; the answer's `json` is undefined when it is not JSON. */
export const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, 'POST', { json: body, headers });

export async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
