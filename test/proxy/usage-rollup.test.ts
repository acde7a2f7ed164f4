// The usage job (src/proxy/usage/store.ts) counts exactly what the ledger holds: ledger rows of every
// kind written directly (settled with latencies from 0 ms to hours, released with and without an
// upstream status, expired, reservations that finish a few runs later, ids that appear late or
// never), two jobs run side by side after each round of writes, and every rollup, latency and error
// row compared with totals computed here, row by row, from what was written.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/db/index.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { HOUR_MS, latencyBin, MINUTE_MS, rollUpOnce } from '../../src/proxy/usage/store.js';
import { serviceMigrations } from '../../src/services.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

type Final =
  | {
      status: 'settled';
      latency: number;
      prompt: number | null;
      completion: number | null;
      charged: number;
      cost: number;
    }
  | { status: 'released'; latency: number; upstream: number | null; error: string | null }
  | { status: 'expired'; latency: number | null };

interface Spec {
  id: number;
  account: number;
  model: string;
  /** The provider its finish writes (none while reserved). */
  provider: string | null;
  created: number;
  final: Final;
  /** The round the row is written in (never: a rolled-back id), and the round it finishes in. */
  written: number;
  finished: number;
}

const T0 = Date.UTC(2025, 0, 1, 10, 58, 30);
/** Time between rounds: the job gives a missing id up 60 s after it first saw it missing. */
const ROUND_MS = 20_000;
const GIVE_UP_ROUNDS = 3;
const NEVER = Number.MAX_SAFE_INTEGER;

/** The ledger row of a spec, reserved or as it finished. */
function ledgerRow(spec: Spec, reserved: boolean) {
  const f = spec.final;
  const settled = f.status === 'settled';
  return {
    id: spec.id,
    account_id: spec.account,
    request_id: `req-${spec.id}`,
    path: '/v1/chat/completions',
    model: spec.model,
    stream: spec.id % 2,
    payment: 'key' as const,
    status: reserved ? ('reserved' as const) : f.status,
    reserved_msat: 1_000_000,
    charged_msat: !reserved && settled ? f.charged : 0,
    cost_msat: !reserved && settled ? f.cost : 0,
    prompt_tokens: !reserved && settled ? f.prompt : null,
    completion_tokens: !reserved && settled ? f.completion : null,
    upstream_status: reserved ? null : settled ? 200 : f.status === 'released' ? f.upstream : null,
    error: reserved || settled ? null : f.status === 'released' ? f.error : 'no heartbeat',
    created_at: spec.created,
    heartbeat_at: spec.created,
    settled_at: reserved || f.latency === null ? null : spec.created + f.latency,
    provider: reserved ? null : spec.provider,
  };
}

/**
 * Whether the job counts a row: always, unless its id went missing (a later id was written before
 * it) and the job gave it up before it appeared (GIVE_UP_ROUNDS rounds after the round that found
 * it missing, the rows of a round being written before its jobs run).
 */
function isCounted(spec: Spec, specs: Spec[]): boolean {
  if (spec.written === NEVER) return false;
  const noticed = Math.min(...specs.filter((s) => s.id > spec.id).map((s) => s.written));
  return spec.written <= noticed + GIVE_UP_ROUNDS;
}

