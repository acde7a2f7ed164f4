// Strings that COPY's text format must escape (tabs, newlines, backslashes, the end marker `\.`,
// `\N`), unicode and very long ones come back from an import exactly as uploaded, on both
// databases (PostgreSQL writes an import through COPY, src/db/copy.ts); a NUL is refused on both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyRows, CopyValueError } from '../../src/db/copy.js';
import { openDatabase, writeTransaction, type Database } from '../../src/db/index.js';
import { sql } from 'kysely';
import { createTestDatabase, databaseKinds, postgresAvailable, type TestDatabase } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, startQuotesServer } from './helpers.js';

const LONG = 'Lorem ipsum\tdolor\\sit\namet. '.repeat(40_000); // ≈ 1.1 MB
const HOSTILE = [
  'tab\there',
  'new\nline',
  'carriage\r\nreturn',
  'back\\slash',
  '\\',
  '\\.',
  'line\n\\.\nafter the end marker',
  '\\N',
  '\\\\N',
  '\\t is not a tab',
  '\t\n\\\r',
  'Grüße, 日本語, עברית, 🙂‍↔️, e\u0301',
  '\u0001\u001f\u007f\u2028\u2029 control characters',
  ' leading and trailing spaces ',
  LONG,
];

/** A flat JSON file: hostile keys and values, the key of value i also hostile. */
function hostileFile(values: string[]): Record<string, string> {
  const file: Record<string, string> = {};
  values.forEach((value, i) => {
    file[`k${i} ${HOSTILE[i % HOSTILE.length].slice(0, 40)}`] = value;
  });
  return file;
}

describe.each(databaseKinds)('imports of hostile strings on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind, { QUOTES_MAX_FILE_BYTES: String(16 * 1024 * 1024) });
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const sources = async (project: number) => {
    const query = 'source_file_name=app.json&file_format=I18NEXT_MULTILINGUAL_JSON';
    const answer = await client.get(`/1/projects/${project}/translations/multilingual?${query}`);
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    return JSON.parse(answer.text)['en-US'].translation;
  };
  const translations = async (project: number) => {
    const answer = await client.get(`/1/projects/${project}/translations?locale=de-DE&source_file_name=app.json`);
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    return JSON.parse(answer.text);
  };

  it('round-trips sources and translations exactly, through first upload, re-upload and removal', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    const first = hostileFile(HOSTILE);
    expect(await client.importFile(project, 'app.json', JSON.stringify(first), 'HIERARCHICAL_JSON')).toMatchObject({
      status: 'completed',
      string_count: HOSTILE.length,
    });
    expect(await sources(project)).toEqual(first);

    // Translations of every string (written by the bulk writes, not COPY): also exact.
    const german = Object.fromEntries(Object.entries(first).map(([key, value]) => [key, `${value}\t\\ü`]));
    const translated = await client.importFile(project, 'app.json', JSON.stringify(german), 'HIERARCHICAL_JSON', {
      locale: 'de-DE',
    });
    expect(translated).toMatchObject({ status: 'completed', string_count: HOSTILE.length });
    expect(await translations(project)).toEqual(german);

    // Re-upload: one source changed by a backslash, the order reversed, one string gone, one new.
    const keys = Object.keys(first);
    const second: Record<string, string> = {};
    for (const key of keys.slice(1).reverse()) second[key] = first[key];
    second[keys[3]] = `${first[keys[3]]}\\`;
    second['new\tkey\\.'] = '\\.\n';
    const reimport = await client.importFile(project, 'app.json', JSON.stringify(second), 'HIERARCHICAL_JSON', {
      is_keeping_all_strings: 'false',
    });
    expect(reimport).toMatchObject({ status: 'completed', string_count: HOSTILE.length });
    expect(await sources(project)).toEqual(second);
    // The file's order is the upload's.
    expect(Object.keys(await sources(project))).toEqual(Object.keys(second));
    // The changed string's translation is now outdated, the others still current.
    const onlyOutdated = 'is_including_not_translated=0&is_including_not_approved=0';
    const outdated = await client.get(
      `/1/projects/${project}/quotations?files=app.json&to_locale=de-DE&${onlyOutdated}`,
    );
    expect(outdated.body.data.translation_only.string_count).toBe(1);
  });

  it('refuses a string with a NUL character, and keeps the previous upload whole', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    await client.importFile(project, 'app.json', JSON.stringify({ a: 'one', b: 'two' }), 'HIERARCHICAL_JSON');
    const failed = await client.importFile(
      project,
      'app.json',
      JSON.stringify({ a: 'one', b: 'two\u0000three', c: 'new' }),
      'HIERARCHICAL_JSON',
    );
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed.message).toBe('the string "two\\0three" contains a NUL character');
    expect(await sources(project)).toEqual({ a: 'one', b: 'two' });
  });

  it('writes nothing of a file refused after its first batches, new or re-uploaded', async () => {
    // Units are written batch by batch (2,000 a batch) as the pool reads them: a NUL character
    // near the end is found after the first batches are written, and they must go with the rest.
    const project = await client.createProject('en-US', ['de-DE']);
    const strings = (n: number, last: string) => {
      const file: Record<string, string> = {};
      for (let i = 0; i < n; i++) file[`k${i}`] = `String ${i}`;
      file.last = last;
      return JSON.stringify(file);
    };
    const refused = await client.importFile(project, 'app.json', strings(9000, 'x\u0000y'), 'HIERARCHICAL_JSON');
    expect(refused).toMatchObject({ status: 'failed', message: 'the string "x\\0y" contains a NUL character' });
    expect((await client.get(`/1/projects/${project}/files`)).body.meta.record_count).toBe(0);

    expect(await client.importFile(project, 'app.json', strings(3, 'end'), 'HIERARCHICAL_JSON')).toMatchObject({
      status: 'completed',
      string_count: 4,
    });
    const again = await client.importFile(project, 'app.json', strings(9000, 'x\u0000y'), 'HIERARCHICAL_JSON', {
      is_keeping_all_strings: 'false',
    });
    expect(again).toMatchObject({ status: 'failed' });
    expect(await sources(project)).toEqual({ k0: 'String 0', k1: 'String 1', k2: 'String 2', last: 'end' });
  });
});

