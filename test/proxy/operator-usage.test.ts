// Usage analytics of the operator API (docs/proxy-operator.md, "Usage analytics"): billed requests
// through two providers from two keys, one of them failing upstream, then every usage route's
// counts, tokens, charges, errors and latencies checked against what the requests answered.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../src/fakeupstream/index.js';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { rollUpOnce } from '../../src/proxy/usage/store.js';
import { chatBody, postJson, startNode, TEST_MODEL, type Node } from './forward-helpers.js';

const PASSWORD = 'operator-password-123';
const BETA_MODEL = 'test/beta';
const SLOW_MS = 400;

function providersFile(alpha: FakeUpstream, beta: FakeUpstream): string {
  const dir = mkdtempSync(join(tmpdir(), 'quartet-providers-'));
  const file = join(dir, 'providers.json');
  writeFileSync(
    file,
    JSON.stringify({
      providers: [
        { name: 'alpha', base_url: alpha.url, api_key: 'operator-key', models: [TEST_MODEL] },
        {
          name: 'beta',
          base_url: beta.url,
          api_key: 'operator-key',
          models: [
            {
              id: BETA_MODEL,
              context_length: 32000,
              pricing: { prompt: '0.000002', completion: '0.000004' },
              top_provider: { max_completion_tokens: 1000 },
            },
          ],
        },
      ],
    }),
  );
  return file;
}

interface Sent {
  key: string;
  model: string;
  provider: string;
  ok: boolean;
  charged: number;
  prompt: number;
  completion: number;
  requestId: string;
}

