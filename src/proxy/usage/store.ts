// SQL of usage analytics (docs/proxy-operator.md, "Usage analytics"): a periodic job rolls the
// ledger's finished rows up (a minute per model and provider, an hour per model, provider and key,
// each with a latency histogram) and keeps the failed requests apart; every query of the operator
// reads these tables, never the ledger by time (it has no index on time, and must not get one:
// each index costs every billed request a page written at reserve and at settle).
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { writeTransaction, type Database, type Dialect, type Executor } from '../../db/index.js';
import type { DB } from '../../db/schema.js';
import type { ProxyUsageKey } from '../common/tables.js';
import { USAGE_COUNTERS } from '../common/migrations.js';

export type Grain = ProxyUsageKey['grain'];
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
/** How long each grain is kept: minutes serve ranges up to 7 days, hours up to Routstr's 12 months. */
const KEEP_MS: Record<Grain, number> = { m: 8 * 24 * HOUR_MS, h: 367 * 24 * HOUR_MS };
/** Failed requests kept for the error details, at most (besides their age). */
const MAX_ERROR_ROWS = 100_000;
/**
 * Ledger rows one run reads (one transaction: it holds SQLite's write lock while it runs). A run
 * upserts each of its buckets once, so larger runs write less per row; 4,000 take no longer than
 * the 2,000 that were read row by row did (a few ms at one key, ~50 ms at hundreds).
 */
const BATCH_ROWS = 4000;
/** Pending rows one run looks at again. */
const PENDING_ROWS = 1000;
/** How long an id missing from the ledger is waited for (a late commit) before it counts as rolled back. */
const GAP_WAIT_MS = 60_000;
/** Missing ids remembered per run at most (a sequence gap after many rolled-back reservations). */
const MAX_GAPS_PER_RUN = 2000;
const PRUNE_EVERY_MS = HOUR_MS;
/** Rows per multi-row statement (SQLite allows 32,766 parameters). */
const ROWS_PER_INSERT = 400;

// ------------------------------------------------------------------------------------------------
// Latency histogram: bin b >= 1 holds [1.2^(b-1), 1.2^b) ms; a percentile is its bin's geometric
// middle, within 10% of the true figure. Bin 0 holds latencies under 1 ms; the last bin everything
// from about an hour on.

const BIN_BASE = 1.2;
const LAST_BIN = 85;

export function latencyBin(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(LAST_BIN, 1 + Math.floor(Math.log(ms) / Math.log(BIN_BASE)));
}

function binValue(bin: number): number {
  return bin === 0 ? 0 : Math.round(BIN_BASE ** (bin - 0.5));
}

