// A string belongs to its file on both databases: none can name a missing file, and a file's
// strings (and their translations) go with it. SQLite keeps this with a foreign key; PostgreSQL
// with triggers that check once a statement (migration 3004, faster for imports), so both are
// held to the same behaviour here, and PostgreSQL also to the key's lock.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, startQuotesServer } from './helpers.js';

const FILE = JSON.stringify({ greeting: 'Hello there', farewell: 'Goodbye for now' });
const GERMAN = JSON.stringify({ greeting: 'Hallo', farewell: 'Tschüss' });

describe.each(databaseKinds)('strings and their files on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const count = async (table: 'quote_strings' | 'quote_translations') =>
    Number(
      (await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(server.db.kysely)).rows[0].n,
    );

  /** A project with app.json imported in English and German. */
  async function projectWithFile(): Promise<{ project: number; fileId: number }> {
    const project = await client.createProject('en-US', ['de-DE']);
    expect(await client.importFile(project, 'app.json', FILE, 'HIERARCHICAL_JSON')).toMatchObject({
      status: 'completed',
    });
    expect(
      await client.importFile(project, 'app.json', GERMAN, 'HIERARCHICAL_JSON', { locale: 'de-DE' }),
    ).toMatchObject({ status: 'completed' });
    const file = await server.db.kysely
      .selectFrom('quote_files')
      .select('id')
      .where('project_id', '=', project)
      .executeTakeFirstOrThrow();
    return { project, fileId: Number(file.id) };
  }

  it('refuses a string that names no file, and leaves nothing of the statement', async () => {
    const { fileId } = await projectWithFile();
    const before = await count('quote_strings');
    const insert = (fileIds: number[]) =>
      server.db.kysely
        .insertInto('quote_strings')
        .values(
          fileIds.map((file_id, i) => ({
            file_id,
            key: `orphan ${i}`,
            context: null,
            source: 'orphan',
            source_plural: null,
            word_count: 1,
            position: 100 + i,
            source_changed_at: 0,
          })),
        )
        .execute();
    // One good row and one orphan in one statement: the whole statement fails.
    await expect(insert([fileId, fileId + 1_000_000])).rejects.toThrow(/foreign key/i);
    expect(await count('quote_strings')).toBe(before);
    await expect(
      server.db.kysely
        .updateTable('quote_strings')
        .set({ file_id: fileId + 1_000_000 })
        .where('file_id', '=', fileId)
        .execute(),
    ).rejects.toThrow(/foreign key/i);
  });

  it('deletes a file’s strings and translations with the file, and with its project', async () => {
    const first = await projectWithFile();
    const second = await projectWithFile();
    const strings = await count('quote_strings');
    const translations = await count('quote_translations');

    const removed = await client.call('DELETE', `/1/projects/${first.project}/files?file_name=app.json`);
    expect(removed.status, removed.text).toBe(200);
    expect(await count('quote_strings')).toBe(strings - 2);
    expect(await count('quote_translations')).toBe(translations - 2);

    const dropped = await client.call('DELETE', `/1/projects/${second.project}`);
    expect(dropped.status, dropped.text).toBe(200);
    expect(await count('quote_strings')).toBe(strings - 4);
    expect(await count('quote_translations')).toBe(translations - 4);
  });

  // Only PostgreSQL has concurrent writers (SQLite has one connection).
  if (kind === 'postgres') {
    it('keeps a file whose new strings are not committed yet from being deleted', async () => {
      const { fileId } = await projectWithFile();
      const writer = new pg.Client({ connectionString: server.database.url });
      const deleter = new pg.Client({ connectionString: server.database.url });
      await Promise.all([writer.connect(), deleter.connect()]);
      try {
        await writer.query('begin');
        await writer.query(
          `insert into quote_strings (file_id, key, source, word_count, position, source_changed_at)
           values ($1, 'late', 'A late string', 3, 9, 0)`,
          [fileId],
        );
        // The writer holds the file: a delete waits for it (here: gives up after 300 ms).
        await deleter.query(`set lock_timeout = '300ms'`);
        await expect(deleter.query('delete from quote_files where id = $1', [fileId])).rejects.toThrow(/lock timeout/);
        await writer.query('commit');
        // Once committed, the delete goes through and takes the late string with it.
        await deleter.query('delete from quote_files where id = $1', [fileId]);
        const left = await writer.query('select count(*)::int as n from quote_strings where file_id = $1', [fileId]);
        expect(left.rows[0].n).toBe(0);
      } finally {
        await Promise.all([writer.end(), deleter.end()]);
      }
    });
  }
});
