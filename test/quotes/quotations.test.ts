// The quotation over HTTP with gettext sample files: exact string and word counts for every
// flag combination, prices rounded half-up, timestamps, list encodings, orders and auth.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, startQuotesServer } from './helpers.js';

const ADMIN = { email: 'quotes-admin@example.test', password: 'quotes admin password 1' };
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/;

// de-DE in messages.de.po against messages.pot (see the fixture comments in docs/quotes.md):
//   not translated: a plural as msgmerge leaves it, a single msgstr[0] "" (8 words), "Open" in
//                   context button (1),
//                   "Good morning…" absent from the file (8)            → 3 strings, 17 words
//   not approved:   the fuzzy "process number %d." (8)                     → 1 string, 8 words
//   outdated:       the fuzzy entry whose #| msgid differs (5)             → 1 string, 5 words
//   approved:       "Hello, world!" (2), menu "Open" (1), "Report bugs…" (6) → 3 strings, 9 words
const COMBINATIONS: [boolean, boolean, boolean, number, number][] = [
  [true, true, true, 5, 30],
  [true, true, false, 4, 25],
  [true, false, true, 4, 22],
  [false, true, true, 2, 13],
  [true, false, false, 3, 17],
  [false, true, false, 1, 8],
  [false, false, true, 1, 5],
  [false, false, false, 0, 0],
];

const RATES = {
  rates: {
    'de-DE': {
      general: { translation_only: '0.0125', translation_and_review: '0.02', review_only: '0.005' },
      game: { translation_only: '0.15', translation_and_review: '0.225', review_only: '0.075' },
    },
  },
  translators: {
    'de-DE': [
      {
        name: 'Anna',
        time_zone: 'Europe/Berlin',
        hours: [9, 17],
        words_per_day_translation: 2000,
        words_per_day_review: 6000,
      },
      {
        name: 'Bernd',
        time_zone: 'Europe/Berlin',
        hours: [10, 18],
        words_per_day_translation: 1500,
        words_per_day_review: 4500,
      },
      { name: 'Clara', time_zone: 'Europe/Berlin', hours: [9, 17] },
    ],
  },
};