export interface Percentiles {
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

/** p50, p95 and p99 of a histogram (bin → count); null without any latency. */
export function percentilesOf(histogram: Map<number, number>): Percentiles {
  const bins = [...histogram].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  const total = bins.reduce((sum, [, n]) => sum + n, 0);
  const at = (p: number) => {
    if (total === 0) return null;
    const rank = Math.ceil(p * total);
    let seen = 0;
    for (const [bin, n] of bins) {
      seen += n;
      if (seen >= rank) return binValue(bin);
    }
    return binValue(bins[bins.length - 1][0]);
  };
  return { p50_ms: at(0.5), p95_ms: at(0.95), p99_ms: at(0.99) };
}

// ------------------------------------------------------------------------------------------------
// The roll-up job. Reading each ledger row's 15 columns into JS objects cost the node more CPU than
// anything else the job did, on the main thread that serves requests (better-sqlite3): the database
// sums a batch's settled rows instead, and only the groups cross into JS (and the failed rows, rare).

type Counters = Record<(typeof USAGE_COUNTERS)[number], number>;
interface Bucket extends ProxyUsageKey {
  counters: Counters;
  bins: Map<number, number>;
}
/** The buckets of a run, by grain and key. */
type Buckets = Map<string, Bucket>;

/** The buckets a request adds to: its minute's (all keys: account 0) and its key's hour. */
function bucketsOf(buckets: Buckets, minute: number, model: string, provider: string | null, account: number) {
  return [
    bucketAt(buckets, 'm', minute, model, provider ?? '', 0),
    bucketAt(buckets, 'h', Math.floor(minute / HOUR_MS) * HOUR_MS, model, provider ?? '', account),
  ];
}

function bucketAt(buckets: Buckets, grain: Grain, at: number, model: string, provider: string, account_id: number) {
  const id = `${grain}\u0000${at}\u0000${model}\u0000${provider}\u0000${account_id}`;
  let bucket = buckets.get(id);
  if (!bucket) {
    const counters = Object.fromEntries(USAGE_COUNTERS.map((name) => [name, 0])) as Counters;
    bucket = { grain, at, model, provider, account_id, counters, bins: new Map() };
    buckets.set(id, bucket);
  }
  return bucket;
}

/**
 * A request's minute: when it finished, else when it began. Integer division of the (non-negative,
 * integer) ms is the floor on both databases; the size is a literal, as a bound number would be a
 * real in SQLite (better-sqlite3 binds numbers as doubles) and make it a real division.
 */
const MINUTE = sql<number>`(coalesce(settled_at, created_at) / ${sql.lit(MINUTE_MS)}) * ${sql.lit(MINUTE_MS)}`;
/** Null without settled_at; below 0 when the clock went back (counted as 0, in JS). */
const LATENCY = sql<number | null>`settled_at - created_at`;
// The latency last: a key's groups come one after the other and share their buckets (a speed-up
// only: no result depends on the order).
const SETTLED_GROUP = ['account_id', MINUTE, 'model', 'provider', LATENCY] as const;
const SETTLED_FIELDS = ['latency', 'account_id', 'at', 'model', 'provider', 'n', 'input', 'output', 'charged', 'cost'];
/** A group of settled rows, as SETTLED_FIELDS lists its values. */
type SettledGroup = [number | null, number, number, string, string | null, number, number, number, number, number];

/**
 * Adds the settled rows matching `where` to the buckets, summed by the database per minute, key and
 * latency (the histogram's bin is computed here, once per distinct latency). The groups come as one
 * JSON array: better-sqlite3 builds an object per result row, which cost as much as the grouping.
 */
async function addSettled(trx: Kysely<DB>, dialect: Dialect, where: RawBuilder<boolean>, buckets: Buckets) {
  const grouped = trx
    .selectFrom('proxy_requests')
    .select([LATENCY.as('latency'), 'account_id', MINUTE.as('at'), 'model', 'provider'])
    .select([
      sql`count(*)`.as('n'),
      sql`coalesce(sum(prompt_tokens), 0)`.as('input'),
      sql`coalesce(sum(completion_tokens), 0)`.as('output'),
      sql`sum(charged_msat)`.as('charged'),
      sql`sum(cost_msat)`.as('cost'),
    ])
    .where(where)
    .where('status', '=', 'settled')
    .groupBy([...SETTLED_GROUP])
    .as('g');
  const fields = sql.join(SETTLED_FIELDS.map((name) => sql.ref(name)));
  const list =
    dialect === 'postgres' ? sql`json_agg(json_build_array(${fields}))` : sql`json_group_array(json_array(${fields}))`;
  // pg parses json (null without any group); SQLite's is text.
  const { groups } = await trx.selectFrom(grouped).select(list.as('groups')).executeTakeFirstOrThrow();
  const rows = (typeof groups === 'string' ? JSON.parse(groups) : (groups ?? [])) as SettledGroup[];
  let key: unknown[] = [];
  let keyBuckets: Bucket[] = [];
  for (const [latencyMs, account, minute, model, provider, n, input, output, charged, cost] of rows) {
    if (account !== key[0] || minute !== key[1] || model !== key[2] || provider !== key[3]) {
      key = [account, minute, model, provider];
      keyBuckets = bucketsOf(buckets, minute, model, provider, account);
    }
    const latency = latencyMs === null ? null : Math.max(0, latencyMs);
    for (const { counters: c, bins } of keyBuckets) {
      c.requests += n;
      c.settled += n;
      c.input_tokens += input;
      c.output_tokens += output;
      c.charged_msat += charged;
      c.cost_msat += cost;
      if (latency === null) continue;
      c.latency_ms += latency * n;
      const bin = latencyBin(latency);
      bins.set(bin, (bins.get(bin) ?? 0) + n);
    }
  }
}

/** What the error details keep of a failed request (released or expired). */
const FAILED_COLUMNS = [
  'id',
  'account_id',
  'request_id',
  'path',
  'model',
  'provider',
  'status',
  'upstream_status',
  'error',
  'created_at',
  'settled_at',
] as const;
type FailedRow = {
  id: number;
  account_id: number;
  request_id: string | null;
  path: string;
  model: string;
  provider: string | null;
  status: string;
  upstream_status: number | null;
  error: string | null;
  created_at: number;
  settled_at: number | null;
};

/** What a failed request counts as (the error details' `error_type`). */
function errorTypeOf(row: FailedRow): string {
  if (row.status === 'expired') return 'expired';
  if (row.upstream_status !== null) return `upstream_${row.upstream_status}`;
  return row.provider === null ? 'upstream_unreachable' : 'not_delivered';
}

function isUpstreamError(row: FailedRow): boolean {
  return (
    row.status === 'released' && (row.upstream_status === null ? row.provider === null : row.upstream_status >= 500)
  );
}

/** Adds the failed rows matching `where` to the buckets (read whole: few, and kept for the error details). */
async function addFailed(trx: Kysely<DB>, where: RawBuilder<boolean>, buckets: Buckets): Promise<void> {
  const rows = (await trx
    .selectFrom('proxy_requests')
    .select([...FAILED_COLUMNS])
    .where(where)
    .where('status', 'not in', ['settled', 'reserved'])
    .execute()) as FailedRow[];
  for (const row of rows) {
    const minute = Math.floor((row.settled_at ?? row.created_at) / MINUTE_MS) * MINUTE_MS;
    for (const { counters: c } of bucketsOf(buckets, minute, row.model, row.provider, row.account_id)) {
      c.requests += 1;
      c.failed += 1;
      if (isUpstreamError(row)) c.upstream_errors += 1;
    }
  }
  const failed = rows.map((row) => ({
    id: row.id,
    at: row.settled_at ?? row.created_at,
    request_id: row.request_id,
    account_id: row.account_id,
    path: row.path,
    model: row.model,
    provider: row.provider ?? '',
    status: row.status,
    error_type: errorTypeOf(row),
    upstream_status: row.upstream_status,
    message: (row.error ?? '').slice(0, 500),
  }));
  for (let i = 0; i < failed.length; i += ROWS_PER_INSERT) {
    await trx
      .insertInto('proxy_usage_errors')
      .values(failed.slice(i, i + ROWS_PER_INSERT))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }
}

type ColumnType = 'text' | 'bigint' | 'integer';
const KEY_COLUMNS = ['grain', 'at', 'model', 'provider', 'account_id'] as const;
const KEY_TYPES: ColumnType[] = ['text', 'bigint', 'text', 'text', 'bigint'];
const keyOf = (b: Bucket) => [b.grain, b.at, b.model, b.provider, b.account_id];

/**
 * Rows to insert (their values in column order), as a select from one array parameter per column
 * (PostgreSQL: unnest) or from one JSON parameter (SQLite): the statement's text is the same whatever
 * their number (prepared once), where Kysely's multi-row VALUES of a batch's buckets cost more JS
 * than SQLite took to run it.
 */
function rowsOf(dialect: Dialect, types: ColumnType[], rows: unknown[][]) {
  if (dialect === 'postgres') {
    const arrays = types.map((type, i) => sql`${rows.map((row) => row[i])}::${sql.raw(type)}[]`);
    return sql`select * from unnest(${sql.join(arrays)})`;
  }
  const values = types.map((_, i) => sql`value ->> ${sql.lit(i)}`);
  // `where true`: SQLite parses an upsert's select only with a where clause.
  return sql`select ${sql.join(values)} from json_each(${JSON.stringify(rows)}) where true`;
}

async function addBuckets(trx: Kysely<DB>, dialect: Dialect, buckets: Buckets): Promise<void> {
  const all = [...buckets.values()];
  if (!all.length) return;
  const counterTypes = USAGE_COUNTERS.map((): ColumnType => 'bigint');
  await trx
    .insertInto('proxy_usage_rollup')
    .columns([...KEY_COLUMNS, ...USAGE_COUNTERS])
    .expression(
      rowsOf(
        dialect,
        [...KEY_TYPES, ...counterTypes],
        all.map((b) => [...keyOf(b), ...USAGE_COUNTERS.map((name) => b.counters[name])]),
      ),
    )
    .onConflict((oc) =>
      oc
        .columns([...KEY_COLUMNS])
        .doUpdateSet((eb) =>
          Object.fromEntries(
            USAGE_COUNTERS.map((name) => [
              name,
              eb(eb.ref(`proxy_usage_rollup.${name}`), '+', eb.ref(`excluded.${name}`)),
            ]),
          ),
        ),
    )
    .execute();
  const latencies = all.flatMap((b) => [...b.bins].map(([bin, n]) => [...keyOf(b), bin, n]));
  if (!latencies.length) return;
  await trx
    .insertInto('proxy_usage_latency')
    .columns([...KEY_COLUMNS, 'bin', 'n'])
    .expression(rowsOf(dialect, [...KEY_TYPES, 'integer', 'bigint'], latencies))
    .onConflict((oc) =>
      oc
        .columns([...KEY_COLUMNS, 'bin'])
        .doUpdateSet((eb) => ({ n: eb(eb.ref('proxy_usage_latency.n'), '+', eb.ref('excluded.n')) })),
    )
    .execute();
}

/** `id` among `ids`, one parameter whatever their number (one statement text, prepared once). */
function idAmong(dialect: Dialect, ids: number[]): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`id = any(${ids}::bigint[])`
    : sql<boolean>`id in (select value from json_each(${JSON.stringify(ids)}))`;
}

