// Imports over HTTP: every format with its phrase states, and bad input that must end as a
// failed import task with a clear message (never a crash, never a half-imported file).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, insertRunningImport, startQuotesServer } from './helpers.js';

describe.each(databaseKinds)('file imports on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind, { QUOTES_MAX_FILE_BYTES: String(16 * 1024 * 1024) });
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const counts = async (project: number, file: string, locale: string, flags = '') => {
    const answer = await client.get(
      `/1/projects/${project}/quotations?files=${encodeURIComponent(file)}&to_locale=${locale}${flags}`,
    );
    expect(answer.status, answer.text).toBe(200);
    return [answer.body.data.translation_only.string_count, answer.body.data.translation_only.word_count];
  };
  /** What a finished import reports: its strings and, where given, their words. */
  const completed = (strings: number, words?: number) => ({
    status: 'completed',
    string_count: strings,
    ...(words === undefined ? {} : { word_count: words }),
  });
  const NT = '&is_including_not_approved=0&is_including_outdated=0';
  const NA = '&is_including_not_translated=0&is_including_outdated=0';
  const OD = '&is_including_not_translated=0&is_including_not_approved=0';

  it('HIERARCHICAL_JSON: translations, same-as-original, changed sources become outdated, removal', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    expect(await client.importFile(project, 'app.json', fixture('app.json'), 'HIERARCHICAL_JSON')).toMatchObject(
      completed(5, 13),
    );
    // "unknown" is not in the source; "Open {{name}}" equals the source and is not a translation.
    expect(
      await client.importFile(project, 'app.json', fixture('app.de.json'), 'HIERARCHICAL_JSON', { locale: 'de-DE' }),
    ).toMatchObject({ status: 'completed', string_count: 2 });
    expect(await counts(project, 'app.json', 'de-DE')).toEqual([3, 9]);
    await client.importFile(project, 'app.json', fixture('app.de.json'), 'HIERARCHICAL_JSON', {
      locale: 'de-DE',
      is_allow_translation_same_as_original: 'true',
    });
    expect(await counts(project, 'app.json', 'de-DE')).toEqual([2, 7]);
    expect(await counts(project, 'app.json', 'de-DE', OD)).toEqual([0, 0]);
    // The source of menu.file changes: its German translation is now outdated.
    const changed = JSON.parse(fixture('app.json').toString());
    changed.menu.file = 'File menu';
    await client.importFile(project, 'app.json', JSON.stringify(changed), 'HIERARCHICAL_JSON');
    expect(await counts(project, 'app.json', 'de-DE', OD)).toEqual([1, 2]);
    // is_keeping_all_strings=false drops the strings the new upload lacks.
    delete changed.greeting;
    expect(
      await client.importFile(project, 'app.json', JSON.stringify(changed), 'HIERARCHICAL_JSON', {
        is_keeping_all_strings: '0',
      }),
    ).toMatchObject({ status: 'completed', string_count: 4 });
    const files = await client.get(`/1/projects/${project}/files`);
    expect(files.body.data[0]).toMatchObject({ name: 'app.json', string_count: 4, word_count: 10 });
    const exported = await client.get(`/1/projects/${project}/translations?locale=de-DE&source_file_name=app.json`);
    expect(JSON.parse(exported.text)).toEqual({
      menu: { file: 'Datei', open: 'Open {{name}}', recent: ['Erste zuletzt geöffnete Datei'] },
    });
  });

  it('XLIFF 1.2 and 2.0: states of targets', async () => {
    const project = await client.createProject('en-US', ['de-DE', 'ja-JP']);
    expect(await client.importFile(project, 'app.xlf', fixture('app.xlf'), 'XLIFF')).toMatchObject(completed(4, 11));
    await client.importFile(project, 'app.xlf', fixture('app.xlf'), 'XLIFF', { locale: 'de-DE' });
    expect(await counts(project, 'app.xlf', 'de-DE', NT)).toEqual([2, 5]);
    expect(await counts(project, 'app.xlf', 'de-DE', NA)).toEqual([1, 2]);
    expect(await client.importFile(project, 'app2.xlf', fixture('app2.xlf'), 'XLIFF')).toMatchObject(completed(2, 10));
    await client.importFile(project, 'app2.xlf', fixture('app2.xlf'), 'XLIFF', { locale: 'ja-JP' });
    expect(await counts(project, 'app2.xlf', 'ja-JP')).toEqual([1, 7]);
    const exported = await client.get(`/1/projects/${project}/translations?locale=de-DE&source_file_name=app.xlf`);
    expect(exported.text).toContain(
      '<target state="translated">Willkommen bei <g id="1">Quartet</g> &amp; Freunden</target>',
    );
    expect(exported.text).toContain('<target state="needs-review-translation">');
  });

  it('ANDROID_XML, YAML and IOS_STRINGS in UTF-8 and UTF-16', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    expect(await client.importFile(project, 'strings.xml', fixture('strings.xml'), 'ANDROID_XML')).toMatchObject(
      completed(7, 18),
    );
    expect(await client.importFile(project, 'en.yml', fixture('en.yml'), 'YAML')).toMatchObject(completed(3, 12));
    const strings = fixture('Localizable.strings');
    expect(await client.importFile(project, 'Localizable.strings', strings, 'IOS_STRINGS')).toMatchObject(
      completed(3, 7),
    );
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(strings.toString('utf8').replace('Main window', 'Hauptfenster'), 'utf16le'),
    ]);
    expect(
      await client.importFile(project, 'Localizable.strings', utf16, 'IOS_STRINGS', { locale: 'de-DE' }),
    ).toMatchObject({ status: 'completed', string_count: 1 });
    const bigEndian = Buffer.from(strings.toString('utf8').replace('Hello, %@!', 'Hallo, %@!'), 'utf16le').swap16();
    expect(
      await client.importFile(project, 'Localizable.strings', bigEndian, 'IOS_STRINGS', { locale: 'de-DE' }),
    ).toMatchObject({ status: 'completed', string_count: 1 });
    // Each upload translated one string; the untranslated (same as source) entries changed nothing.
    expect(await counts(project, 'Localizable.strings', 'de-DE')).toEqual([1, 3]);
    const yaml = (await client.get(`/1/projects/${project}/translations?locale=en-US&source_file_name=en.yml`)).text;
    expect(yaml).toMatch(/^en:\n/);
    const android = (await client.get(`/1/projects/${project}/translations?locale=en-US&source_file_name=strings.xml`))
      .text;
    expect(android).toContain('<item quantity="other">%d songs found</item>');
  });

  const failures: [string, string, Buffer | string, string, RegExp][] = [
    ['binary file', 'a.po', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0xff, 0x10, 0x00]), 'GNU_PO', /binary/],
    ['JSON sent as PO', 'a.po', '{"hello": "world"}', 'GNU_PO', /not a valid GNU_PO file/],
    ['broken PO', 'a.po', 'msgid "hello\nmsgstr ""\n', 'GNU_PO', /not a valid GNU_PO file/],
    [
      'duplicate msgid',
      'a.po',
      'msgid "a"\nmsgstr ""\n\nmsgid "a"\nmsgstr ""\n',
      'GNU_PO',
      /line 4: duplicate message/,
    ],
    ['empty PO', 'a.po', '# only a comment\n', 'GNU_PO', /no strings found/],
    ['PO as JSON', 'a.json', fixture('messages.pot'), 'HIERARCHICAL_JSON', /not valid JSON/],
    ['Latin-1 JSON', 'a.json', Buffer.from('{"a": "caf\xe9"}', 'latin1'), 'HIERARCHICAL_JSON', /not valid UTF-8/],
    [
      'UTF-16 JSON',
      'a.json',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"a": "b"}', 'utf16le')]),
      'HIERARCHICAL_JSON',
      /must be UTF-8; this one is UTF-16/,
    ],
    [
      'billion laughs',
      'a.xlf',
      '<?xml version="1.0"?>\n' +
        '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n' +
        '<xliff version="1.2"><file><body>' +
        '<trans-unit id="a"><source>&lol2;</source></trans-unit></body></file></xliff>',
      'XLIFF',
      /DOCTYPE or ENTITY declaration is refused/,
    ],
    [
      'external entity',
      'a.xml',
      '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<resources><string name="a">&xxe;</string></resources>',
      'ANDROID_XML',
      /DOCTYPE or ENTITY declaration is refused/,
    ],
    [
      'undeclared entity',
      'a.xml',
      '<resources><string name="a">&nbsp;</string></resources>',
      'ANDROID_XML',
      /undeclared entity &nbsp;/,
    ],
    [
      'malformed XML',
      'a.xlf',
      '<xliff version="1.2"><file><body><trans-unit id="a"><source>x</trans-unit>',
      'XLIFF',
      /not well-formed XML/,
    ],
    ['not XLIFF', 'a.xlf', '<html><body>hi</body></html>', 'XLIFF', /no <xliff> root/],
    [
      'YAML alias bomb',
      'a.yml',
      'a: &a ["x","x","x","x","x","x","x","x","x"]\n' +
        'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n' +
        'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n' +
        'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n' +
        'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n',
      'YAML',
      /YAML refused/,
    ],
    ['broken strings', 'a.strings', '"a" = "b"\n"c" = "d";', 'IOS_STRINGS', /expected ";"/],
    // Names with a path: test/quotes/onesky-clients.test.ts (base names saved, ".." refused with a 400).
    ['translation before its source', 'missing.po', fixture('messages.de.po'), 'GNU_PO', /in the base language first/],
  ];

  it.each(failures)('%s → a failed import with a clear message', async (_name, fileName, content, format, message) => {
    const project = await client.createProject('en-US', ['de-DE']);
    const extra: Record<string, string> = _name.startsWith('translation') ? { locale: 'de-DE' } : {};
    const task = await client.importFile(project, fileName, content, format, extra);
    expect(task.status).toBe('failed');
    expect(task.message).toMatch(message);
    expect((await client.get(`/1/projects/${project}/files`)).body.meta.record_count).toBe(0);
  });

  it('keeps the previous file whole when a re-upload fails', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    await client.importFile(project, 'messages.po', fixture('messages.pot'), 'GNU_PO');
    const broken = fixture('messages.pot').toString().replace('msgid "Quit"', '') + '\nmsgid "unterminated\n';
    expect(
      (await client.importFile(project, 'messages.po', broken, 'GNU_PO', { is_keeping_all_strings: 'false' })).status,
    ).toBe('failed');
    expect((await client.get(`/1/projects/${project}/files`)).body.data[0]).toMatchObject({
      string_count: 8,
      word_count: 39,
    });
    // Uploads are kept only until their import ends, failed or not.
    expect(await server.db.kysely.selectFrom('quote_import_payloads').select('import_id').execute()).toEqual([]);
  });

  it('refuses bad upload requests with a 4xx in the OneSky shape', async () => {
    const project = await client.createProject();
    const unknownFormat = await client.upload(project, 'a.po', 'x', 'WORD_DOC');
    expect(unknownFormat.status).toBe(400);
    expect(unknownFormat.body).toEqual({
      meta: { status: 400, message: expect.stringContaining('file_format') },
      data: {},
    });
    expect((await client.upload(project, 'a.po', 'x', 'GNU_PO', { locale: 'klingon' })).body.meta.message).toMatch(
      /^locale/,
    );
    const noFile = new FormData();
    noFile.append('file_format', 'GNU_PO');
    expect((await client.call('POST', `/1/projects/${project}/files`, { form: noFile })).body.meta.message).toMatch(
      /^file:/,
    );
    const json = await client.call('POST', `/1/projects/${project}/files`, { json: { file_format: 'GNU_PO' } });
    expect(json.status).toBe(415);
    expect((await client.upload(999999, 'a.po', 'x', 'GNU_PO')).status).toBe(404);
    // Wrong credentials in the query string are refused before the upload is read.
    const form = new FormData();
    form.append('file_format', 'GNU_PO');
    form.append('file', new Blob([new Uint8Array(fixture('messages.pot'))]), 'a.po');
    const refused = await client.call('POST', `/1/projects/${project}/files`, {
      form,
      auth: { ...client.auth(), dev_hash: '0'.repeat(32) },
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ meta: { status: 401, message: 'Invalid api_key or dev_hash' }, data: {} });
  });

  it('takes the credentials from the multipart body, as OneSky clients send them', async () => {
    const project = await client.createProject();
    const form = new FormData();
    for (const [key, value] of Object.entries(client.auth())) form.append(key, value);
    form.append('file_format', 'GNU_PO');
    form.append('file', new Blob([new Uint8Array(fixture('other.pot'))]), 'other.po');
    const answer = await client.call('POST', `/1/projects/${project}/files`, { form, auth: null });
    expect(answer.status).toBe(201);
    expect(answer.body.data).toMatchObject({
      name: 'other.po',
      format: 'GNU_PO',
      language: { code: 'en-US' },
      import: { id: expect.any(Number), created_at: expect.stringMatching(/\+0000$/) },
    });
    expect(await client.waitImport(project, answer.body.data.import.id)).toMatchObject(completed(2));
    const deleted = await client.call('DELETE', `/1/projects/${project}/files?file_name=other.po`);
    expect(deleted.status).toBe(200);
    expect((await client.call('DELETE', `/1/projects/${project}/files?file_name=other.po`)).status).toBe(404);
  });

  it('re-uploads of a PO file of 1,200 strings: changed translations, moved and changed sources', async () => {
    // Enough strings for several statements of every bulk write (inserts and updates). Every
    // 100th string is a plural (3 + 3 words), whose msgid_plural can change (a PO key is its msgid).
    const project = await client.createProject('en-US', ['de-DE']);
    const ids = Array.from({ length: 1200 }, (_, i) => i);
    const po = (entries: string[]) =>
      [
        'msgid ""',
        'msgstr ""',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"',
        '',
        ...entries,
      ].join('\n');
    const entry = (i: number, forms: string, plural = '') =>
      i % 100 === 0
        ? `msgid "String number ${i}"\nmsgid_plural "Strings number ${i}${plural}"\n` +
          `msgstr[0] "${forms}"\nmsgstr[1] "${forms}"\n`
        : `msgid "String number ${i}"\nmsgstr "${forms}"\n`;
    const german = (i: number, fuzzy: boolean, text = `Zeichenkette ${i}`) =>
      `${fuzzy ? '#, fuzzy\n' : ''}${entry(i, text)}`;
    expect(await client.importFile(project, 'big.po', po(ids.map((i) => entry(i, ''))), 'GNU_PO')).toMatchObject(
      completed(1200, 3636),
    );
    // Every other translation fuzzy, the last 100 missing (empty).
    const first = ids.map((i) => german(i, i % 2 === 0, i >= 1100 ? '' : undefined));
    expect(await client.importFile(project, 'big.po', po(first), 'GNU_PO', { locale: 'de-DE' })).toMatchObject(
      completed(1200),
    );
    expect(await counts(project, 'big.po', 'de-DE', NA)).toEqual([550, 1683]);
    expect(await counts(project, 'big.po', 'de-DE', NT)).toEqual([100, 303]);
    // No longer fuzzy, a third reworded, the missing ones translated: all approved.
    const second = ids.map((i) => german(i, false, i % 3 === 0 ? `Text Nummer ${i}` : undefined));
    expect(await client.importFile(project, 'big.po', po(second), 'GNU_PO', { locale: 'de-DE' })).toMatchObject(
      completed(1200),
    );
    expect(await counts(project, 'big.po', 'de-DE')).toEqual([0, 0]);
    // The source in reverse order, the plurals changed: their translations are outdated.
    const reversed = [...ids].reverse();
    expect(
      await client.importFile(project, 'big.po', po(reversed.map((i) => entry(i, '', ' changed'))), 'GNU_PO'),
    ).toMatchObject({ status: 'completed', string_count: 1200, word_count: 3648 });
    expect(await counts(project, 'big.po', 'de-DE', OD)).toEqual([12, 84]);
    expect(await counts(project, 'big.po', 'de-DE')).toEqual([12, 84]);
    const exported = (await client.get(`/1/projects/${project}/translations?locale=de-DE&source_file_name=big.po`))
      .text;
    expect([...exported.matchAll(/^msgid "String number (\d+)"$/gm)].map((match) => Number(match[1]))).toEqual(
      reversed,
    );
    expect(exported).toContain('msgid "String number 1197"\nmsgstr "Text Nummer 1197"\n');
    expect(exported).toContain('msgid "String number 1198"\nmsgstr "Zeichenkette 1198"\n');
    expect(exported).toContain(
      'msgid "String number 1100"\nmsgid_plural "Strings number 1100 changed"\nmsgstr[0] "Zeichenkette 1100"\n',
    );
  });

  it('imports a PO file of 100,000 strings', async () => {
    const project = await client.createProject();
    const lines = ['msgid ""', 'msgstr ""', '"Content-Type: text/plain; charset=UTF-8\\n"', ''];
    for (let i = 0; i < 100_000; i++) {
      lines.push(`#: src/file${i % 100}.c:${i}`, `msgid "Message number ${i} of the big catalogue"`, 'msgstr ""', '');
    }
    const task = await client.importFile(project, 'big.po', lines.join('\n'), 'GNU_PO');
    expect(task).toMatchObject({ status: 'completed', string_count: 100_000, word_count: 700_000 });
  }, 120_000);
});

