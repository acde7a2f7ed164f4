// SQL of import tasks: the uploads they read, the queue's claims and leases (jobs/import-queue.ts), and
// the pages of a project's imports.
import type { ExpressionBuilder } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { DB } from '../../db/schema.js';
import type { ImportRow, StringTotals } from './rows.js';

export async function findImport(db: Executor, projectId: number, id: number): Promise<ImportRow | undefined> {
  return db
    .selectFrom('quote_imports')
    .select([
      'id',
      'project_id',
      'file_name',
      'format',
      'locale',
      'keep_all_strings',
      'allow_same_as_original',
      'status',
      'message',
      'byte_count',
      'string_count',
      'word_count',
      'attempts',
      'created_at',
      'started_at',
      'finished_at',
    ])
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export type NewImport = Omit<ImportRow, 'id'>;

/** Stores an import and, unless it failed already, the upload it reads (kept until the import ends). */
export async function insertImport(db: Executor, values: NewImport, payload: Buffer | null): Promise<number> {
  const row = await db.insertInto('quote_imports').values(values).returning('id').executeTakeFirstOrThrow();
  if (payload) await db.insertInto('quote_import_payloads').values({ import_id: row.id, payload }).execute();
  return row.id;
}

export async function baseLocaleOf(db: Executor, projectId: number): Promise<string | undefined> {
  const project = await db
    .selectFrom('quote_projects')
    .select('base_locale')
    .where('id', '=', projectId)
    .executeTakeFirst();
  return project?.base_locale;
}

/** One try of a running import: the attempt that claimed it is the one that may end it. */
export interface HeldImport {
  id: number;
  attempts: number;
}

/** The running imports of `held` that are still theirs to finish: `held.attempts` (one statement). */
const stillHeld = (held: HeldImport[]) => (eb: ExpressionBuilder<DB, 'quote_imports'>) =>
  eb.and([
    eb('status', '=', 'running'),
    eb.or(held.map((job) => eb.and([eb('id', '=', job.id), eb('attempts', '=', job.attempts)]))),
  ]);

/**
 * Marks an import completed with what it read, and drops its upload; false when this try of it
 * (`job.attempts`) no longer holds it (its lease ran out and another process took it over, jobs/import-queue.ts).
 */
export async function completeImport(
  db: Executor,
  job: HeldImport,
  counts: StringTotals,
  at: number,
): Promise<boolean> {
  const completed = await db
    .updateTable('quote_imports')
    .set({
      status: 'completed',
      message: null,
      string_count: counts.strings,
      word_count: counts.words,
      finished_at: at,
      lease_until: null,
    })
    .where(stillHeld([job]))
    .executeTakeFirst();
  if (!Number(completed.numUpdatedRows)) return false;
  await dropPayloads(db, [job.id]);
  return true;
}

/** Drops the stored uploads of imports that have ended. */
export async function dropPayloads(db: Executor, importIds: number[]): Promise<void> {
  if (importIds.length) await db.deleteFrom('quote_import_payloads').where('import_id', 'in', importIds).execute();
}

// ---- the import queue (jobs/import-queue.ts) ----------------------------------------------------

export type ClaimedImport = ImportRow & { payload: Buffer | null };

/** An upload's payload at hand, as stored for its import. */
export interface Upload {
  importId: number;
  payload: Buffer;
}

/**
 * Claims the oldest queued import for this process (queued → running, one atomic UPDATE that
 * another process may win: then the next one is tried, five times at most), held until
 * `leaseUntil`, with its upload, read from the table unless it is the one at hand.
 */
export async function claimImport(
  db: Executor,
  now: number,
  leaseUntil: number,
  atHand: Upload | null = null,
): Promise<ClaimedImport | null> {
  for (let tries = 0; tries < 5; tries++) {
    const next = await db
      .selectFrom('quote_imports')
      .select('id')
      .where('status', '=', 'queued')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (!next) return null;
    const claimed = await db
      .updateTable('quote_imports')
      .set((eb) => ({ status: 'running', started_at: now, lease_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('id', '=', next.id)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) continue;
    const job = db.selectFrom('quote_imports').selectAll().where('id', '=', next.id).executeTakeFirstOrThrow();
    if (atHand?.importId === next.id) return { ...(await job), payload: atHand.payload };
    const [row, stored] = await Promise.all([
      job,
      db.selectFrom('quote_import_payloads').select('payload').where('import_id', '=', next.id).executeTakeFirst(),
    ]);
    return { ...row, payload: stored?.payload ?? null };
  }
  return null;
}

/** Renews the leases of the imports this process works on, those that are still its own. */
export async function renewImportLeases(db: Executor, held: HeldImport[], leaseUntil: number): Promise<void> {
  if (!held.length) return;
  await db.updateTable('quote_imports').set({ lease_until: leaseUntil }).where(stillHeld(held)).execute();
}

/** Fails a running import with a message for the uploader and drops its upload; false if this try lost it. */
export async function failImport(db: Executor, job: HeldImport, message: string, at: number): Promise<boolean> {
  const failed = await db
    .updateTable('quote_imports')
    .set({ status: 'failed', message, finished_at: at, lease_until: null })
    .where(stillHeld([job]))
    .executeTakeFirst();
  if (!Number(failed.numUpdatedRows)) return false;
  await dropPayloads(db, [job.id]);
  return true;
}

/** Queues again a running import this try could not finish (the database went away under it). */
export async function requeueImport(db: Executor, job: HeldImport): Promise<void> {
  await db
    .updateTable('quote_imports')
    .set({ status: 'queued', lease_until: null })
    .where(stillHeld([job]))
    .execute();
}

/**
 * Fails the running imports whose lease ran out before `now` (no live process works on them) that
 * have had `maxAttempts`, and drops their uploads. A row without a lease counts as run out.
 */
export async function failStaleImports(db: Executor, now: number, maxAttempts: number, message: string): Promise<void> {
  const failed = await db
    .updateTable('quote_imports')
    .set({ status: 'failed', message, finished_at: now, lease_until: null })
    .where('status', '=', 'running')
    .where(leaseRunOut(now))
    .where('attempts', '>=', maxAttempts)
    .returning('id')
    .execute();
  await dropPayloads(
    db,
    failed.map((row) => row.id),
  );
}

/** Queues again the running imports whose lease ran out before `now`; returns their number. */
export async function requeueStaleImports(db: Executor, now: number): Promise<number> {
  const requeued = await db
    .updateTable('quote_imports')
    .set({ status: 'queued', lease_until: null })
    .where('status', '=', 'running')
    .where(leaseRunOut(now))
    .executeTakeFirst();
  return Number(requeued.numUpdatedRows);
}

const leaseRunOut = (now: number) => (eb: ExpressionBuilder<DB, 'quote_imports'>) =>
  eb.or([eb('lease_until', '<', now), eb('lease_until', 'is', null)]);

/** The imports of a project, or those in some states. */
function importsOf(db: Executor, projectId: number, statuses: string[] | null) {
  const query = db.selectFrom('quote_imports').where('project_id', '=', projectId);
  return statuses ? query.where('status', 'in', statuses) : query;
}

export async function countImports(db: Executor, projectId: number, statuses: string[] | null): Promise<number> {
  const row = await importsOf(db, projectId, statuses)
    .select(db.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of a project's imports, newest first. */
export async function pageOfImports(
  db: Executor,
  projectId: number,
  statuses: string[] | null,
  limit: number,
  offset: number,
) {
  return importsOf(db, projectId, statuses)
    .select(['id', 'file_name', 'status', 'created_at'])
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}