/** Ledger rows by id, with what the job needs to place them. */
async function statesOf(trx: Kysely<DB>, where: RawBuilder<boolean>) {
  const rows = await trx.selectFrom('proxy_requests').select(['id', 'status']).where(where).orderBy('id').execute();
  return rows.map(({ id, status }) => ({ id, reserved: status === 'reserved', failed: status !== 'settled' }));
}

/**
 * One run of the job, in one transaction under the state row's lock (so several processes never
 * count a row twice): the ledger rows after the last one read, in id order, and the pending ones
 * (still reserved when last read, or ids not visible yet). Returns how many rows it counted and
 * whether more are waiting. `batchRows`: the ledger rows it reads at most (fewer: a shorter hold of the lock).
 */
export async function rollUpOnce(
  db: Database,
  now: number,
  batchRows = BATCH_ROWS,
): Promise<{ counted: number; more: boolean }> {
  return writeTransaction(db, async (trx) => {
    let state = trx.selectFrom('proxy_usage_state').selectAll().where('id', '=', 1);
    if (db.dialect === 'postgres') state = state.forUpdate();
    const { last_id: lastId, pruned_at: prunedAt } = await state.executeTakeFirstOrThrow();
    // The batch in one statement, not row by row: where it ends, how many rows it has (fewer than
    // its ids: gaps), which are still reserved, and whether any failed (string_agg and filter:
    // SQLite 3.44, which better-sqlite3 bundles).
    const batch = await trx
      .selectFrom((eb) =>
        eb
          .selectFrom('proxy_requests')
          .select(['id', 'status'])
          .where('id', '>', lastId)
          .orderBy('id')
          .limit(batchRows)
          .as('batch'),
      )
      .select([
        sql<number | null>`max(id)`.as('up_to'),
        sql<number>`count(*)`.as('n'),
        sql<string | null>`string_agg(cast(id as text), ',') filter (where status = 'reserved')`.as('reserved'),
        sql<number>`count(*) filter (where status not in ('settled', 'reserved'))`.as('failed'),
      ])
      .executeTakeFirstOrThrow();
    const upTo = batch.up_to ?? lastId;
    const pending = await trx.selectFrom('proxy_usage_pending').selectAll().orderBy('id').limit(PENDING_ROWS).execute();
    const again = pending.length
      ? await statesOf(
          trx,
          idAmong(
            db.dialect,
            pending.map((row) => row.id),
          ),
        )
      : [];

    // The rows to count, each part as a condition. A row found reserved or missing here is counted
    // later, from the pending rows, whatever it becomes meanwhile: PostgreSQL's statements each see
    // the commits made since the one before (read committed), so the conditions exclude those ids.
    const parts: { where: RawBuilder<boolean>; failed: boolean }[] = [];
    let reserved: number[];
    const gaps: number[] = [];
    let counted: number;
    const inBatch = sql<boolean>`id > ${lastId} and id <= ${upTo}`;
    if (batch.n === upTo - lastId) {
      reserved = batch.reserved === null ? [] : batch.reserved.split(',').map(Number);
      counted = batch.n - reserved.length;
      const where = reserved.length ? sql<boolean>`${inBatch} and not (${idAmong(db.dialect, reserved)})` : inBatch;
      if (counted) parts.push({ where, failed: batch.failed > 0 });
    } else {
      // Ids skipped in the ledger: a transaction that has not committed yet, or a rolled-back one.
      // The batch's rows are read again (one statement sees them all) to name them.
      const fresh = await statesOf(trx, inBatch);
      reserved = fresh.filter((row) => row.reserved).map((row) => row.id);
      let expected = lastId + 1;
      for (const row of fresh) {
        for (; expected < row.id && gaps.length < MAX_GAPS_PER_RUN; expected++) gaps.push(expected);
        expected = row.id + 1;
      }
      const finished = fresh.filter((row) => !row.reserved);
      if (finished.length) {
        const ids = finished.map((row) => row.id);
        parts.push({ where: idAmong(db.dialect, ids), failed: finished.some((row) => row.failed) });
      }
      counted = finished.length;
    }
    const finishedAgain = again.filter((row) => !row.reserved);
    if (finishedAgain.length) {
      const ids = finishedAgain.map((row) => row.id);
      parts.push({ where: idAmong(db.dialect, ids), failed: finishedAgain.some((row) => row.failed) });
      counted += finishedAgain.length;
    }
    const buckets: Buckets = new Map();
    for (const part of parts) {
      await addSettled(trx, db.dialect, part.where, buckets);
      if (part.failed) await addFailed(trx, part.where, buckets);
    }
    await addBuckets(trx, db.dialect, buckets);

    const reservedAgain = new Set(again.filter((row) => row.reserved).map((row) => row.id));
    const seen = new Set(again.map((row) => row.id));
    const done = pending.filter((row) =>
      seen.has(row.id) ? !reservedAgain.has(row.id) : (row.give_up_at ?? 0) <= now,
    );
    if (done.length) {
      const ids = done.map((row) => row.id);
      await trx.deleteFrom('proxy_usage_pending').where(idAmong(db.dialect, ids)).execute();
    }
    // Found reserved: it is waited for as long as it takes (a release or the stale sweep ends it).
    const nowReserved = pending
      .filter((row) => reservedAgain.has(row.id) && row.give_up_at !== null)
      .map((row) => row.id);
    if (nowReserved.length) {
      await trx
        .updateTable('proxy_usage_pending')
        .set({ give_up_at: null })
        .where(idAmong(db.dialect, nowReserved))
        .execute();
    }
    const newPending = [
      ...reserved.map((id) => ({ id, give_up_at: null })),
      ...gaps.map((id) => ({ id, give_up_at: now + GAP_WAIT_MS })),
    ];
    for (let i = 0; i < newPending.length; i += ROWS_PER_INSERT) {
      await trx
        .insertInto('proxy_usage_pending')
        .values(newPending.slice(i, i + ROWS_PER_INSERT))
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
    const prune = now - prunedAt >= PRUNE_EVERY_MS;
    await trx
      .updateTable('proxy_usage_state')
      .set({ last_id: upTo, ...(prune ? { pruned_at: now } : {}) })
      .where('id', '=', 1)
      .execute();
    if (prune) await pruneOld(trx, now);
    // Another run now finds something new only if the ledger had more rows, or pending rows left the
    // page read (else a page of rows still reserved, long streams, would be read again and again).
    return {
      counted,
      more: batch.n === batchRows || (pending.length === PENDING_ROWS && done.length > 0),
    };
  });
}

/** Drops what is older than each table keeps, and the oldest failed requests beyond MAX_ERROR_ROWS. */
async function pruneOld(trx: Kysely<DB>, now: number): Promise<void> {
  for (const grain of ['m', 'h'] as const) {
    const before = now - KEEP_MS[grain];
    await trx.deleteFrom('proxy_usage_rollup').where('grain', '=', grain).where('at', '<', before).execute();
    await trx.deleteFrom('proxy_usage_latency').where('grain', '=', grain).where('at', '<', before).execute();
  }
  await trx
    .deleteFrom('proxy_usage_errors')
    .where('at', '<', now - KEEP_MS.h)
    .execute();
  const keepFrom = await trx
    .selectFrom('proxy_usage_errors')
    .select('id')
    .orderBy('id', 'desc')
    .offset(MAX_ERROR_ROWS)
    .limit(1)
    .executeTakeFirst();
  if (keepFrom) await trx.deleteFrom('proxy_usage_errors').where('id', '<=', keepFrom.id).execute();
}

// ------------------------------------------------------------------------------------------------
// Queries. A range is [since, now]: minute rows serve ranges up to 7 days, hour rows longer ones
// (and every breakdown by key), from the start of the hour `since` falls in.

export interface Range {
  grain: Grain;
  since: number;
}

const MINUTE_GRAIN_MAX_HOURS = 7 * 24;

export function rangeOf(hours: number, now: number, byKey = false): Range {
  const since = now - hours * HOUR_MS;
  if (!byKey && hours <= MINUTE_GRAIN_MAX_HOURS) {
    return { grain: 'm', since: Math.floor(since / MINUTE_MS) * MINUTE_MS };
  }
  return { grain: 'h', since: Math.floor(since / HOUR_MS) * HOUR_MS };
}

const total = (column: (typeof USAGE_COUNTERS)[number]) =>
  sql<number>`cast(coalesce(sum(${sql.ref(column)}), 0) as bigint)`.as(column);
const TOTALS = USAGE_COUNTERS.map(total);

export type Totals = Counters;

/** A bucket's start, as an expression (a safe integer of ours, never caller text). */
const bucketOf = (bucketMs: number) => sql<number>`(at / ${sql.lit(bucketMs)}) * ${sql.lit(bucketMs)}`;

/** Totals per time bucket, oldest first. */
export async function totalsByBucket(db: Executor, range: Range, bucketMs: number) {
  const bucket = bucketOf(bucketMs);
  return db
    .selectFrom('proxy_usage_rollup')
    .select([bucket.as('bucket'), ...TOTALS])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .groupBy(bucket)
    .orderBy(bucket)
    .execute();
}

/** Totals of the range. */
export async function grandTotals(db: Executor, range: Range) {
  return db
    .selectFrom('proxy_usage_rollup')
    .select(TOTALS)
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .executeTakeFirstOrThrow();
}

/** The latency histogram of the range. */
export async function latencyTotal(db: Executor, range: Range) {
  return db
    .selectFrom('proxy_usage_latency')
    .select(['bin', sql<number>`cast(sum(n) as bigint)`.as('n')])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .groupBy('bin')
    .execute();
}

/** Latency histograms per time bucket. */
export async function latencyByBucket(db: Executor, range: Range, bucketMs: number) {
  const bucket = bucketOf(bucketMs);
  return db
    .selectFrom('proxy_usage_latency')
    .select([bucket.as('bucket'), 'bin', sql<number>`cast(sum(n) as bigint)`.as('n')])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .groupBy([bucket, 'bin'])
    .execute();
}

export type Dimension = 'model' | 'provider' | 'account_id';

/** Totals per model, provider or key, largest charge first; at most `limit` rows (and how many there are). */
export async function totalsBy(db: Executor, range: Range, by: Dimension, limit: number) {
  const rows = await db
    .selectFrom('proxy_usage_rollup')
    .select([sql.ref<string | number>(by).as('value'), ...TOTALS])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .groupBy(by)
    .orderBy(sql`cast(coalesce(sum(charged_msat), 0) as bigint)`, 'desc')
    .orderBy(sql`cast(coalesce(sum(requests), 0) as bigint)`, 'desc')
    .orderBy(by)
    .limit(limit)
    .execute();
  const count = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('proxy_usage_rollup')
        .select(sql.ref(by).as('value'))
        .where('grain', '=', range.grain)
        .where('at', '>=', range.since)
        .groupBy(by)
        .as('groups'),
    )
    .select(sql<number>`cast(count(*) as bigint)`.as('n'))
    .executeTakeFirstOrThrow();
  return { rows, count: count.n };
}

