// Routstr's provider and model routes of the operator API (docs/proxy-operator.md, "Providers and
// models"): a node seeded with the fake upstream, a second fake upstream added, checked, changed and
// removed through /admin/api/upstream-providers; its models priced there and served at once; the
// answers in Routstr's shapes, keys masked, errors 401/404/409/422/400, every change audited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from '../../src/fakeupstream/index.js';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { chatBody, postJson, TEST_MODEL } from './forward-helpers.js';
import { modelBody, type OperatorNode, startOperatorNode } from './operator-helpers.js';

const SECOND_KEY = 'second-upstream-secret-key';

describe.each(databaseKinds)('operator API: providers and models on %s', (kind) => {
  let node: OperatorNode;
  let second: FakeUpstream;
  let secondId: number;

  beforeAll(async () => {
    node = await startOperatorNode(kind);
    second = await startFakeUpstream({ apiKey: SECOND_KEY });
  });
  afterAll(async () => {
    await node?.close();
    await second?.close();
  });

  const providers = async () => (await node.api('GET', '/admin/api/upstream-providers')).json as any[];

  it('needs an operator', async () => {
    const answer = await request(`${node.url}/admin/api/upstream-providers`);
    expect(answer.status).toBe(401);
    expect(typeof answer.json.detail).toBe('string');
  });

  it('lists the provider seeded from PROXY_UPSTREAM_URL, its key masked as Routstr masks it', async () => {
    const list = await providers();
    expect(list).toEqual([
      expect.objectContaining({
        id: expect.any(Number),
        slug: 'upstream',
        provider_type: 'openai',
        base_url: node.upstream.url,
        api_key: '[REDACTED]',
        enabled: true,
        provider_fee: 1,
      }),
    ]);
    const models = await node.api('GET', `/admin/api/upstream-providers/${list[0].id}/models`);
    expect(models.status).toBe(200);
    expect(models.json.provider).toEqual({ id: list[0].id, provider_type: 'openai', base_url: node.upstream.url });
    const seeded = models.json.db_models.find((m: any) => m.id === TEST_MODEL);
    expect(seeded.pricing).toMatchObject({ prompt: 0.000001, completion: 0.000002, request: 0.00001 });
    expect(seeded).toMatchObject({ context_length: 32000, enabled: true, upstream_provider_id: list[0].id });
    expect(models.json.remote_models).toEqual(expect.any(Array));
  });

  it('lists the provider types it forwards to, none with balances or top-ups', async () => {
    const types = (await node.api('GET', '/admin/api/provider-types')).json as any[];
    expect(types.map((t) => t.id)).toEqual(
      expect.arrayContaining(['openai', 'anthropic', 'openrouter', 'generic', 'custom', 'groq', 'x-ai']),
    );
    for (const type of types) {
      expect(type).toMatchObject({ can_create_account: false, can_topup: false, can_show_balance: false });
      expect(typeof type.default_base_url).toBe('string');
    }
  });

  it('refuses invalid fields with 422, an unreachable provider or a refused key with 400, saving nothing', async () => {
    const base = { provider_type: 'generic', base_url: `${second.url}/v1`, api_key: SECOND_KEY };
    const badType = await node.api('POST', '/admin/api/upstream-providers', { ...base, provider_type: 'ppqai' });
    expect(badType.status).toBe(422);
    expect(badType.json.detail[0].loc).toEqual(['body', 'provider_type']);
    const badUrl = await node.api('POST', '/admin/api/upstream-providers', { ...base, base_url: 'ftp://example' });
    expect(badUrl.status).toBe(422);
    const badSlug = await node.api('POST', '/admin/api/upstream-providers', { ...base, slug: 'Not A Slug' });
    expect(badSlug.status).toBe(422);
    const wrongKey = await node.api('POST', '/admin/api/upstream-providers', { ...base, api_key: 'wrong' });
    expect(wrongKey.status).toBe(400);
    expect(wrongKey.json.detail).toMatch(/refused the API key/);
    const away = await node.api('POST', '/admin/api/upstream-providers', {
      ...base,
      base_url: 'http://127.0.0.1:9/v1',
    });
    expect(away.status).toBe(400);
    expect(away.json.detail).toMatch(/cannot be reached/);
    expect(await providers()).toHaveLength(1);
  });

  it('adds a provider after checking it, and refuses a twin or a taken slug with 409', async () => {
    const created = await node.api('POST', '/admin/api/upstream-providers', {
      provider_type: 'generic',
      base_url: `${second.url}/v1`,
      api_key: SECOND_KEY,
      provider_fee: 1.5,
    });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ slug: 'generic', api_key: '[REDACTED]', provider_fee: 1.5, enabled: true });
    expect(created.text).not.toContain(SECOND_KEY);
    secondId = created.json.id;
    const twin = await node.api('POST', '/admin/api/upstream-providers', {
      provider_type: 'openai',
      base_url: `${second.url}/v1`,
      api_key: SECOND_KEY,
    });
    expect(twin.status).toBe(409);
    const taken = await node.api('POST', '/admin/api/upstream-providers', {
      provider_type: 'generic',
      base_url: second.url,
      api_key: SECOND_KEY,
      slug: 'upstream',
    });
    expect(taken.status).toBe(409);
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}`)).json.slug).toBe('generic');
    expect((await node.api('GET', '/admin/api/upstream-providers/generic')).json.id).toBe(secondId);
    expect((await node.api('GET', '/admin/api/upstream-providers/424242')).status).toBe(404);
    expect((await node.api('GET', '/admin/api/upstream-providers/no-such-one')).status).toBe(404);
  });

  it("serves a model added to the provider at once, at its price times the provider's fee", async () => {
    const added = await node.api(
      'POST',
      `/admin/api/upstream-providers/${secondId}/models`,
      modelBody('vendor/m1', 0.000002, 0.000004, { forwarded_model_id: 'upstream-m1' }),
    );
    expect(added.status).toBe(200);
    expect(added.json).toMatchObject({
      id: 'vendor/m1',
      forwarded_model_id: 'upstream-m1',
      upstream_provider_id: secondId,
    });
    const one = await node.api(
      'GET',
      `/admin/api/upstream-providers/${secondId}/models/${encodeURIComponent('vendor/m1')}`,
    );
    expect(one.json.pricing).toMatchObject({ prompt: 0.000002, completion: 0.000004 });
    // Routstr's clients also send the id unencoded ({model_id:path}).
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}/models/vendor/m1`)).status).toBe(200);

    const listed = (await request(`${node.url}/v1/models`)).json.data.find((m: any) => m.id === 'vendor/m1');
    expect(listed.pricing).toMatchObject({ prompt: '0.000003', completion: '0.000006' });
    const key = await node.account(10_000_000);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody({ model: 'vendor/m1' }), {
      authorization: `Bearer ${key}`,
    });
    expect(answer.status).toBe(200);
    const sent = second.requests.filter((r) => r.method === 'POST').at(-1);
    expect(sent?.body).toMatchObject({ model: 'upstream-m1' });
    const [row] = (await node.ledger()).filter((r: any) => r.model === 'vendor/m1');
    const usage = answer.json.usage;
    // 3 and 6 msat per token at 100,000 USD/BTC.
    expect(Number(row.charged_msat)).toBe(usage.prompt_tokens * 3 + usage.completion_tokens * 6);
  });

  it('upserts models by the legacy PATCH and in a batch, and answers 404 for an unknown model', async () => {
    const patched = await node.api(
      'PATCH',
      `/admin/api/upstream-providers/${secondId}/models/${encodeURIComponent('vendor/m1')}`,
      modelBody('vendor/m1', '0.000001', '0.000001'),
    );
    expect(patched.status).toBe(200);
    // forwarded_model_id stays unless the body names it, as in Routstr.
    expect(patched.json.forwarded_model_id).toBe('upstream-m1');
    const batch = await node.api('POST', `/admin/api/upstream-providers/${secondId}/batch-override`, {
      models: [modelBody('vendor/m2', 0.000001, 0.000001), modelBody('vendor/m3', 0.000001, 0.000001)],
    });
    expect(batch.json).toEqual({ ok: true, count: 2, message: 'Successfully batch overridden 2 models' });
    const all = await node.api('GET', `/admin/api/upstream-providers/${secondId}/models`);
    expect(all.json.db_models.map((m: any) => m.id)).toEqual(['vendor/m1', 'vendor/m2', 'vendor/m3']);
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}/models/nope`)).status).toBe(404);
    const negative = await node.api(
      'POST',
      `/admin/api/upstream-providers/${secondId}/models`,
      modelBody('vendor/bad', -1, 0.000001),
    );
    expect(negative.status).toBe(422);
    const deleted = await node.api('DELETE', `/admin/api/upstream-providers/${secondId}/models/vendor%2Fm3`);
    expect(deleted.json).toEqual({ ok: true, deleted_id: 'vendor/m3' });
    expect((await node.api('DELETE', `/admin/api/upstream-providers/${secondId}/models/vendor%2Fm3`)).status).toBe(404);
  });

  it('takes a disabled provider out of service and changes a provider by slug', async () => {
    const off = await node.api('PATCH', `/admin/api/upstream-providers/${secondId}`, { enabled: false });
    expect(off.json.enabled).toBe(false);
    const ids = (await request(`${node.url}/v1/models`)).json.data.map((m: any) => m.id);
    expect(ids).not.toContain('vendor/m1');
    expect(ids).toContain(TEST_MODEL);
    const taken = await node.api('PATCH', `/admin/api/upstream-providers/${secondId}`, { slug: 'upstream' });
    expect(taken.status).toBe(409);
    const bySlug = await node.api('PATCH', '/admin/api/upstream-providers', {
      slug: 'generic',
      new_slug: 'second',
      enabled: true,
      weight: 2,
    });
    expect(bySlug.status).toBe(200);
    expect(bySlug.json).toMatchObject({ slug: 'second', enabled: true, weight: 2 });
    expect((await request(`${node.url}/v1/models`)).json.data.map((m: any) => m.id)).toContain('vendor/m1');
    const badKey = await node.api('PATCH', `/admin/api/upstream-providers/${secondId}`, { api_key: 'wrong' });
    expect(badKey.status).toBe(400);
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}`)).json.slug).toBe('second');
  });

  it('offers the models file as presets, in the model shape with USD prices per token', async () => {
    const presets = await node.api('GET', '/admin/api/openrouter-presets');
    expect(presets.status).toBe(200);
    const preset = (presets.json as any[]).find((m) => m.id === TEST_MODEL);
    // The test file's prices: 1 and 2 USD per million tokens, 10 USD a million requests (forward-helpers.ts).
    expect(preset.pricing).toMatchObject({ prompt: 0.000001, completion: 0.000002, request: 0.00001 });
    expect(preset).toMatchObject({ name: expect.any(String), enabled: true });
  });

  it("answers provider account routes it does not support in the API's error shape", async () => {
    const balance = await node.api('GET', `/admin/api/upstream-providers/${secondId}/balance`);
    expect(balance.status).toBe(400);
    expect(balance.json).toMatchObject({
      detail: 'Provider does not support balance checking',
      error: { code: 'not_supported' },
    });
    expect((await node.api('POST', `/admin/api/upstream-providers/${secondId}/topup`, { amount: 1000 })).status).toBe(
      400,
    );
    expect((await node.api('POST', `/admin/api/upstream-providers/${secondId}/routstr/refund`, {})).status).toBe(400);
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}/ppq-auto-topup`)).status).toBe(400);
    expect((await node.api('GET', '/admin/api/upstream-providers/424242/balance')).status).toBe(404);
    const account = await node.api('POST', '/admin/api/upstream-providers/create-account', { provider_type: 'openai' });
    expect(account.status).toBe(400);
    expect(
      (await node.api('POST', '/admin/api/upstream-providers/create-account', { provider_type: 'x' })).status,
    ).toBe(404);
  });

  it('removes every model, then the provider; every change is in the audit log without the key', async () => {
    const cleared = await node.api('DELETE', `/admin/api/upstream-providers/${secondId}/models`);
    expect(cleared.json).toEqual({ ok: true, deleted: 2 });
    const removed = await node.api('DELETE', `/admin/api/upstream-providers/${secondId}`);
    expect(removed.json).toEqual({ ok: true, deleted_id: secondId });
    expect((await node.api('GET', `/admin/api/upstream-providers/${secondId}`)).status).toBe(404);
    expect(await providers()).toHaveLength(1);
    const audit = await node.api('GET', '/admin/api/audit-log?limit=500');
    const actions = audit.json.entries.map((e: any) => e.action);
    for (const action of [
      'provider.create',
      'provider.update',
      'provider.delete',
      'model.create',
      'model.update',
      'model.delete',
      'model.delete_all',
    ]) {
      expect(actions).toContain(action);
    }
    const created = audit.json.entries.find((e: any) => e.action === 'provider.create');
    expect(created.after).toMatchObject({ slug: 'generic', api_key: '[REDACTED]' });
    expect(audit.text).not.toContain(SECOND_KEY);
  });
});