/** The rollup, latency and error rows the job must leave, computed row by row. */
function expected(specs: Spec[]) {
  const rollup = new Map<string, Record<string, number | string>>();
  const latency = new Map<string, Record<string, number | string>>();
  const errors: Record<string, unknown>[] = [];
  for (const spec of specs.filter((s) => isCounted(s, specs))) {
    const row = ledgerRow(spec, false);
    const when = row.settled_at ?? row.created_at;
    const settled = row.status === 'settled';
    for (const [grain, size, account] of [
      ['m', MINUTE_MS, 0],
      ['h', HOUR_MS, spec.account],
    ] as const) {
      const key = { grain, at: Math.floor(when / size) * size, model: spec.model, provider: spec.provider ?? '' };
      const id = JSON.stringify({ ...key, account_id: account });
      const r =
        rollup.get(id) ??
        rollup
          .set(id, {
            ...key,
            account_id: account,
            requests: 0,
            settled: 0,
            failed: 0,
            upstream_errors: 0,
            input_tokens: 0,
            output_tokens: 0,
            charged_msat: 0,
            cost_msat: 0,
            latency_ms: 0,
          })
          .get(id)!;
      const add = (name: string, n: number) => (r[name] = (r[name] as number) + n);
      add('requests', 1);
      if (settled) {
        add('settled', 1);
        add('input_tokens', row.prompt_tokens ?? 0);
        add('output_tokens', row.completion_tokens ?? 0);
        add('charged_msat', row.charged_msat);
        add('cost_msat', row.cost_msat);
        if (row.settled_at !== null) {
          const ms = Math.max(0, row.settled_at - row.created_at);
          add('latency_ms', ms);
          const binId = JSON.stringify({ ...key, account_id: account, bin: latencyBin(ms) });
          const b = latency.get(binId) ?? latency.set(binId, { ...JSON.parse(binId), n: 0 }).get(binId)!;
          b.n = (b.n as number) + 1;
        }
      } else {
        add('failed', 1);
        const upstream = row.upstream_status;
        if (row.status === 'released' && (upstream === null ? row.provider === null : upstream >= 500)) {
          add('upstream_errors', 1);
        }
      }
    }
    if (!settled) {
      const upstream = row.upstream_status;
      errors.push({
        id: spec.id,
        at: when,
        request_id: row.request_id,
        account_id: spec.account,
        path: row.path,
        model: spec.model,
        provider: spec.provider ?? '',
        status: row.status,
        error_type:
          row.status === 'expired'
            ? 'expired'
            : upstream !== null
              ? `upstream_${upstream}`
              : spec.provider === null
                ? 'upstream_unreachable'
                : 'not_delivered',
        upstream_status: upstream,
        message: (row.error ?? '').slice(0, 500),
      });
    }
  }
  return { rollup: sorted([...rollup.values()]), latency: sorted([...latency.values()]), errors: sorted(errors) };
}

/** Rows in one order on both databases (PostgreSQL sorts text by its collation), whatever their keys' order. */
const sorted = <T extends object>(rows: T[]) =>
  rows
    .map((row) => [JSON.stringify(Object.entries(row).sort()), row] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, row]) => row);

async function tables(db: Database) {
  // PostgreSQL's bigints arrive as numbers (src/db/index.ts), as SQLite's do.
  const k = db.kysely;
  return {
    rollup: sorted(await k.selectFrom('proxy_usage_rollup').selectAll().execute()),
    latency: sorted(await k.selectFrom('proxy_usage_latency').selectAll().execute()),
    errors: sorted(await k.selectFrom('proxy_usage_errors').selectAll().execute()),
  };
}

/** Runs the job until it has nothing more (each call one batch). */
async function drain(db: Database, now: number): Promise<void> {
  for (let i = 0; i < 100; i++) if (!(await rollUpOnce(db, now)).more) return;
  throw new Error('the usage job never caught up');
}

/** An empty ledger, never rolled up. */
async function reset(db: Database): Promise<void> {
  const k = db.kysely;
  for (const table of [
    'proxy_requests',
    'proxy_usage_rollup',
    'proxy_usage_latency',
    'proxy_usage_errors',
    'proxy_usage_pending',
  ] as const) {
    await k.deleteFrom(table).execute();
  }
  await k.updateTable('proxy_usage_state').set({ last_id: 0, pruned_at: 0 }).execute();
}

/** Writes the specs round by round, two jobs running after each round, and checks the tables. */
async function check(dbs: [Database, Database], specs: Spec[]): Promise<void> {
  const [db] = dbs;
  const k = db.kysely;
  await reset(db);

  const rounds = Math.max(...specs.map((s) => (s.finished === NEVER ? 0 : s.finished))) + 1;
  for (let round = 0; round < rounds; round++) {
    const written = specs.filter((s) => s.written === round);
    for (let i = 0; i < written.length; i += 100) {
      const rows = written.slice(i, i + 100).map((s) => ledgerRow(s, s.finished > round));
      await k.insertInto('proxy_requests').values(rows).execute();
    }
    for (const spec of specs.filter((s) => s.finished === round && s.written < round)) {
      const { id: _id, ...row } = ledgerRow(spec, false);
      await k.updateTable('proxy_requests').set(row).where('id', '=', spec.id).execute();
    }
    const now = T0 + 4 * HOUR_MS + round * ROUND_MS;
    await Promise.all(dbs.map((each) => drain(each, now)));
  }
  // Long after: every missing id given up.
  await drain(db, T0 + 5 * HOUR_MS);
  expect(await tables(db)).toEqual(expected(specs));
  const pending = await k.selectFrom('proxy_usage_pending').selectAll().execute();
  expect(pending).toEqual([]);
}