describe.runIf(postgresAvailable)('COPY on PostgreSQL', () => {
  let database: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    db = await openDatabase({ kind: 'postgres', url: database.url, poolSize: 2, queryTimeoutMs: 60_000 });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it('copies every value exactly, NULL as NULL, and fails a NUL without breaking the connection', async () => {
    const rows = [...HOSTILE, '', 'N', '\\N'].map((text, i) => [i, text, i % 2 ? null : `${text}\r`] as const);
    const back = await writeTransaction(db, async (trx) => {
      await sql`create temp table copied (n integer, a text, b text) on commit drop`.execute(trx);
      expect(await copyRows(trx, 'copied', ['n', 'a', 'b'], rows)).toBe(rows.length);
      return (await sql<{ n: number; a: string; b: string | null }>`select n, a, b from copied order by n`.execute(trx))
        .rows;
    });
    expect(back.map((row) => [row.n, row.a, row.b])).toEqual(rows.map((row) => [...row]));

    // The NUL is met after rows were sent: the COPY is cancelled, the transaction rolled back.
    const nul = writeTransaction(db, async (trx) => {
      await sql`create table kept (a text)`.execute(trx);
      await copyRows(
        trx,
        'kept',
        ['a'],
        [['fine'], ...Array.from({ length: 20_000 }, () => ['x'.repeat(10)]), ['a\0b']],
      );
    });
    await expect(nul).rejects.toBeInstanceOf(CopyValueError);
    // Both connections of the pool still answer, and nothing of the failed transaction remains.
    const answers = await Promise.all(
      [1, 2].map(() => sql<{ t: string | null }>`select to_regclass('kept')::text as t`.execute(db.kysely)),
    );
    expect(answers.map((answer) => answer.rows[0].t)).toEqual([null, null]);
  });
});