describe.each(databaseKinds)('operator usage analytics (%s)', (kind) => {
  let node: Node;
  let alpha: FakeUpstream;
  let beta: FakeUpstream;
  let token: string;
  const sent: Sent[] = [];
  const keys: string[] = [];

  const get = async (path: string) => {
    const answer = await request(`${node.url}${path}`, 'GET', { headers: { authorization: `Bearer ${token}` } });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    return answer.json;
  };

  async function chat(key: string, model: string, provider: string) {
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody({ model, max_tokens: 20 }), {
      authorization: `Bearer ${key}`,
    });
    const ok = answer.status === 200;
    sent.push({
      key,
      model,
      provider,
      ok,
      charged: ok ? Number(answer.headers.get('x-cashu-cost-msat')) : 0,
      prompt: ok ? answer.json.usage.prompt_tokens : 0,
      completion: ok ? answer.json.usage.completion_tokens : 0,
      requestId: answer.headers.get('x-request-id') ?? '',
    });
    return answer;
  }

  const sum = (list: Sent[], field: 'charged' | 'prompt' | 'completion') =>
    list.reduce((total, s) => total + s[field], 0);

  beforeAll(async () => {
    alpha = await startFakeUpstream({ apiKey: 'operator-key' });
    beta = await startFakeUpstream({ apiKey: 'operator-key' });
    node = await startNode(kind, {
      upstream: alpha,
      env: { PROXY_PROVIDERS_FILE: providersFile(alpha, beta), PROXY_ADMIN_PASSWORD: PASSWORD },
    });
    const login = await postJson(`${node.url}/admin/api/login`, { password: PASSWORD });
    expect(login.status).toBe(200);
    token = login.json.token;
    keys.push(await node.account(10_000_000), await node.account(10_000_000));

    for (let i = 0; i < 3; i++) expect((await chat(keys[0], TEST_MODEL, 'alpha')).status).toBe(200);
    beta.faults.delayMs = SLOW_MS;
    for (let i = 0; i < 2; i++) expect((await chat(keys[1], BETA_MODEL, 'beta')).status).toBe(200);
    beta.faults.delayMs = 0;
    alpha.faults.status = 500;
    expect((await chat(keys[0], TEST_MODEL, 'alpha')).status).toBe(500);
    alpha.faults.status = null;
  }, 60_000);

  afterAll(async () => {
    await node?.close();
    await alpha?.close();
    await beta?.close();
  });

  it('refuses callers without a credential and out-of-range parameters', async () => {
    expect((await request(`${node.url}/admin/api/usage/summary`)).status).toBe(401);
    const auth = { headers: { authorization: `Bearer ${token}` } };
    expect((await request(`${node.url}/admin/api/usage/summary?hours=0`, 'GET', auth)).status).toBe(422);
    expect((await request(`${node.url}/admin/api/usage/summary?hours=8761`, 'GET', auth)).status).toBe(422);
    expect((await request(`${node.url}/admin/api/usage/metrics?interval=1441`, 'GET', auth)).status).toBe(422);
    expect((await request(`${node.url}/admin/api/usage/breakdown?by=account`, 'GET', auth)).status).toBe(422);
  });

  it('summary counts requests, tokens, revenue and failures', async () => {
    const summary = await get('/admin/api/usage/summary?hours=1');
    const ok = sent.filter((s) => s.ok);
    expect(summary.total_requests).toBe(6);
    expect(summary.successful_chat_completions).toBe(5);
    expect(summary.failed_requests).toBe(1);
    expect(summary.upstream_errors).toBe(1);
    expect(summary.input_tokens).toBe(sum(ok, 'prompt'));
    expect(summary.output_tokens).toBe(sum(ok, 'completion'));
    expect(summary.total_tokens).toBe(sum(ok, 'prompt') + sum(ok, 'completion'));
    expect(summary.revenue_msats).toBe(sum(ok, 'charged'));
    expect(summary.revenue_sats).toBe(sum(ok, 'charged') / 1000);
    expect(summary.unique_models).toEqual([BETA_MODEL, TEST_MODEL]);
    expect(summary.providers).toEqual(['alpha', 'beta']);
    expect(summary.error_types).toEqual({ upstream_500: 1 });
    expect(summary.success_rate).toBeCloseTo((5 / 6) * 100);
  });

  it('metrics: the buckets add up to the requests, with latency percentiles', async () => {
    const metrics = await get('/admin/api/usage/metrics?interval=60&hours=2');
    expect(metrics.interval_minutes).toBe(60);
    expect(metrics.metrics.length).toBeGreaterThanOrEqual(1);
    expect(metrics.metrics.length).toBeLessThanOrEqual(2); // the requests may straddle an hour
    const total = (field: string) => metrics.metrics.reduce((n: number, b: any) => n + b[field], 0);
    expect(total('total_requests')).toBe(6);
    expect(total('successful_chat_completions')).toBe(5);
    expect(total('failed_requests')).toBe(1);
    expect(total('revenue_msats')).toBe(sum(sent, 'charged'));
    expect(metrics.totals.total_requests).toBe(6);
    for (const bucket of metrics.metrics) {
      expect(bucket.timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:00:00$/);
      expect(bucket.requests).toBe(bucket.total_requests);
    }
    // Two of five settled requests took SLOW_MS: the p99 is a slow one, within the histogram's 10%.
    const slowest = Math.max(...metrics.metrics.map((b: any) => b.latency.p99_ms ?? 0));
    expect(slowest).toBeGreaterThanOrEqual(SLOW_MS * 0.9);
    // A finer interval over a long range is widened to at most 1000 buckets.
    const wide = await get('/admin/api/usage/metrics?interval=1&hours=8760');
    expect(wide.interval_minutes).toBeGreaterThanOrEqual(Math.ceil((8760 * 60) / 1000));
    expect(wide.totals.total_requests).toBe(6);
  });

  it('revenue by model and the error details', async () => {
    const revenue = await get('/admin/api/usage/revenue-by-model?hours=1');
    expect(revenue.total_models).toBe(2);
    const byModel = new Map(revenue.models.map((m: any) => [m.model, m]));
    for (const model of [TEST_MODEL, BETA_MODEL]) {
      const mine = sent.filter((s) => s.model === model);
      const row: any = byModel.get(model);
      expect(row.requests).toBe(mine.length);
      expect(row.successful).toBe(mine.filter((s) => s.ok).length);
      expect(row.failed).toBe(mine.filter((s) => !s.ok).length);
      expect(row.revenue_sats).toBe(sum(mine, 'charged') / 1000);
    }
    expect(revenue.total_revenue_sats).toBe(sum(sent, 'charged') / 1000);
    expect((await get('/admin/api/usage/revenue-by-model?hours=1&limit=1')).models).toHaveLength(1);

    const errors = await get('/admin/api/usage/error-details?hours=1');
    const failed = sent.find((s) => !s.ok)!;
    expect(errors.total_count).toBe(1);
    expect(errors.errors).toHaveLength(1);
    expect(errors.errors[0]).toMatchObject({
      error_type: 'upstream_500',
      request_id: failed.requestId,
      pathname: '/v1/chat/completions',
      model: TEST_MODEL,
      provider: 'alpha',
      upstream_status: 500,
    });
  });

  it('breakdown by provider, key and model, with latency percentiles', async () => {
    const providers = await get('/admin/api/usage/breakdown?by=provider&hours=1');
    const alphaRow = providers.rows.find((r: any) => r.provider === 'alpha');
    const betaRow = providers.rows.find((r: any) => r.provider === 'beta');
    expect(alphaRow).toMatchObject({ requests: 4, successful: 3, failed: 1, upstream_errors: 1 });
    expect(betaRow).toMatchObject({ requests: 2, successful: 2, failed: 0 });
    expect(betaRow.charged_msat).toBe(
      sum(
        sent.filter((s) => s.provider === 'beta'),
        'charged',
      ),
    );
    expect(betaRow.latency.p50_ms).toBeGreaterThanOrEqual(SLOW_MS * 0.9);
    expect(alphaRow.latency.p50_ms).toBeLessThan(SLOW_MS * 0.9);

    const byKey = await get('/admin/api/usage/breakdown?by=key&hours=1');
    expect(byKey.total_rows).toBe(2);
    for (const key of keys) {
      const mine = sent.filter((s) => s.key === key);
      const row = byKey.rows.find((r: any) => r.key_prefix === key.slice(0, 12));
      expect(row).toMatchObject({
        requests: mine.length,
        successful: mine.filter((s) => s.ok).length,
        input_tokens: sum(mine, 'prompt'),
        output_tokens: sum(mine, 'completion'),
        charged_msat: sum(mine, 'charged'),
      });
    }

    const byModel = await get('/admin/api/usage/breakdown?by=model&hours=1&limit=1');
    expect(byModel.rows).toHaveLength(1);
    expect(byModel.total_rows).toBe(2);
  });

  it('dashboard: every part in one answer, with the model mix', async () => {
    const dashboard = await get('/admin/api/usage/dashboard?hours=1&interval=15');
    expect(dashboard.summary.total_requests).toBe(6);
    expect(dashboard.metrics.totals.total_requests).toBe(6);
    expect(dashboard.error_details.total_count).toBe(1);
    expect(dashboard.revenue_by_model.total_models).toBe(2);
    const mix = dashboard.model_usage_mix;
    expect([...mix.top_models].sort()).toEqual([BETA_MODEL, TEST_MODEL]);
    const counted = mix.metrics.reduce(
      (n: number, b: any) => n + (Object.values(b.model_counts) as number[]).reduce((a, c) => a + c, 0) + b.others,
      0,
    );
    expect(counted).toBe(5);
  });

  it('a request made after a query is counted by the next one', async () => {
    expect((await chat(keys[1], BETA_MODEL, 'beta')).status).toBe(200);
    const summary = await get('/admin/api/usage/summary?hours=1');
    expect(summary.total_requests).toBe(7);
    expect(summary.revenue_msats).toBe(sum(sent, 'charged'));
  });
});