/** Latency histograms of the given models, providers or keys. */
export async function latencyBy(db: Executor, range: Range, by: Dimension, values: (string | number)[]) {
  if (!values.length) return [];
  return db
    .selectFrom('proxy_usage_latency')
    .select([sql.ref<string | number>(by).as('value'), 'bin', sql<number>`cast(sum(n) as bigint)`.as('n')])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .where(sql.ref(by), 'in', values)
    .groupBy([by, 'bin'])
    .execute();
}

/** Totals per time bucket and model, for the given models. */
export async function totalsByBucketAndModel(db: Executor, range: Range, bucketMs: number, models: string[]) {
  if (!models.length) return [];
  const bucket = bucketOf(bucketMs);
  return db
    .selectFrom('proxy_usage_rollup')
    .select([
      bucket.as('bucket'),
      'model',
      total('settled'),
      total('charged_msat'),
      total('input_tokens'),
      total('output_tokens'),
    ])
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .where('model', 'in', models)
    .groupBy([bucket, 'model'])
    .execute();
}

/** The models, providers or keys with any request in the range (at most `limit`). */
export async function distinctValues(db: Executor, range: Range, by: Dimension, limit: number) {
  const rows = await db
    .selectFrom('proxy_usage_rollup')
    .select(sql.ref<string | number>(by).as('value'))
    .distinct()
    .where('grain', '=', range.grain)
    .where('at', '>=', range.since)
    .orderBy('value')
    .limit(limit)
    .execute();
  return rows.map((row) => row.value);
}

/** Failed requests per error type. */
export async function errorTypes(db: Executor, since: number, limit: number) {
  return db
    .selectFrom('proxy_usage_errors')
    .select(['error_type', sql<number>`cast(count(*) as bigint)`.as('n')])
    .where('at', '>=', since)
    .groupBy('error_type')
    .orderBy('n', 'desc')
    .limit(limit)
    .execute();
}

/** The latest failed requests, newest first, and how many there are in the range. */
export async function latestErrors(db: Executor, since: number, limit: number) {
  const errors = await db
    .selectFrom('proxy_usage_errors')
    .selectAll()
    .where('at', '>=', since)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  const count = await db
    .selectFrom('proxy_usage_errors')
    .select(sql<number>`cast(count(*) as bigint)`.as('n'))
    .where('at', '>=', since)
    .executeTakeFirstOrThrow();
  return { errors, count: count.n };
}

/** The key prefixes of accounts (their previews, as the admin page shows them). */
export async function keyPrefixes(db: Executor, ids: number[]): Promise<Map<number, string | null>> {
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('proxy_accounts').select(['id', 'key_prefix']).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.key_prefix]));
}