describe.each(databaseKinds)('quotations on %s', (kind) => {
  let server: TestServer;
  let client: Client;
  let project: number;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quartet-rates-'));
    writeFileSync(join(dir, 'rates.json'), JSON.stringify(RATES));
    server = await startQuotesServer(kind, {
      QUOTES_RATES_FILE: join(dir, 'rates.json'),
      USERS_ADMIN_EMAIL: ADMIN.email,
      USERS_ADMIN_PASSWORD: ADMIN.password,
    });
    client = await Client.create(server.url);
    project = await client.createProject('en-US', ['de-DE', 'ja-JP']);
    const base = await client.importFile(project, 'messages.po', fixture('messages.pot'), 'GNU_PO');
    expect(base).toMatchObject({ status: 'completed', string_count: 8, word_count: 39 });
    const other = await client.importFile(project, 'other.po', fixture('other.pot'), 'GNU_POT');
    expect(other).toMatchObject({ status: 'completed', string_count: 2, word_count: 6 });
    const german = await client.importFile(project, 'messages.po', fixture('messages.de.po'), 'GNU_PO', {
      locale: 'de-DE',
    });
    expect(german).toMatchObject({ status: 'completed', string_count: 7 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const quote = (query: string) => client.get(`/1/projects/${project}/quotations?${query}`);

  it.each(COMBINATIONS)(
    'not translated %s, not approved %s, outdated %s → %i strings, %i words',
    async (nt, na, od, strings, words) => {
      const answer = await quote(
        `files=messages.po&to_locale=de-DE&is_including_not_translated=${nt}` +
          `&is_including_not_approved=${na ? 1 : 0}&is_including_outdated=${od}`,
      );
      expect(answer.status).toBe(200);
      const data = answer.body.data;
      expect(data.is_including_not_translated).toBe(nt);
      expect(data.is_including_not_approved).toBe(na);
      expect(data.is_including_outdated).toBe(od);
      for (const level of ['translation_only', 'translation_and_review', 'review_only']) {
        expect(data[level].string_count).toBe(strings);
        expect(data[level].word_count).toBe(words);
      }
    },
  );

  it('answers every field of the Quotation body with its type and defaults', async () => {
    const before = Math.floor(Date.now() / 1000);
    const answer = await quote('files=messages.po&to_locale=de-DE');
    expect(answer.status).toBe(200);
    expect(answer.body.meta).toEqual({ status: 200 });
    const data = answer.body.data;
    expect(Object.keys(data).sort()).toEqual(
      [
        'files',
        'from_language',
        'to_language',
        'is_including_not_translated',
        'is_including_not_approved',
        'is_including_outdated',
        'specialization',
        'translation_only',
        'translation_and_review',
        'review_only',
      ].sort(),
    );
    expect(data.files).toEqual([{ name: 'messages.po' }]);
    expect(data.from_language).toEqual({
      code: 'en-US',
      english_name: 'English (United States)',
      local_name: 'English (United States)',
      locale: 'en',
      region: 'US',
    });
    expect(data.to_language).toEqual({
      code: 'de-DE',
      english_name: 'German (Germany)',
      local_name: 'Deutsch (Deutschland)',
      locale: 'de',
      region: 'DE',
    });
    expect([data.is_including_not_translated, data.is_including_not_approved, data.is_including_outdated]).toEqual([
      true,
      true,
      true,
    ]);
    expect(data.specialization).toBe('general');
    for (const level of ['translation_only', 'translation_and_review', 'review_only']) {
      const estimate = data[level];
      expect(Object.keys(estimate).sort()).toEqual([
        'per_word_cost',
        'preferred_translator',
        'seconds_to_complete',
        'string_count',
        'total_cost',
        'will_complete_at',
        'will_complete_at_timestamp',
        'word_count',
      ]);
      expect(estimate.will_complete_at).toMatch(TIME);
      expect(Number.isInteger(estimate.will_complete_at_timestamp)).toBe(true);
      // The string and the number are the same instant, in Unix seconds.
      expect(new Date(estimate.will_complete_at.replace('+0000', 'Z')).getTime() / 1000).toBe(
        estimate.will_complete_at_timestamp,
      );
      expect(estimate.will_complete_at_timestamp).toBeGreaterThan(before);
      expect(Math.abs(estimate.will_complete_at_timestamp - before - estimate.seconds_to_complete)).toBeLessThanOrEqual(
        2,
      );
      expect(estimate.preferred_translator.will_complete_at).toMatch(TIME);
      expect(typeof estimate.per_word_cost).toBe('string');
      expect(typeof estimate.total_cost).toBe('string');
    }
    // Review alone is quicker than translation, translation with review slower.
    expect(data.review_only.will_complete_at_timestamp).toBeLessThanOrEqual(
      data.translation_only.will_complete_at_timestamp,
    );
    expect(data.translation_and_review.will_complete_at_timestamp).toBeGreaterThan(
      data.translation_only.will_complete_at_timestamp,
    );
  });

  it('prices per word with exact decimals rounded half-up to cents', async () => {
    const all = (await quote('files=messages.po&to_locale=de-DE')).body.data; // 30 words
    expect([all.translation_only.per_word_cost, all.translation_only.total_cost]).toEqual(['0.0125', '0.38']); // 0.375
    expect(all.translation_and_review.total_cost).toBe('0.60');
    expect(all.review_only.total_cost).toBe('0.15');
    const notTranslated = (
      await quote('files=messages.po&to_locale=de-DE&is_including_not_approved=0&is_including_outdated=0')
    ).body.data; // 17 words
    expect(notTranslated.review_only.total_cost).toBe('0.09'); // 0.085: a binary float rounds this down
    expect(notTranslated.translation_only.total_cost).toBe('0.21'); // 0.2125
    const outdated = (
      await quote('files=messages.po&to_locale=de-DE&is_including_not_translated=false&is_including_not_approved=false')
    ).body.data; // 5 words
    expect(outdated.translation_only.total_cost).toBe('0.06'); // 0.0625
    const game = (await quote('files=messages.po&to_locale=de-DE&specialization=game')).body.data;
    expect(game.specialization).toBe('game');
    expect([
      game.translation_only.total_cost,
      game.translation_and_review.total_cost,
      game.review_only.total_cost,
    ]).toEqual(['4.50', '6.75', '2.25']);
    // Japanese has no translation: every string, at the default CJK rate.
    const ja = (await quote('files=messages.po&to_locale=ja-JP')).body.data;
    expect([
      ja.translation_only.string_count,
      ja.translation_only.word_count,
      ja.translation_only.per_word_cost,
      ja.translation_only.total_cost,
    ]).toEqual([8, 39, '0.10', '3.90']);
  });

  it.each([
    ['repeated', 'files=messages.po&files=other.po'],
    ['brackets', 'files[]=messages.po&files[]=other.po'],
    ['indexed', 'files[1]=other.po&files[0]=messages.po'],
    ['JSON', `files=${encodeURIComponent('["messages.po","other.po"]')}`],
    ['Python', `files=${encodeURIComponent("['messages.po', 'other.po']")}`],
  ])('accepts files as a %s list', async (_name, files) => {
    const answer = await quote(`${files}&to_locale=ja-JP`);
    expect(answer.status).toBe(200);
    expect(answer.body.data.files).toEqual([{ name: 'messages.po' }, { name: 'other.po' }]);
    expect(answer.body.data.translation_only.string_count).toBe(10);
    expect(answer.body.data.translation_only.word_count).toBe(45);
  });

  it.each([
    ['files=nope.po&to_locale=de-DE', 'nope.po'],
    ['to_locale=de-DE', 'files'],
    ['files=messages.po', 'to_locale'],
    ['files=messages.po&to_locale=xx-YY', 'to_locale'],
    ['files=messages.po&to_locale=en-US', 'base language'],
    ['files=messages.po&to_locale=de-DE&specialization=legal', 'specialization'],
    ['files=messages.po&to_locale=de-DE&is_including_outdated=maybe', 'is_including_outdated'],
    [`files=${encodeURIComponent('[broken')}&to_locale=de-DE`, 'files'],
  ])('refuses %s with a 400 naming %s', async (query, culprit) => {
    const answer = await quote(query);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ meta: { status: 400, message: expect.stringContaining(culprit) }, data: {} });
  });

  it('refuses bad credentials with 401 in the OneSky shape', async () => {
    const path = `/1/projects/${project}/quotations?files=messages.po&to_locale=de-DE`;
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, string>[] = [
      { ...client.auth(), dev_hash: 'd41d8cd98f00b204e9800998ecf8427e' }, // bad hash
      client.auth(now, 'not-the-secret'), // hash made with another secret
      client.auth(now - 601), // stale timestamp
      client.auth(now + 3600), // from the future
      { ...client.auth(), api_key: '0123456789abcdef0123456789abcdef' }, // unknown key
      { ...client.auth(), timestamp: 'yesterday' },
    ];
    for (const auth of cases) {
      const answer = await client.call('GET', path, { auth });
      expect(answer.status, JSON.stringify(auth)).toBe(401);
      expect(answer.body).toEqual({ meta: { status: 401, message: expect.any(String) }, data: {} });
      expect(answer.text).not.toContain(client.apiSecret);
    }
    const missing = await client.call('GET', path, { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.body.meta.message).toMatch(/api_key/);
    // Within the window is fine; a users and tasks API bearer token is accepted too.
    expect((await client.call('GET', path, { auth: client.auth(now - 500) })).status).toBe(200);
    expect(
      (await client.call('GET', path, { auth: null, headers: { authorization: `Bearer ${client.token}` } })).status,
    ).toBe(200);
    expect((await client.call('GET', path, { auth: null, headers: { authorization: 'Bearer nonsense' } })).status).toBe(
      401,
    );
  });

  it('keeps projects to their owner', async () => {
    const stranger = await Client.create(server.url);
    const answer = await stranger.get(`/1/projects/${project}/quotations?files=messages.po&to_locale=de-DE`);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ meta: { status: 404, message: expect.stringContaining('not found') }, data: {} });
    expect((await stranger.get('/1/projects')).body.data).toEqual([]);
  });

  it('creates, updates and deletes projects; admins see every project', async () => {
    const created = await client.call('POST', '/1/projects', {
      json: { name: 'tmp', description: 'd', base_locale: 'fr', target_locales: ['ja', 'zh_TW'] },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      name: 'tmp',
      description: 'd',
      base_language: { code: 'fr-FR' },
      string_count: 0,
      created_at: expect.stringMatching(TIME),
    });
    expect(created.body.data.target_languages.map((l: any) => l.code)).toEqual(['ja-JP', 'zh-TW']);
    const updated = await client.call('PUT', `/1/projects/${id}`, {
      json: { name: 'renamed', base_locale: 'en-GB', target_locales: ['de-DE'] },
    });
    expect(updated.body.data).toMatchObject({
      name: 'renamed',
      base_language: { code: 'en-GB' },
      target_languages: [{ code: 'de-DE' }],
    });
    expect(
      (await client.call('POST', '/1/projects', { json: { name: 'x', target_locales: ['en-US'] } })).body.meta.message,
    ).toMatch(/^target_locales: en-US is the base language/);
    expect((await client.call('POST', '/1/projects', { json: { name: 'x', target_locales: ['qq-QQ'] } })).status).toBe(
      400,
    );
    // The base language is fixed once the project has files.
    expect((await client.call('PUT', `/1/projects/${project}`, { json: { base_locale: 'fr-FR' } })).body).toEqual({
      meta: { status: 400, message: expect.stringContaining('base_locale') },
      data: {},
    });

    const login = await fetch(`${server.url}/api/users/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const { token } = (await login.json()) as { token: string };
    const asAdmin = await client.call('GET', '/1/projects', {
      auth: null,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(asAdmin.body.data.map((p: any) => p.id)).toEqual(expect.arrayContaining([project, id]));
    expect((await client.call('DELETE', `/1/projects/${id}`)).body).toEqual({ meta: { status: 200 }, data: {} });
    expect((await client.get(`/1/projects/${id}`)).status).toBe(404);
  });

  it('lists languages with progress, files with paging, and exports translations', async () => {
    const languages = await client.get(`/1/projects/${project}/languages`);
    expect(languages.status).toBe(200);
    const [base, ...targets] = languages.body.data;
    expect(base).toMatchObject({ code: 'en-US', is_base_language: true, translation_progress: '100%' });
    const de = targets.find((l: any) => l.code === 'de-DE');
    // 3 approved of 10 strings (messages.po 8 + other.po 2).
    expect(de).toMatchObject({ is_base_language: false, is_ready_to_publish: false, translation_progress: '30%' });
    expect(de.last_updated_at).toMatch(TIME);
    expect(targets.find((l: any) => l.code === 'ja-JP')).toMatchObject({
      translation_progress: '0%',
      last_updated_at: null,
    });

    const page = await client.get(`/1/projects/${project}/files?per_page=1&page=1`);
    expect(page.body.meta).toMatchObject({ status: 200, record_count: 2, page_count: 2, prev_page: null });
    expect(page.body.meta.next_page).toContain('page=2');
    expect(page.body.data).toEqual([
      {
        name: 'messages.po',
        file_format: 'GNU_PO',
        string_count: 8,
        word_count: 39,
        last_import: { id: expect.any(Number), status: 'completed' },
        uploaded_at: expect.stringMatching(TIME),
        uploaded_at_timestamp: expect.any(Number),
      },
    ]);
    expect((await client.get(`/1/projects/${project}/files?per_page=101`)).status).toBe(400);

    const exported = await client.get(`/1/projects/${project}/translations?locale=de-DE&source_file_name=messages.po`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-disposition')).toContain('messages.po');
    expect(exported.text).toContain('msgstr "Hallo, Welt!"');
    expect(exported.text).toContain('msgctxt "menu"');
    expect(exported.text).toContain('#, fuzzy');
    expect(exported.text).not.toContain('Lebewohl'); // obsolete entries are not kept
    // The export imports back to the same states.
    const again = await client.importFile(project, 'messages.po', exported.text, 'GNU_PO', { locale: 'de-DE' });
    expect(again.message ?? again.status, exported.text).toBe('completed');
    expect(
      (await quote('files=messages.po&to_locale=de-DE&is_including_outdated=0')).body.data.translation_only
        .string_count,
    ).toBe(4);
  });

  it('orders fix the outdated baseline and make the translator preferred', async () => {
    const before = (await quote('files=messages.po&to_locale=de-DE')).body.data;
    const answer = await client.call('POST', `/1/projects/${project}/orders`, {
      json: {
        files: ['messages.po'],
        to_locale: 'de-DE',
        order_type: 'translate-only',
        translator_type: 'fastest',
        tone: 'formal',
        note: 'thanks',
      },
    });
    expect(answer.status).toBe(201);
    const order = answer.body.data;
    expect(order).toMatchObject({
      status: 'in-progress',
      amount: before.translation_only.total_cost,
      string_count: 5,
      word_count: 30,
      order_type: 'translate-only',
      tone: 'formal',
      specialization: 'general',
      note: 'thanks',
    });
    expect(order.ordered_at).toMatch(TIME);
    expect(order.tasks).toHaveLength(1);
    const task = order.tasks[0];
    expect(task.will_complete_at_timestamp).toBe(before.translation_only.will_complete_at_timestamp);
    expect(task.assignments).toEqual([expect.objectContaining({ name: 'Anna', role: 'translate', word_count: 30 })]);

    // The outdated entry was ordered: it is no longer counted as outdated (it is fuzzy → not approved).
    const after = (await quote('files=messages.po&to_locale=de-DE&is_including_not_translated=0')).body.data;
    expect([after.translation_only.string_count, after.translation_only.word_count]).toEqual([2, 13]);
    expect(
      (await quote('files=messages.po&to_locale=de-DE&is_including_not_translated=0&is_including_not_approved=0')).body
        .data.translation_only.string_count,
    ).toBe(0);

    // Anna is now the preferred translator, and busy: her estimate is later than Clara's.
    const next = (await quote('files=messages.po&to_locale=de-DE')).body.data;
    expect(next.translation_only.preferred_translator.will_complete_at_timestamp).toBeGreaterThan(
      next.translation_only.will_complete_at_timestamp,
    );
    const preferred = await client.call('POST', `/1/projects/${project}/orders`, {
      json: {
        files: '["messages.po"]',
        to_locale: 'de-DE',
        translator_type: 'preferred',
        is_including_not_approved: '1',
      },
    });
    expect(preferred.status).toBe(201);
    expect(preferred.body.data.tasks[0].assignments[0].name).toBe('Anna');
    expect(preferred.body.data.tasks[0].will_complete_at_timestamp).toBe(
      next.translation_only.preferred_translator.will_complete_at_timestamp,
    );

    // Translation with review: a second translator reviews after the translation.
    const reviewed = await client.call(
      'POST',
      `/1/projects/${project}/orders?files[]=other.po&to_locale=ja-JP&order_type=translate-review`,
      {},
    );
    expect(reviewed.status).toBe(201);
    const [translate, review] = reviewed.body.data.tasks[0].assignments;
    expect([translate.role, review.role]).toEqual(['translate', 'review']);
    expect(translate.name).not.toBe(review.name);
    expect(review.start_at_timestamp).toBeGreaterThanOrEqual(translate.busy_until_at_timestamp);
    const nothing = await client.call('POST', `/1/projects/${project}/orders`, {
      json: { files: ['other.po'], to_locale: 'de-DE', is_including_not_translated: false },
    });
    expect(nothing.status).toBe(409);

    const list = await client.get(`/1/projects/${project}/orders?file_name=messages.po`);
    expect(list.body.meta).toMatchObject({ status: 200, record_count: 2 });
    expect((await client.get(`/1/projects/${project}/orders?file_name=other.po`)).body.meta.record_count).toBe(1);
    const shown = await client.get(`/1/projects/${project}/orders/${order.id}`);
    expect(shown.body.data.tasks[0].translator.name).toBe('Anna');
    expect((await client.get(`/1/projects/${project}/orders/99999`)).status).toBe(404);
  });

  it('describes every route in /openapi/quotes.json', async () => {
    const doc = (await (await fetch(`${server.url}/openapi/quotes.json`)).json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'GET /1/locales',
        'GET /1/projects',
        'POST /1/projects',
        'GET /1/projects/{project_id}',
        'PUT /1/projects/{project_id}',
        'DELETE /1/projects/{project_id}',
        'GET /1/projects/{project_id}/languages',
        'POST /1/projects/{project_id}/files',
        'GET /1/projects/{project_id}/files',
        'DELETE /1/projects/{project_id}/files',
        'GET /1/projects/{project_id}/import-tasks/{import_id}',
        'GET /1/projects/{project_id}/translations',
        'GET /1/projects/{project_id}/quotations',
        'POST /1/projects/{project_id}/orders',
        'GET /1/projects/{project_id}/orders',
        'GET /1/projects/{project_id}/orders/{order_id}',
        'GET /1/project-types',
        'GET /1/project-groups',
        'POST /1/project-groups',
        'GET /1/project-groups/{project_group_id}',
        'DELETE /1/project-groups/{project_group_id}',
        'GET /1/project-groups/{project_group_id}/languages',
        'GET /1/project-groups/{project_group_id}/projects',
        'POST /1/project-groups/{project_group_id}/projects',
        'GET /1/projects/{project_id}/import-tasks',
        'GET /1/projects/{project_id}/translations/status',
        'GET /1/projects/{project_id}/translations/multilingual',
        'GET /1/projects/{project_id}/translations/app-descriptions',
        'POST /1/projects/{project_id}/screenshots',
        'GET /1/projects/{project_id}/screenshots',
        'GET /1/projects/{project_id}/screenshots/{screenshot_id}/image',
        'GET /1/projects/{project_id}/phrase-collections',
        'GET /1/projects/{project_id}/phrase-collections/show',
        'POST /1/projects/{project_id}/phrase-collections',
        'DELETE /1/projects/{project_id}/phrase-collections',
        'GET /1/projects/{project_id}/phrase-collection-attachments',
        'POST /1/projects/{project_id}/phrase-collection-attachments',
        'GET /1/projects/{project_id}/phrase-collection-attachments/download',
        'DELETE /1/projects/{project_id}/phrase-collection-attachments',
      ].sort(),
    );
    const quotation = doc.paths['/1/projects/{project_id}/quotations'].get;
    expect(quotation.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining([
        'files',
        'to_locale',
        'is_including_not_translated',
        'is_including_not_approved',
        'is_including_outdated',
        'specialization',
      ]),
    );
    expect(
      quotation.responses['200'].content['application/json'].schema.properties.data.properties.translation_only
        .properties.total_cost.type,
    ).toBe('string');
    expect(doc.paths['/1/projects/{project_id}/files'].post.requestBody.content['multipart/form-data']).toBeDefined();
  });

  it('lists locales with CLDR names, without credentials', async () => {
    const answer = await fetch(`${server.url}/1/locales`);
    const body = (await answer.json()) as any;
    expect(answer.status).toBe(200);
    expect(body.meta.record_count).toBe(body.data.length);
    expect(body.data.length).toBeGreaterThan(200);
    expect(body.data).toContainEqual({
      code: 'ja-JP',
      english_name: 'Japanese (Japan)',
      local_name: '日本語 (日本)',
      locale: 'ja',
      region: 'JP',
    });
    expect(body.data).toContainEqual(expect.objectContaining({ code: 'zh-TW', english_name: 'Chinese (Taiwan)' }));
  });
});
