// The node's settings through the operator API (docs/proxy-operator.md, "Run-time configuration"):
// Routstr's GET/PATCH /admin/api/settings with secrets masked, read-only keys refused when changed,
// PATCH /admin/api/nsec checked and shown in GET /v1/info, and POST /admin/api/config/import putting
// back what the files and environment say.
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { npubEncode, nsecEncode } from 'nostr-tools/nip19';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { TEST_MODEL } from './forward-helpers.js';
import { modelBody, type OperatorNode, startOperatorNode } from './operator-helpers.js';

describe.each(databaseKinds)('operator API: settings on %s', (kind) => {
  let node: OperatorNode;
  beforeAll(async () => {
    node = await startOperatorNode(kind, { env: { PROXY_NAME: 'Seeded node', PROXY_DESCRIPTION: 'from env' } });
  });
  afterAll(async () => node?.close());

  const info = async () => (await request(`${node.url}/v1/info`)).json;

  it("answers Routstr's keys, secrets masked", async () => {
    const settings = await node.api('GET', '/admin/api/settings');
    expect(settings.status).toBe(200);
    expect(settings.json).toMatchObject({
      name: 'Seeded node',
      description: 'from env',
      http_url: '',
      nsec: '',
      npub: '',
      cashu_mints: ['http://127.0.0.1:9'],
      primary_mint: 'http://127.0.0.1:9',
      upstream_base_url: node.upstream.url,
      upstream_api_key: '[REDACTED]',
    });
    expect(settings.text).not.toContain('operator-key');
  });

  it('changes the name, description and URL, live in GET /v1/info; the whole object sent back works', async () => {
    const current = (await node.api('GET', '/admin/api/settings')).json;
    // Routstr's UI sends back everything it read, with its edits and keys this node does not know.
    const changed = await node.api('PATCH', '/admin/api/settings', {
      ...current,
      name: 'Renamed node',
      http_url: 'https://node.example',
      min_payout_sat: 500,
    });
    expect(changed.status).toBe(200);
    expect(changed.json).toMatchObject({ name: 'Renamed node', http_url: 'https://node.example' });
    expect(changed.json).not.toHaveProperty('min_payout_sat');
    expect(await info()).toMatchObject({ name: 'Renamed node', http_url: 'https://node.example' });
    const audit = await node.api('GET', '/admin/api/audit-log?action=settings.update');
    expect(audit.json.entries[0]).toMatchObject({
      before: { name: 'Seeded node', http_url: '' },
      after: { name: 'Renamed node', http_url: 'https://node.example' },
    });
  });

  it("takes routstr-cli's `config set` body, wrapped in __root__", async () => {
    const set = await node.api('PATCH', '/admin/api/settings', { __root__: { description: 'Set by the CLI' } });
    expect(set.status).toBe(200);
    expect(set.json.description).toBe('Set by the CLI');
    expect(await info()).toMatchObject({ description: 'Set by the CLI' });
  });

  it('refuses invalid values and changes to read-only keys with 422, changing nothing', async () => {
    const mints = await node.api('PATCH', '/admin/api/settings', {
      name: 'Should not stick',
      cashu_mints: ['https://other.mint'],
    });
    expect(mints.status).toBe(422);
    expect(mints.json.detail).toEqual([expect.objectContaining({ loc: ['body', 'cashu_mints'] })]);
    const url = await node.api('PATCH', '/admin/api/settings', { http_url: 'not a url', relays: ['http://x'] });
    expect(url.status).toBe(422);
    expect(url.json.detail.map((d: any) => d.loc[1]).sort()).toEqual(['http_url', 'relays']);
    expect((await info()).name).toBe('Renamed node');
  });

  it('sets the Nostr key by PATCH /admin/api/nsec, refusing an invalid one, never showing it', async () => {
    const bad = await node.api('PATCH', '/admin/api/nsec', { nsec: 'nsec1notakey' });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toBe('Invalid nsec');
    const secret = generateSecretKey();
    const nsec = nsecEncode(secret);
    const npub = npubEncode(getPublicKey(secret));
    const set = await node.api('PATCH', '/admin/api/nsec', { nsec });
    expect(set.json).toEqual({ ok: true, npub });
    expect((await info()).npub).toBe(npub);
    const settings = await node.api('GET', '/admin/api/settings');
    expect(settings.json).toMatchObject({ npub, nsec: '[REDACTED]', provider_id: getPublicKey(secret).slice(0, 12) });
    // The redacted nsec sent back with the rest is not a change.
    expect((await node.api('PATCH', '/admin/api/settings', settings.json)).status).toBe(200);
    const audit = await node.api('GET', '/admin/api/audit-log?limit=500');
    expect(audit.text).not.toContain(nsec);
    expect(settings.text).not.toContain(nsec);
    const cleared = await node.api('PATCH', '/admin/api/nsec', { nsec: '' });
    expect(cleared.json).toEqual({ ok: true, npub: '' });
    expect((await info()).npub).toBeNull();
  });

  it('imports the files and environment again, replacing what the API changed', async () => {
    const [seeded] = (await node.api('GET', '/admin/api/upstream-providers')).json;
    await node.api('PATCH', `/admin/api/upstream-providers/${seeded.id}`, { weight: 7 });
    await node.api('POST', `/admin/api/upstream-providers/${seeded.id}/models`, modelBody('extra/model', 0, 0));
    const imported = await node.api('POST', '/admin/api/config/import', {});
    expect(imported.status).toBe(200);
    expect(imported.json).toMatchObject({ ok: true, providers: 1, models: 2 });
    expect(await info()).toMatchObject({ name: 'Seeded node', http_url: null });
    const [provider] = (await node.api('GET', '/admin/api/upstream-providers')).json;
    expect(provider).toMatchObject({ slug: 'upstream', weight: 1 });
    const ids = (await request(`${node.url}/v1/models`)).json.data.map((m: any) => m.id);
    expect(ids).toContain(TEST_MODEL);
    expect(ids).not.toContain('extra/model');
    const audit = await node.api('GET', '/admin/api/audit-log?action=config.import');
    expect(audit.json.entries).toHaveLength(1);
  });
});