describe.each(databaseKinds)('the usage job with many requests in flight (%s)', (kind) => {
  it('stops when only reservations wait (a page of long streams is not read again and again)', async () => {
    const node = await startNode(kind);
    try {
      const db = node.server.db.kysely;
      const now = Date.now();
      const row = (status: 'reserved' | 'settled', i: number) => ({
        account_id: 1,
        request_id: `bench-${i}`,
        path: '/v1/chat/completions',
        model: TEST_MODEL,
        stream: 1,
        payment: 'key' as const,
        status,
        reserved_msat: 1000,
        charged_msat: status === 'settled' ? 700 : 0,
        created_at: now,
        heartbeat_at: now,
        settled_at: status === 'settled' ? now + 5 : null,
      });
      // More reservations than one page of the job's pending rows (1,000), then one finished request.
      const reserved = Array.from({ length: 1_050 }, (_, i) => row('reserved', i));
      for (let i = 0; i < reserved.length; i += 200) {
        await db
          .insertInto('proxy_requests')
          .values(reserved.slice(i, i + 200))
          .execute();
      }
      await db.insertInto('proxy_requests').values(row('settled', 9_999)).execute();
      // The job's first run counts the finished request and keeps the reservations pending; the
      // next finds a full page of pending rows all still reserved: nothing new, so no run after it
      // (the job's timer runs as many batches as it is told there is more).
      const first = await rollUpOnce(node.server.db, Date.now());
      expect(first.counted).toBe(1);
      const second = await rollUpOnce(node.server.db, Date.now());
      expect(second).toEqual({ counted: 0, more: false });
      const counted = await db
        .selectFrom('proxy_usage_rollup')
        .select(({ fn }) => fn.sum<number>('settled').as('settled'))
        .where('grain', '=', 'm')
        .executeTakeFirstOrThrow();
      expect(Number(counted.settled)).toBe(1);
      const waiting = await db
        .selectFrom('proxy_usage_pending')
        .select(({ fn }) => fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(waiting.n)).toBe(1_050);
    } finally {
      await node.close();
    }
  }, 30_000);
});
