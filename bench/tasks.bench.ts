// Users and tasks API: task create and task list through quartet (validation, auth lookup, error handler,
// logging, metrics…) against a bare Fastify route running the same SQL on the same database in
// the same run; then login latency at the configured scrypt cost, against scrypt alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { loadFullConfig } from '../src/services.js';
import type { Database } from '../src/db/index.js';
import { loggerOptions } from '../src/http/logging.js';
import { buildServer } from '../src/server.js';
import { hashPassword, verifyPassword } from '../src/users/passwords.js';
import { tokenHash } from '../src/users/tokens.js';
import { createTestDatabase, postgresAvailable } from '../test/support/databases.js';
import { benchDuration, httpLoad, median, percentiles, type BenchResult, type LoadResult } from './harness.js';

const CONNECTIONS = 20;

/** The anchor: what the quartet routes do in SQL (session lookup, insert or page + count), nothing else. */
async function bareServer(db: Database) {
  const app = Fastify();
  const principal = async (authorization: string | undefined) => {
    const token = authorization?.slice('Bearer '.length) ?? '';
    return db.kysely
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select(['users.id', 'users.role', 'users.email'])
      .where('sessions.token_hash', '=', tokenHash(token))
      .where('sessions.expires_at', '>', Date.now())
      .executeTakeFirstOrThrow();
  };
  app.post('/create', async (request, reply) => {
    const user = await principal(request.headers.authorization);
    const { title, description } = request.body as { title: string; description: string };
    const now = Date.now();
    const task = await db.kysely
      .insertInto('tasks')
      .values({ user_id: user.id, title, description, done: 0, created_at: now, updated_at: now })
      .returning(['id', 'user_id', 'title', 'description', 'done', 'created_at', 'updated_at'])
      .executeTakeFirstOrThrow();
    return reply.code(201).send({ task });
  });
  app.get('/list', async (request) => {
    const user = await principal(request.headers.authorization);
    const where = db.kysely.selectFrom('tasks').where('user_id', '=', user.id);
    const [rows, count] = await Promise.all([
      where
        .select(['id', 'user_id', 'title', 'description', 'done', 'created_at', 'updated_at'])
        .orderBy('id', 'desc')
        .limit(20)
        .execute(),
      where.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { results: rows, total: Number(count.n) };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

function base(app: { server: { address(): unknown } }): string {
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

const PAIRS = 6;

/**
 * Runs anchor and subject back to back PAIRS times, alternating which goes first, and reports
 * the median of the per-pair ratios: on a shared machine the load drifts, and a pair measured
 * seconds apart sees about the same drift.
 */
async function compare(
  name: string,
  subject: () => Promise<LoadResult>,
  anchor: () => Promise<LoadResult>,
): Promise<BenchResult> {
  const ratios: number[] = [];
  const s: LoadResult[] = [];
  const a: LoadResult[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const [first, second] = i % 2 ? [subject, anchor] : [anchor, subject];
    const one = await first();
    const two = await second();
    const [sr, ar] = i % 2 ? [one, two] : [two, one];
    s.push(sr);
    a.push(ar);
    ratios.push(sr.requestsPerSec / ar.requestsPerSec);
  }
  const rps = (runs: LoadResult[]) => Math.round(median(runs.map((r) => r.requestsPerSec)));
  const ms = (runs: LoadResult[], key: 'p50Ms' | 'p99Ms') => median(runs.map((r) => r[key])).toFixed(2);
  const errors = (runs: LoadResult[]) => runs.reduce((sum, r) => sum + r.errors, 0);
  return {
    name,
    value: rps(s),
    unit: 'req/s',
    anchor: 'bare Fastify route, same SQL, same database',
    anchorValue: rps(a),
    ratio: Math.round(median(ratios) * 1000) / 1000,
    goal: '>= 0.7',
    notes:
      `median of ${PAIRS} alternating pairs ` +
      `(pair ratios ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); ` +
      `${CONNECTIONS} connections; ` +
      `p50 ${ms(s, 'p50Ms')} vs ${ms(a, 'p50Ms')} ms; p99 ${ms(s, 'p99Ms')} vs ${ms(a, 'p99Ms')} ms; ` +
      `errors ${errors(s)}/${errors(a)}`,
  };
}

async function benchOn(kind: 'sqlite' | 'postgres', withLogin: boolean): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'quartet-bench-'));
  const database =
    kind === 'sqlite'
      ? { url: `sqlite:${join(dir, 'bench.db')}`, drop: async () => {} }
      : await createTestDatabase('postgres');
  const config = loadFullConfig({
    DATABASE_URL: database.url,
    SERVICES: 'tasks',
    LOG_LEVEL: 'info',
    USERS_LOGIN_ADDRESS_LIMIT: '1000000',
    USERS_LOGIN_ACCOUNT_LIMIT: '100000',
    QUARTET_SECRET_KEY: '11'.repeat(32),
  });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const { app, db } = await buildServer(config, { logger: { ...(loggerOptions('info') as object), stream: sink } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const bare = await bareServer(db);
  try {
    const url = base(app);
    const person = {
      first_name: 'Bench',
      last_name: 'Mark',
      email: 'bench@example.test',
      username: 'bench',
      password: 'benchmark passphrase 1',
    };
    await fetch(`${url}/api/users/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(person),
    });
    const { token } = (await (
      await fetch(`${url}/api/users/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: person.email, password: person.password }),
      })
    ).json()) as { token: string };
    const auth = { authorization: `Bearer ${token}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const body = JSON.stringify({ title: 'Benchmark task', description: 'created under load' });
    const durationMs = benchDuration(1500);

    const results: BenchResult[] = [];
    results.push(
      await compare(
        `tasks (${kind}): POST /api/tasks/create`,
        () =>
          httpLoad({
            url: `${url}/api/tasks/create`,
            method: 'POST',
            headers: json,
            body,
            connections: CONNECTIONS,
            durationMs,
          }),
        () =>
          httpLoad({
            url: `${base(bare)}/create`,
            method: 'POST',
            headers: json,
            body,
            connections: CONNECTIONS,
            durationMs,
          }),
      ),
    );
    results.push(
      await compare(
        `tasks (${kind}): GET /api/tasks (20 per page)`,
        () => httpLoad({ url: `${url}/api/tasks`, headers: auth, connections: CONNECTIONS, durationMs }),
        () => httpLoad({ url: `${base(bare)}/list`, headers: auth, connections: CONNECTIONS, durationMs }),
      ),
    );

    if (withLogin) {
      // Login is dominated by scrypt by design; its anchor is one scrypt verification alone.
      const N = config.users.scryptN;
      const stored = await hashPassword(person.password, N);
      const scryptMs: number[] = [];
      const timeScrypt = async () => {
        for (let i = 0; i < 8; i++) {
          const started = performance.now();
          await verifyPassword(person.password, stored, N);
          scryptMs.push(performance.now() - started);
        }
      };
      await timeScrypt();
      const loginBody = JSON.stringify({ email: person.email, password: person.password });
      const logins = (connections: number) =>
        httpLoad({
          url: `${url}/api/users/login`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: loginBody,
          connections,
          durationMs: benchDuration(5000),
          warmupMs: 200,
        });
      const sequential = await logins(1);
      const parallel = await logins(8);
      await timeScrypt(); // before and after the logins, so machine drift hits both
      const scrypt = percentiles(scryptMs);
      results.push({
        name: `login (${kind}): POST /api/users/login latency, one client, scrypt N=2^${Math.log2(N)} r=8 p=1`,
        value: Math.round(sequential.p50Ms * 10) / 10,
        unit: 'ms (p50)',
        anchor: 'one scrypt verification alone',
        anchorValue: Math.round(scrypt.p50 * 10) / 10,
        ratio: Math.round((sequential.p50Ms / scrypt.p50) * 100) / 100,
        notes:
          `lower is better; p99 ${sequential.p99Ms.toFixed(1)} ms; ` +
          `8 clients: ${Math.round(parallel.requestsPerSec * 10) / 10} logins/s, ` +
          `p50 ${parallel.p50Ms.toFixed(0)} ms; ` +
          `errors ${sequential.errors + parallel.errors}`,
      });
    }
    return results;
  } finally {
    await bare.close();
    await app.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function tasksBench(): Promise<BenchResult[]> {
  const results = await benchOn('sqlite', true);
  if (postgresAvailable) results.push(...(await benchOn('postgres', false)));
  return results;
}
