// What OneSky's PHP and Go libraries send, and OneSky's phrase collections: files uploaded with a
// path in their name are saved under their base name (names that climb out of their folder are
// refused), order tasks name their language to_language, and phrase collections go through a
// full cycle (import, edit, list, show, quotation, status, export, order, delete) on each database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, startQuotesServer } from './helpers.js';

const ERROR = (status: number, message: RegExp) => ({
  meta: { status, message: expect.stringMatching(message) },
  data: {},
});

describe.each(databaseKinds)('OneSky clients on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const files = async (project: number) => (await client.get(`/1/projects/${project}/files`)).body;

  it.each([
    ['PHP 7.3+ (a CURLFile sends its whole path)', '/tmp/x/messages.po'],
    ['onesky-go on Windows', 'C:\\x\\messages.po'],
    ['a relative path', 'locales/en/messages.po'],
  ])('%s: %s is saved as messages.po, with its figures', async (_client, name) => {
    const project = await client.createProject('en-US', ['de-DE']);
    const upload = await client.upload(project, name, fixture('messages.pot'), 'GNU_PO');
    expect(upload.status, upload.text).toBe(201);
    expect(upload.body.data.name).toBe('messages.po');
    const task = await client.waitImport(project, upload.body.data.import.id);
    expect(task).toMatchObject({ status: 'completed', string_count: 8, word_count: 39, file: { name: 'messages.po' } });
    expect((await files(project)).data).toEqual([
      expect.objectContaining({ name: 'messages.po', string_count: 8, word_count: 39 }),
    ]);
    expect(await client.quoteCounts(project, 'messages.po', 'de-DE')).toEqual([8, 39]);
    // A translation sent with a path lands on the same file.
    const german = await client.importFile(project, name, fixture('messages.de.po'), 'GNU_PO', { locale: 'de-DE' });
    expect(german).toMatchObject({ status: 'completed', file: { name: 'messages.po' } });
  });

  it.each([
    ['../x.po', /climbs out of its folder/],
    ['..\\x.po', /climbs out of its folder/],
    ['%2e%2e/x.po', /climbs out of its folder/],
    ['a/%2E%2E/x.po', /climbs out of its folder/],
    ['../../etc/passwd.po', /climbs out of its folder/],
    ['x\u0000.po', /control characters/],
    ['/tmp/x/', /is a folder, not a file name/],
    ['/tmp/x/.', /is a folder, not a file name/],
  ])('refuses the upload named %j with a 400 in the OneSky shape', async (name, message) => {
    const project = await client.createProject('en-US', ['de-DE']);
    const upload = await client.upload(project, name, fixture('messages.pot'), 'GNU_PO');
    expect(upload.status).toBe(400);
    expect(upload.body).toEqual(ERROR(400, new RegExp(`^file: .*${message.source}`)));
    expect((await files(project)).meta.record_count).toBe(0);
    const imports = await client.get(`/1/projects/${project}/import-tasks`);
    expect(imports.body.meta.record_count).toBe(0);
  });

  it('saves a screenshot sent with a path under its base name, and refuses ".."', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    // A 1×1 PNG.
    const png =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9' +
      'awAAAABJRU5ErkJggg==';
    const sent = await client.call('POST', `/1/projects/${project}/screenshots`, {
      json: { screenshots: [{ name: '/home/me/shots/menu.png', image: png }] },
    });
    expect(sent.status, sent.text).toBe(201);
    const list = await client.get(`/1/projects/${project}/screenshots`);
    expect(list.body.data.map((s: { name: string }) => s.name)).toEqual(['menu.png']);
    const climbing = await client.call('POST', `/1/projects/${project}/screenshots`, {
      json: { screenshots: [{ name: '..\\menu.png', image: png }] },
    });
    expect(climbing.status).toBe(400);
    expect(climbing.body).toEqual(ERROR(400, /^screenshots\[0\]\.name: .*climbs out of its folder/));
  });

  it('names the language of an order task to_language, and keeps language beside it', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    await client.importFile(project, 'messages.po', fixture('messages.pot'), 'GNU_PO');
    const ordered = await client.call('POST', `/1/projects/${project}/orders`, {
      json: { files: ['messages.po'], to_locale: 'de-DE' },
    });
    expect(ordered.status, ordered.text).toBe(201);
    const german = expect.objectContaining({ code: 'de-DE', locale: 'de', region: 'DE' });
    expect(ordered.body.data.tasks).toEqual([expect.objectContaining({ to_language: german, language: german })]);
    const shown = await client.get(`/1/projects/${project}/orders/${ordered.body.data.id}`);
    expect(shown.body.data.tasks[0].to_language.code).toBe('de-DE');
    // What OneSky's sample shows on each task: the seconds left until will_complete_at.
    const task = shown.body.data.tasks[0];
    expect(task.seconds_to_complete).toBeGreaterThan(0);
    expect(Math.abs(task.seconds_to_complete - (task.will_complete_at_timestamp - Date.now() / 1000))).toBeLessThan(60);
  });

  describe('phrase collections', () => {
    const path = (project: number, rest = '') => `/1/projects/${project}/phrase-collections${rest}`;
    const question = {
      title: {
        string: 'Which one is the correct team name?',
        description: 'NBA basketball team name',
        length_limit: { type: 'absolute', value: 80, is_exceed_allowed: true },
      },
      answer1: {
        string: 'New York Bulls',
        description: 'New York Knicks, Chicago Bulls',
        length_limit: { type: 'relative', value: 2, is_exceed_allowed: false },
      },
      answer2: { string: 'Los Angeles Kings' },
    };
    /** Imports collections and waits for each one's import; the answer's data. */
    const importCollections = async (project: number, body: Record<string, unknown>) => {
      const answer = await client.call('POST', path(project), { json: body });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.body.data.import).toEqual({
        id: expect.any(Number),
        created_at: expect.any(String),
        created_at_timestamp: expect.any(Number),
      });
      const tasks = [];
      for (const queued of answer.body.data.imports) tasks.push(await client.waitImport(project, queued.id));
      return { data: answer.body.data, tasks };
    };

    it('imports, edits, lists, shows, quotes, exports, orders and deletes them', async () => {
      const project = await client.createProject('en-US', ['de-DE', 'ja-JP']);
      // Create: two collections at once, one import each.
      const created = await importCollections(project, {
        collections: { question_001: question, question_002: { title: { string: 'Albert Einstein was born where?' } } },
      });
      expect(created.data.imports.map((i: { key: string }) => i.key)).toEqual(['question_001', 'question_002']);
      expect(created.data.import.id).toBe(created.data.imports[0].id);
      expect(created.tasks).toEqual([
        expect.objectContaining({ status: 'completed', string_count: 3, word_count: 13 }),
        expect.objectContaining({ status: 'completed', string_count: 1, word_count: 5 }),
      ]);

      // Listed by key, paged; not in the files list.
      const list = await client.get(path(project, '?per_page=1'));
      expect(list.status).toBe(200);
      expect(list.body.meta).toMatchObject({ status: 200, record_count: 2, page_count: 2 });
      expect(list.body.meta.next_page).toMatch(/page=2&per_page=1$/);
      expect(list.body.data).toEqual([
        { key: 'question_001', created_at: expect.any(String), created_at_timestamp: expect.any(Number) },
      ]);
      expect((await client.get(path(project, '?page=2&per_page=1'))).body.data[0].key).toBe('question_002');
      expect((await files(project)).meta.record_count).toBe(0);

      // Shown with descriptions and length limits as sent.
      const shown = await client.get(path(project, '/show?collection_key=question_001'));
      expect(shown.status, shown.text).toBe(200);
      expect(shown.body).toEqual({
        meta: { status: 200 },
        data: {
          key: 'question_001',
          base_language: { 'en-US': question },
          translations: {},
          attachments: [],
          created_at: list.body.data[0].created_at,
          created_at_timestamp: list.body.data[0].created_at_timestamp,
        },
      });

      // Counted in quotations and translation status like a file.
      expect(await client.quoteCounts(project, 'question_001', 'de-DE')).toEqual([3, 13]);
      const both = await client.get(
        `/1/projects/${project}/quotations?files[]=question_001&files[]=question_002&to_locale=ja-JP`,
      );
      expect(both.body.data.translation_only).toMatchObject({ string_count: 4, word_count: 18 });
      const status = await client.get(`/1/projects/${project}/translations/status?file_name=question_001&locale=de-DE`);
      expect(status.body.data).toMatchObject({ progress: '0%', string_count: 3, word_count: 13 });

      // A translation, uploaded as a file of the collection's format, shows in the collection.
      const german = { title: { string: 'Welcher Teamname ist richtig?' }, answer1: { string: 'New York Bulls' } };
      expect(
        await client.importFile(project, 'question_001', JSON.stringify(german), 'PHRASE_COLLECTION', {
          locale: 'de-DE',
          is_allow_translation_same_as_original: 'true',
        }),
      ).toMatchObject({ status: 'completed', string_count: 2 });
      const translated = await client.get(path(project, '/show?collection_key=question_001'));
      expect(translated.body.data.translations).toEqual({
        'de-DE': { title: 'Welcher Teamname ist richtig?', answer1: 'New York Bulls' },
      });
      expect(await client.quoteCounts(project, 'question_001', 'de-DE')).toEqual([1, 3]);

      // Exported in its format, with the descriptions and limits kept.
      const exported = await client.get(
        `/1/projects/${project}/translations?locale=de-DE&source_file_name=question_001`,
      );
      expect(exported.status).toBe(200);
      expect(JSON.parse(exported.text)).toEqual({
        title: { ...question.title, string: 'Welcher Teamname ist richtig?' },
        answer1: question.answer1,
      });
      const base = await client.get(`/1/projects/${project}/translations?locale=en-US&source_file_name=question_001`);
      expect(JSON.parse(base.text)).toEqual(question);

      // Ordered like a file.
      const order = await client.call('POST', `/1/projects/${project}/orders`, {
        json: { files: ['question_002'], to_locale: 'ja-JP' },
      });
      expect(order.status, order.text).toBe(201);
      expect(order.body.data).toMatchObject({ files: [{ name: 'question_002' }], string_count: 1, word_count: 5 });

      // Edit, keeping every string (the default): answer2 stays, title's text and limit change.
      const edited = {
        title: { string: 'Which team name is right?', length_limit: { type: 'relative', value: '3' } },
        answer3: { string: 'Golden State Warriors', description: 'answer' },
      };
      const kept = await importCollections(project, { collections: { question_001: edited } });
      expect(kept.tasks[0]).toMatchObject({ status: 'completed', string_count: 2, word_count: 8 });
      const afterKeep = (await client.get(path(project, '/show?collection_key=question_001'))).body.data;
      expect(afterKeep.base_language['en-US']).toEqual({
        title: {
          string: 'Which team name is right?',
          length_limit: { type: 'relative', value: 3, is_exceed_allowed: true },
        },
        answer1: question.answer1,
        answer2: question.answer2,
        answer3: edited.answer3,
      });
      expect(await client.quoteCounts(project, 'question_001', 'ja-JP')).toEqual([4, 14]);
      // The changed title is outdated in German, answer1 still translated.
      expect(afterKeep.translations['de-DE']).toEqual({
        title: 'Welcher Teamname ist richtig?',
        answer1: 'New York Bulls',
      });

      // Edit with is_keeping_all_strings false (a form field, as PHP's http_build_query sends it).
      const form = new URLSearchParams({
        collections: JSON.stringify({ question_001: edited }),
        is_keeping_all_strings: 'false',
      });
      const replaced = await client.call('POST', path(project), {
        body: form.toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(replaced.status, replaced.text).toBe(201);
      expect(await client.waitImport(project, replaced.body.data.import.id)).toMatchObject({ status: 'completed' });
      const afterReplace = (await client.get(path(project, '/show?collection_key=question_001'))).body.data;
      expect(Object.keys(afterReplace.base_language['en-US'])).toEqual(['title', 'answer3']);
      expect(await client.quoteCounts(project, 'question_001', 'ja-JP')).toEqual([2, 8]);

      // Delete: gone from the list, then a 404 in OneSky's shape.
      const deleted = await client.call('DELETE', path(project, '?collection_key=question_001'));
      expect(deleted.status, deleted.text).toBe(200);
      expect((await client.get(path(project))).body.data.map((c: { key: string }) => c.key)).toEqual(['question_002']);
      const again = await client.call('DELETE', path(project), { json: { collection_key: 'question_001' } });
      expect(again.status).toBe(404);
      expect(again.body).toEqual(ERROR(404, /^collection_key: no phrase collection "question_001"/));
    });

    it('attaches files to a collection: upload (with a path), list, show, download, replace, delete', async () => {
      const project = await client.createProject('en-US', ['de-DE']);
      await importCollections(project, { collections: { question_001: question } });
      const attachments = `/1/projects/${project}/phrase-collection-attachments`;
      const attach = (name: string, content: Buffer, key = 'question_001') => {
        const form = new FormData();
        form.append('collection_key', key);
        form.append('file', new Blob([new Uint8Array(content)]), name);
        return client.call('POST', attachments, { form });
      };
      const first = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 255]);
      const sent = await attach('/home/me/q001-answer1.jpg', first);
      expect(sent.status, sent.text).toBe(201);
      expect(sent.body).toEqual({
        meta: { status: 201 },
        data: {
          name: 'q001-answer1.jpg',
          collection_attached_to: { key: 'question_001' },
          uploaded_at: expect.any(String),
          uploaded_at_timestamp: expect.any(Number),
        },
      });
      expect((await attach('q001-answer2.jpg', Buffer.from('second'))).status).toBe(201);
      const list = await client.get(`${attachments}?per_page=1`);
      expect(list.body.meta).toMatchObject({ status: 200, record_count: 2, page_count: 2 });
      expect(list.body.data).toEqual([expect.objectContaining({ name: 'q001-answer1.jpg', byte_count: 9 })]);
      const shown = await client.get(path(project, '/show?collection_key=question_001'));
      expect(shown.body.data.attachments).toEqual([{ name: 'q001-answer1.jpg' }, { name: 'q001-answer2.jpg' }]);

      const download = (name: string) =>
        fetch(client.base + client.signed(`${attachments}/download?collection_key=question_001&name=${name}`));
      const got = await download('q001-answer1.jpg');
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('application/octet-stream');
      expect(got.headers.get('content-disposition')).toBe('attachment; filename="q001-answer1.jpg"');
      expect(Buffer.from(await got.arrayBuffer())).toEqual(first);
      // The same name replaces the file.
      expect((await attach('q001-answer1.jpg', Buffer.from('replaced'))).status).toBe(201);
      expect(Buffer.from(await (await download('q001-answer1.jpg')).arrayBuffer()).toString()).toBe('replaced');
      expect((await client.get(attachments)).body.meta.record_count).toBe(2);

      const deleted = await client.call('DELETE', `${attachments}?collection_key=question_001&name=q001-answer2.jpg`);
      expect(deleted.status, deleted.text).toBe(200);
      expect((await download('q001-answer2.jpg')).status).toBe(404);
      const again = await client.call('DELETE', attachments, {
        json: { collection_key: 'question_001', name: 'q001-answer2.jpg' },
      });
      expect(again.body).toEqual(ERROR(404, /^name: no attachment "q001-answer2.jpg"/));
      // Refused: an unknown collection, a name that climbs out of its folder, no file part.
      expect((await attach('x.jpg', first, 'nothing')).body).toEqual(
        ERROR(404, /^collection_key: no phrase collection "nothing"/),
      );
      expect((await attach('../x.jpg', first)).body).toEqual(ERROR(400, /^file: .*climbs out of its folder/));
      const noFile = new FormData();
      noFile.append('collection_key', 'question_001');
      expect((await client.call('POST', attachments, { form: noFile })).body).toEqual(ERROR(400, /^file: /));
      // Deleting the collection deletes its attachments.
      await client.call('DELETE', path(project, '?collection_key=question_001'));
      expect((await client.get(attachments)).body.meta.record_count).toBe(0);
    });

    it('answers an unknown collection 404 and bad imports 400, in the OneSky shape', async () => {
      const project = await client.createProject('en-US', ['de-DE']);
      await client.importFile(project, 'messages.po', fixture('messages.pot'), 'GNU_PO');
      const unknown = await client.get(path(project, '/show?collection_key=nothing'));
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual(ERROR(404, /^collection_key: no phrase collection "nothing" in project/));
      // A file is not a collection, nor the other way round.
      expect((await client.get(path(project, '/show?collection_key=messages.po'))).status).toBe(404);

      const refused = async (body: unknown, message: RegExp, options: { raw?: string } = {}) => {
        const answer = options.raw
          ? await client.call('POST', path(project), {
              body: options.raw,
              headers: { 'content-type': 'application/json' },
            })
          : await client.call('POST', path(project), { json: body });
        expect(answer.status, answer.text).toBe(400);
        expect(answer.body).toEqual(ERROR(400, message));
      };
      await refused(null, /JSON|body/i, { raw: '{"collections": {"q": ' });
      await refused({ collections: '{"q": {' }, /^collections: not valid JSON/);
      await refused({ collections: [] }, /^collections: required, an object/);
      await refused({ collections: {} }, /^collections: holds no phrase collection/);
      await refused({ collections: { q: { a: 'text' } } }, /^collections\.q\.a: must be an object with a "string"/);
      await refused({ collections: { q: { a: { string: 1 } } } }, /^collections\.q\.a\.string: required/);
      await refused({ collections: { q: {} } }, /^collections\.q: has no strings/);
      await refused(
        { collections: { q: { a: { string: 'x', length_limit: { type: 'wide', value: 1 } } } } },
        /^collections\.q\.a\.length_limit\.type: must be "absolute" or "relative"/,
      );
      await refused(
        { collections: { q: { a: { string: 'x', length_limit: { type: 'absolute', value: 0 } } } } },
        /length_limit\.value: must be a whole number/,
      );
      await refused({ collections: { '../q': { a: { string: 'x' } } } }, /^collections: the key "..\/q" is refused/);
      await refused({ collections: { 'messages.po': { a: { string: 'x' } } } }, /a file named "messages.po" exists/);
      await refused(
        { collections: { q: { a: { string: 'x' } } }, is_keeping_all_strings: 'maybe' },
        /^is_keeping_all_strings/,
      );
      expect((await client.get(path(project))).body.meta.record_count).toBe(0);
      const noAuth = await client.call('GET', path(project), { auth: null });
      expect(noAuth.status).toBe(401);
    });
  });
});
