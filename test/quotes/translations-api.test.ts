// The OneSky Platform API calls of the public clients that read translations back and send
// screenshots: translation status, the multilingual export (onesky-utils' getMultilingualFile),
// app store descriptions, and screenshots with their tags as JSON (Ruby, PHP, C#) and as a form
// (onesky-utils' postScreenshot).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, startQuotesServer } from './helpers.js';

// A 1×1 PNG and a 1×1 GIF, as a browser or an image library writes them.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const GIF = 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe.each(databaseKinds)('OneSky translation and screenshot calls on %s', (kind) => {
  let server: TestServer;
  let client: Client;
  let project: number;

  beforeAll(async () => {
    server = await startQuotesServer(kind, { QUOTES_MAX_SCREENSHOT_BYTES: String(64 * 1024) });
    client = await Client.create(server.url);
    project = await client.createProject('en-US', ['de-DE', 'ja-JP']);
    // app.json has 5 strings (13 words); app.de.json translates 2 of them: menu.file and menu.recent[0]
    // ("Open {{name}}" is the source text again, so it is not a translation, and "unknown" is no key of the file).
    expect(await client.importFile(project, 'app.json', fixture('app.json'), 'HIERARCHICAL_JSON')).toMatchObject({
      status: 'completed',
      string_count: 5,
    });
    expect(
      await client.importFile(project, 'app.json', fixture('app.de.json'), 'HIERARCHICAL_JSON', { locale: 'de-DE' }),
    ).toMatchObject({ status: 'completed' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('translation status: progress of a file in a language, with the file counts', async () => {
    const german = await client.get(`/1/projects/${project}/translations/status?file_name=app.json&locale=de`);
    expect(german.status, german.text).toBe(200);
    expect(german.body).toEqual({
      meta: { status: 200 },
      data: {
        file_name: 'app.json',
        locale: {
          code: 'de-DE',
          english_name: 'German (Germany)',
          local_name: 'Deutsch (Deutschland)',
          locale: 'de',
          region: 'DE',
        },
        progress: '40%',
        string_count: 5,
        word_count: 13,
      },
    });
    const base = await client.get(`/1/projects/${project}/translations/status?file_name=app.json&locale=en-US`);
    expect(base.body.data.progress).toBe('100%');
    // A language nobody translated into, even one outside the project, is at 0%.
    for (const locale of ['ja-JP', 'fr']) {
      const none = await client.get(`/1/projects/${project}/translations/status?file_name=app.json&locale=${locale}`);
      expect(none.body.data.progress).toBe('0%');
    }
    const unknownFile = await client.get(`/1/projects/${project}/translations/status?file_name=x.json&locale=de`);
    expect(unknownFile.body).toEqual({
      meta: { status: 400, message: `file_name: no file "x.json" in project ${project}` },
      data: {},
    });
    const missing = await client.get(`/1/projects/${project}/translations/status?file_name=app.json`);
    expect(missing.status).toBe(400);
    expect(missing.body.meta.message).toMatch(/locale/);
  });

  it('multilingual export: every language of the project in one i18next file', async () => {
    const format = 'file_format=I18NEXT_MULTILINGUAL_JSON';
    const answer = await client.get(
      `/1/projects/${project}/translations/multilingual?source_file_name=app.json&${format}`,
    );
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toBe('attachment; filename="app.json"');
    expect(JSON.parse(answer.text)).toEqual({
      'en-US': {
        translation: {
          menu: { file: 'File', open: 'Open {{name}}', recent: ['First recent file', 'Second recent file'] },
          greeting: 'Hello, %s! Welcome back.',
        },
      },
      'de-DE': { translation: { menu: { file: 'Datei', recent: ['Erste zuletzt geöffnete Datei'] } } },
      'ja-JP': { translation: {} },
    });
    expect(Object.keys(JSON.parse(answer.text))).toEqual(['en-US', 'de-DE', 'ja-JP']);
    // file_format is optional; export_file_name names the download.
    const named = await client.get(
      `/1/projects/${project}/translations/multilingual?source_file_name=app.json&export_file_name=all.json`,
    );
    expect(named.headers.get('content-disposition')).toBe('attachment; filename="all.json"');
    expect(JSON.parse(named.text)).toEqual(JSON.parse(answer.text));

    const unknown = await client.get(`/1/projects/${project}/translations/multilingual?source_file_name=nope.json`);
    expect(unknown.body).toEqual({
      meta: { status: 400, message: `source_file_name: no file "nope.json" in project ${project}` },
      data: {},
    });
    const po = await client.get(
      `/1/projects/${project}/translations/multilingual?source_file_name=app.json&file_format=GNU_PO`,
    );
    expect(po.status).toBe(400);
    expect(po.body.meta.message).toMatch(/^file_format: /);
  });

  it('app descriptions: a …-metadata project exports its strings in a language', async () => {
    const group = (await client.call('POST', '/1/project-groups', { json: { name: 'Store' } })).body.data;
    const created = await client.call('POST', `/1/project-groups/${group.id}/projects`, {
      json: { project_type: 'itunes-metadata', name: 'My App' },
    });
    const app = created.body.data.id;
    const source = {
      APP_NAME: 'My App Name',
      DESCRIPTION: 'App description',
      APP_KEYWORD: { 'popular app': 'popular app' },
      APP_IAP_NAME: { iap_product1: 'Product 1', iap_product2: 'Product 2' },
    };
    const french = { APP_NAME: 'Mon appli', APP_IAP_NAME: { iap_product1: 'Produit 1' } };
    expect((await client.importFile(app, 'description.json', JSON.stringify(source), 'HIERARCHICAL_JSON')).status).toBe(
      'completed',
    );
    const translated = await client.importFile(app, 'description.json', JSON.stringify(french), 'HIERARCHICAL_JSON', {
      locale: 'fr-FR',
    });
    expect(translated.status).toBe('completed');

    const answer = await client.get(`/1/projects/${app}/translations/app-descriptions?locale=fr`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      meta: {
        status: 200,
        language: {
          code: 'fr-FR',
          english_name: 'French (France)',
          local_name: 'français (France)',
          locale: 'fr',
          region: 'FR',
        },
      },
      data: french,
    });
    const base = await client.get(`/1/projects/${app}/translations/app-descriptions?locale=en-US`);
    expect(base.body.data).toEqual(source);

    const notApp = await client.get(`/1/projects/${project}/translations/app-descriptions?locale=de`);
    expect(notApp.status).toBe(400);
    expect(notApp.body.meta.message).toMatch(/no app store description project/);
  });

  it('screenshots as JSON: stored with their tags; the same name replaces them', async () => {
    const screenshots = [
      {
        name: 'screen-1.png',
        image: `data:image/png;base64,${PNG}`,
        tags: [
          { key: 'menu.file', x: 460, y: 30, width: 150, height: 50, file: 'app.json' },
          { key: 'greeting', x: 0, y: 80, width: 150, height: 50, file: null },
        ],
      },
      // PHP's chunk_split wraps base64; a .jpg name and a wrong declared type do not change what is stored.
      { name: 'screen-2.jpg', image: `data:image/jpeg;base64,${GIF.slice(0, 20)}\r\n${GIF.slice(20)}`, tags: [] },
    ];
    const answer = await client.call('POST', `/1/projects/${project}/screenshots`, { json: { screenshots } });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body.meta).toEqual({ status: 201, record_count: 2 });
    const [first, second] = answer.body.data;
    expect(first).toMatchObject({
      name: 'screen-1.png',
      mime: 'image/png',
      byte_count: Buffer.from(PNG, 'base64').length,
      image_url: `/1/projects/${project}/screenshots/${first.id}/image`,
      tags: [
        { key: 'menu.file', file: 'app.json', x: 460, y: 30, width: 150, height: 50 },
        { key: 'greeting', file: null, x: 0, y: 80, width: 150, height: 50 },
      ],
    });
    expect(second).toMatchObject({ name: 'screen-2.jpg', mime: 'image/gif', tags: [] });

    const image = await client.get(first.image_url);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    expect(image.bytes.equals(Buffer.from(PNG, 'base64'))).toBe(true);

    // Sent again under its name: one screenshot, the new image and tags.
    const again = await client.call('POST', `/1/projects/${project}/screenshots`, {
      json: {
        screenshots: [
          { name: 'screen-1.png', image: GIF, tags: [{ key: 'menu.open', x: 1, y: 2, width: 3, height: 4 }] },
        ],
      },
    });
    expect(again.status, again.text).toBe(201);
    expect(again.body.data[0]).toMatchObject({
      id: first.id,
      mime: 'image/gif',
      tags: [{ key: 'menu.open', file: null }],
    });
    const list = await client.get(`/1/projects/${project}/screenshots`);
    expect(list.body.meta.record_count).toBe(2);
    expect(list.body.data.map((s: { name: string; tags: unknown[] }) => [s.name, s.tags.length])).toEqual([
      ['screen-1.png', 1],
      ['screen-2.jpg', 0],
    ]);
    expect((await client.get(first.image_url)).bytes.equals(Buffer.from(GIF, 'base64'))).toBe(true);
  });

  it('screenshots as a form, as onesky-utils sends them (nested fields, numbers as text)', async () => {
    const fields = new URLSearchParams([
      ['screenshots[0][name]', 'home page'],
      ['screenshots[0][image]', `data:image/png;base64,${PNG}`],
      ['screenshots[0][tags][0][key]', 'menu.file'],
      ['screenshots[0][tags][0][x]', '460'],
      ['screenshots[0][tags][0][y]', '30'],
      ['screenshots[0][tags][0][width]', '150'],
      ['screenshots[0][tags][0][height]', '50'],
      ['screenshots[0][tags][0][file]', 'app.json'],
      ['api_key', client.apiKey],
    ]);
    const answer = await client.call('POST', `/1/projects/${project}/screenshots`, {
      headers: FORM,
      body: fields.toString(),
    });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body.data).toEqual([
      expect.objectContaining({
        name: 'home page',
        mime: 'image/png',
        tags: [{ key: 'menu.file', file: 'app.json', x: 460, y: 30, width: 150, height: 50 }],
      }),
    ]);
    // Credentials only in the form, as the form of onesky-utils carries them too.
    const signed = new URLSearchParams({
      ...client.auth(),
      'screenshots[0][name]': 'signed in the form',
      'screenshots[0][image]': GIF,
    });
    const inForm = await client.call('POST', `/1/projects/${project}/screenshots`, {
      auth: null,
      headers: FORM,
      body: signed.toString(),
    });
    expect(inForm.status, inForm.text).toBe(201);
    expect(inForm.body.data[0]).toMatchObject({ name: 'signed in the form', tags: [] });
    signed.delete('dev_hash');
    const unsigned = await client.call('POST', `/1/projects/${project}/screenshots`, {
      auth: null,
      headers: FORM,
      body: signed.toString(),
    });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.meta.status).toBe(401);
    // The list itself as JSON text in a form field works too.
    const asJson = new URLSearchParams({ screenshots: JSON.stringify([{ name: 'json field', image: GIF, tags: [] }]) });
    const viaJson = await client.call('POST', `/1/projects/${project}/screenshots`, {
      headers: FORM,
      body: asJson.toString(),
    });
    expect(viaJson.status, viaJson.text).toBe(201);
  });

  it('screenshots: bad input is refused in OneSky shape and nothing of the request is stored', async () => {
    const other = await client.createProject('en-US', []);
    const send = (screenshots: unknown) =>
      client.call('POST', `/1/projects/${other}/screenshots`, { json: { screenshots } });
    const notImage = await send([
      { name: 'ok', image: PNG, tags: [] },
      { name: 'svg', image: `data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}`, tags: [] },
    ]);
    expect(notImage.body).toEqual({
      meta: { status: 400, message: 'screenshots[1].image: not a PNG, JPEG, GIF, WebP, BMP or TIFF image' },
      data: {},
    });
    expect((await client.get(`/1/projects/${other}/screenshots`)).body.data).toEqual([]);
    const notBase64 = await send([{ name: 'x', image: 'data:image/png;base64,***', tags: [] }]);
    expect(notBase64.status).toBe(400);
    expect(notBase64.body.meta.message).toMatch(/^screenshots\[0\]\.image: expected base64/);
    const badTag = await send([{ name: 'x', image: PNG, tags: [{ key: 'a', x: -1, y: 0, width: 1, height: 1 }] }]);
    expect(badTag.status).toBe(400);
    expect(badTag.body.meta.message).toMatch(/screenshots\.0\.tags\.0\.x/);
    const none = await send([]);
    expect(none.status).toBe(400);
    const malformed = await client.call('POST', `/1/projects/${other}/screenshots`, {
      headers: FORM,
      body: 'screenshots[0][name]=%E0%A4%A',
    });
    expect(malformed.body.meta).toEqual({ status: 400, message: expect.stringMatching(/percent-encoding/) });
    const notJson = await client.call('POST', `/1/projects/${other}/screenshots`, {
      headers: { 'content-type': 'application/json' },
      body: '{"screenshots": [',
    });
    expect(notJson.body.meta).toEqual({ status: 400, message: 'body: malformed JSON' });
    const multipart = new FormData();
    multipart.append('screenshots', '[]');
    const wrongType = await client.call('POST', `/1/projects/${other}/screenshots`, { form: multipart });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.meta.status).toBe(415);
    const missing = await client.call('POST', `/1/projects/${other}/screenshots`, { json: {} });
    expect(missing.body.meta.message).toMatch(/screenshots/);
    // Past QUOTES_MAX_SCREENSHOT_BYTES (64 KiB here) the body is refused before it is read whole.
    const big = await send([{ name: 'big', image: 'A'.repeat(70 * 1024), tags: [] }]);
    expect(big.status).toBe(413);
    expect(big.body.meta.status).toBe(413);
    expect((await client.get(`/1/projects/${other}/screenshots/1/image`)).status).toBe(404);
  });
});
