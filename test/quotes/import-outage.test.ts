// Imports meet the database going away: a run cut by a PostgreSQL outage ends completed (run
// again) or failed with a message soon after the database is back, never left running; a running
// import no live process works on (its lease ran out) is queued again without a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds, postgresAvailable } from '../support/databases.js';
import { request } from '../support/http.js';
import { bringBack, pause, takeDown, timeUntil, writing } from '../support/outage.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, insertRunningImport, startQuotesServer } from './helpers.js';

/** A PO file big enough that its import is still running a moment after it started. */
function bigPo(strings: number): string {
  const lines = ['msgid ""', 'msgstr ""', '"Content-Type: text/plain; charset=UTF-8\\n"', ''];
  for (let i = 0; i < strings; i++) lines.push(`msgid "Outage message ${i} of the catalogue"`, 'msgstr ""', '');
  return lines.join('\n');
}

/** The import's row as the table has it (the API says in-progress for queued and running alike). */
const statusOf = async (server: TestServer, id: number) =>
  (await server.db.kysely.selectFrom('quote_imports').select('status').where('id', '=', id).executeTakeFirst())?.status;

describe.runIf(postgresAvailable)('an import cut by a PostgreSQL outage', () => {
  let server: TestServer;
  let client: Client;
  beforeAll(async () => {
    server = await startQuotesServer('postgres');
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    if (server) await bringBack(server.database).catch(() => {});
    await server?.close();
  });

  it('ends completed or failed with a message within 30 s of the database being back', async () => {
    const project = await client.createProject();
    const uploaded = await client.upload(project, 'outage.po', bigPo(100_000), 'GNU_PO');
    expect(uploaded.status).toBe(201);
    const id: number = uploaded.body.data.import.id;
    // Cut while the import's transaction is copying its strings in (on a busy machine the worker's
    // parse before it can take well over 30 s).
    await timeUntil('import writing', () => writing(server.database, 'copy%quote_strings%'), 150_000);
    expect(await statusOf(server, id)).toBe('running');

    await takeDown(server.database);
    await pause(3000);
    await bringBack(server.database);
    const back = Date.now();
    let task: any;
    const finished = await timeUntil('import ended', async () => {
      const answer = await client.get(`/1/projects/${project}/import-tasks/${id}`);
      task = answer.body?.data;
      return answer.status === 200 && task.status !== 'in-progress';
    });
    console.info(`import ${task.status} ${finished} ms after the database was back (${Date.now() - back} ms)`);
    if (task.status === 'failed') expect(task.message).toMatch(/\w/);
    else expect(task).toMatchObject({ status: 'completed', string_count: 100_000 });

    // The process still serves, and a new upload afterwards completes.
    expect((await request(`${server.url}/healthz`)).status).toBe(200);
    expect(await client.importFile(project, 'after.po', fixture('other.pot'), 'GNU_PO')).toMatchObject({
      status: 'completed',
      string_count: 2,
    });
  }, 300_000);
});

describe.each(databaseKinds)('a running import nobody works on, on %s', (kind) => {
  let server: TestServer;
  afterAll(async () => {
    await server?.close();
  });

  it('is queued again once its lease ran out, without a restart', async () => {
    server = await startQuotesServer(kind);
    const client = await Client.create(server.url);
    const project = await client.createProject();
    // A process claimed it and then lost the database (or died): running, its lease run out.
    const id = await insertRunningImport(server, project, 'orphan.po');
    expect(await client.waitImport(project, id)).toMatchObject({ status: 'completed', string_count: 2 });
  }, 60_000);
});