/** A small deterministic random generator (mulberry32). */
function randomOf(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A few hundred rows of every kind, over three hours, written in four rounds; some ids late or never. */
function variedSpecs(): Spec[] {
  const random = randomOf(29);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const specs: Spec[] = [];
  const N = 360;
  for (let i = 0; i < N; i++) {
    const provider = pick(['alpha', 'beta'] as const);
    const kinds: (() => [Final, string | null])[] = [
      () => [settled(0), provider],
      () => [settled(1 + Math.floor(random() * 20)), provider],
      () => [settled(100 + Math.floor(random() * 5000)), provider],
      () => [settled(pick([59_999, 65_000, 3_700_000, 5_000_000, 40_000_000])), provider],
      () => [settled(-3), provider], // the clock went back: 0 ms
      () => [{ status: 'released', latency: 40, upstream: pick([500, 502, 503]), error: 'upstream failed' }, provider],
      () => [{ status: 'released', latency: 15, upstream: pick([400, 429]), error: null }, provider],
      () => [{ status: 'released', latency: 3, upstream: null, error: 'connect ECONNREFUSED' }, null],
      () => [{ status: 'released', latency: 900, upstream: null, error: 'x'.repeat(600) }, provider],
      () => [{ status: 'expired', latency: i % 24 < 12 ? 300_000 : null }, null],
      () => [{ ...settled(250), prompt: null, completion: null }, null],
      () => [settled(Math.floor(random() * 30_000)), provider],
    ];
    const [final, finalProvider] = kinds[i % kinds.length]();
    const round = Math.floor((i * 4) / N);
    // Round 0 without missing ids (its rows in one range), the later ones with.
    const late =
      round === 0
        ? 0
        : i % 37 === 5
          ? 1
          : i % 37 === 11
            ? 3
            : i % 37 === 17
              ? 4
              : i % 37 === 23
                ? 6
                : i === 300
                  ? NEVER
                  : 0;
    const written = late === NEVER ? NEVER : round + late;
    const reservedFor = random() < 0.2 ? 1 + Math.floor(random() * 3) : 0;
    specs.push({
      id: 1 + i,
      account: 1 + Math.floor(random() * 2),
      model: pick(['model/a', 'model/b']),
      provider: finalProvider,
      created: T0 + Math.floor(random() * 3 * HOUR_MS),
      final,
      written,
      finished: written === NEVER ? NEVER : written + reservedFor,
    });
  }
  return specs;

  function settled(latency: number): Final {
    const prompt = Math.floor(random() * 5000);
    const completion = Math.floor(random() * 2000);
    return { status: 'settled', latency, prompt, completion, charged: prompt * 3 + completion * 7, cost: prompt * 2 };
  }
}

const finalArbitrary: fc.Arbitrary<Final> = fc.oneof(
  fc.record({
    status: fc.constant('settled' as const),
    latency: fc.oneof(fc.integer({ min: -5, max: 20 }), fc.integer({ min: 0, max: 10_000_000 })),
    prompt: fc.option(fc.integer({ min: 0, max: 1_000_000 })),
    completion: fc.option(fc.integer({ min: 0, max: 1_000_000 })),
    charged: fc.integer({ min: 0, max: 1_000_000 }),
    cost: fc.integer({ min: 0, max: 1_000_000 }),
  }),
  fc.record({
    status: fc.constant('released' as const),
    latency: fc.integer({ min: 0, max: 100_000 }),
    upstream: fc.option(fc.constantFrom(400, 429, 499, 500, 503, 599)),
    error: fc.constantFrom(null, '', 'boom', 'é ✓ \' "', 'y'.repeat(501)),
  }),
  fc.record({
    status: fc.constant('expired' as const),
    latency: fc.option(fc.integer({ min: 0, max: 600_000 })),
  }),
);

const specsArbitrary: fc.Arbitrary<Spec[]> = fc
  .array(
    fc.record({
      account: fc.constantFrom(1, 2, 3),
      model: fc.constantFrom('model/a', 'model/b', ''),
      provider: fc.constantFrom('alpha', 'beta', null),
      created: fc.integer({ min: T0, max: T0 + 3 * HOUR_MS }),
      final: finalArbitrary,
      round: fc.integer({ min: 0, max: 2 }),
      late: fc.constantFrom(0, 0, 0, 0, 1, 3, 4, NEVER),
      reservedFor: fc.constantFrom(0, 0, 0, 1, 2, 4),
    }),
    { minLength: 1, maxLength: 80 },
  )
  .map((rows) =>
    rows
      .sort((a, b) => a.round - b.round)
      .map(({ round, late, reservedFor, ...row }, i) => {
        const written = late === NEVER ? NEVER : round + late;
        return { ...row, id: 1 + i, written, finished: written === NEVER ? NEVER : written + reservedFor };
      }),
  );

describe.each(databaseKinds)('the usage job counts the ledger exactly (%s)', (kind) => {
  let database: TestDatabase;
  let dbs: [Database, Database];

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    const config = parseDatabaseUrl(database.url);
    await migrateDatabase(config, serviceMigrations);
    // Two handles, as two processes: the state row's lock keeps them from counting a row twice.
    dbs = [await openDatabase(config), await openDatabase(config)];
  });

  afterAll(async () => {
    for (const db of dbs ?? []) await db.close();
    await database?.drop();
  });

  it('rows of every kind, reservations finishing later, ids late or missing', async () => {
    const specs = variedSpecs();
    // The data covers what it should.
    const kinds = new Set(specs.map((s) => s.final.status));
    expect([...kinds].sort()).toEqual(['expired', 'released', 'settled']);
    expect(specs.filter((s) => s.finished > s.written && s.written !== NEVER).length).toBeGreaterThan(30);
    expect(specs.filter((s) => !isCounted(s, specs)).length).toBeGreaterThan(5);
    expect(specs.filter((s) => s.written > 0 && s.written !== NEVER && isCounted(s, specs)).length).toBeGreaterThan(
      200,
    );
    await check(dbs, specs);
  });

  // Each PostgreSQL statement sees what committed before it: reservations that finish, and a missing
  // id that commits, between the job's first look at its batch and its sums are counted once.
  // (SQLite: one snapshot, the job's transaction holding the write lock.)
  if (kind === 'postgres') {
    it('rows that change while the job reads them', async () => {
      const [db, other] = dbs;
      await reset(db);
      const settled = (latency: number): Final => ({
        status: 'settled',
        latency,
        prompt: 10,
        completion: 20,
        charged: 300,
        cost: 200,
      });
      const released: Final = { status: 'released', latency: 5, upstream: 502, error: 'bad gateway' };
      const spec = (id: number, final: Final): Spec => ({
        id,
        account: 1 + (id % 2),
        model: 'model/a',
        provider: 'alpha',
        created: T0 + id * 1000,
        final,
        written: 0,
        finished: 0,
      });
      const specs = [
        spec(1, settled(5)),
        spec(2, settled(7)),
        spec(3, released),
        spec(4, released),
        spec(5, settled(9)),
        spec(6, released),
        spec(7, settled(13)),
        spec(8, settled(15)),
      ];
      const write = async (ids: number[], reserved: boolean) => {
        for (const id of ids) {
          const row = ledgerRow(specs[id - 1], reserved);
          const found = await other.kysely.selectFrom('proxy_requests').select('id').where('id', '=', id).execute();
          if (found.length) await other.kysely.updateTable('proxy_requests').set(row).where('id', '=', id).execute();
          else await other.kysely.insertInto('proxy_requests').values(row).execute();
        }
      };
      // The job, with `race` run (through the other handle) once it has first read the ledger.
      let race: (() => Promise<void>) | null = null;
      const ledgerReads = new Set<unknown>();
      const racing: Database = {
        ...db,
        kysely: db.kysely.withPlugin({
          transformQuery: (args) => {
            if (args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node).includes('"proxy_requests"')) {
              ledgerReads.add(args.queryId);
            }
            return args.node;
          },
          transformResult: async (args) => {
            if (race && ledgerReads.has(args.queryId)) {
              const run = race;
              race = null;
              await run();
            }
            return args.result;
          },
        }),
      };
      const now = T0 + 4 * HOUR_MS;

      // A batch without missing ids, two of its rows reserved: they finish during the run.
      await write([1, 4], false);
      await write([2, 3], true);
      race = () => write([2, 3], false);
      expect(await rollUpOnce(racing, now)).toEqual({ counted: 2, more: false });
      expect(race).toBeNull();
      // A batch with id 7 missing and 6 reserved: 7 commits and 6 finishes during the run.
      await write([5, 8], false);
      await write([6], true);
      race = () => write([6, 7], false);
      await rollUpOnce(racing, now);
      expect(race).toBeNull();
      await drain(db, now + HOUR_MS);
      expect(await tables(db)).toEqual(expected(specs));
      expect(await db.kysely.selectFrom('proxy_usage_pending').selectAll().execute()).toEqual([]);
    });
  }

  it('any ledger (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(specsArbitrary, (specs) => check(dbs, specs)),
      { numRuns: 10 },
    );
  });
});