describe('oversize uploads and interrupted imports', () => {
  let server: TestServer;
  afterAll(async () => {
    await server?.close();
  });

  it('fails an upload over QUOTES_MAX_FILE_BYTES, and resumes an import interrupted by a restart', async () => {
    server = await startQuotesServer('sqlite', { QUOTES_MAX_FILE_BYTES: '2048' });
    const client = await Client.create(server.url);
    const project = await client.createProject();
    const task = await client.importFile(project, 'big.po', 'x'.repeat(4096), 'GNU_PO');
    expect(task).toMatchObject({
      status: 'failed',
      message: expect.stringContaining('larger than the limit of 2048 bytes'),
    });

    // A process died while importing: the row says running, with its payload still stored.
    const row = await insertRunningImport(server, project, 'other.po', { attempts: 1, leaseUntil: null });
    // And one interrupted for the third time: it fails.
    const third = await insertRunningImport(server, project, 'third.po', { attempts: 3, leaseUntil: null });
    const database = server.database;
    await server.close({ keepDatabase: true });
    server = await startQuotesServer('sqlite', {}, database);
    const again = new Client(server.url, client.apiKey, client.apiSecret, client.token);
    expect(await again.waitImport(project, row)).toMatchObject({ status: 'completed', string_count: 2 });
    expect(await again.waitImport(project, third)).toMatchObject({
      status: 'failed',
      message: expect.stringContaining('interrupted 3 times'),
    });
    // Uploads are kept only until their import ends.
    expect(await server.db.kysely.selectFrom('quote_import_payloads').select('import_id').execute()).toEqual([]);
    await server.close();
    await database.drop();
    server = undefined as any;
  });
});
