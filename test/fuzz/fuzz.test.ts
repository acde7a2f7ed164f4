// Property-based fuzzing of every area from the services' own OpenAPI descriptions: at least
// 1,000 generated requests per area (valid-looking ones with and without live credentials,
// and mutated ones: wrong types, missing and extra fields, huge strings, deep nesting,
// __proto__ keys, numbers past 64 bits, bad percent-encodings, odd methods, path tricks, wrong
// content types, empty and truncated bodies, multipart without a boundary). Every answer: no
// 5xx, an error in its area's shape, within 10 s; after each batch the process answers
// /healthz and no prototype has changed. See README.md here to replay a failure.
import { writeSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { prototypeChanges, prototypeSnapshot, restorePrototypes, violation, type PrototypeSnapshot } from './checks.js';
import { operationsOf, requestArbitrary } from './openapi-arbitraries.js';
import type { Credential, FuzzRequest, Operation } from './openapi-arbitraries.js';
import { startWorld, type World } from './world.js';

const SEED = Number(process.env.FUZZ_SEED ?? 12_072_025);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
/** Only these requests of the sample (to replay a failure alone). */
const ONLY = process.env.FUZZ_ONLY ? new Set(process.env.FUZZ_ONLY.split(',').map(Number)) : null;
/** Each request on stderr before it is sent (synchronously: if one blocks the event loop, it is the last line). */
const TRACE = process.env.FUZZ_TRACE === '1';
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 4);
const BATCH = 50;

const credential = (headers: [string, string][], query: [string, string][] = []): Credential => ({ headers, query });
const NONE = credential([]);
const authorization = (value: string) => credential([['authorization', value]]);
/** One of the credentials, by weight; a fixed one stands for itself. */
const mix = (...choices: [weight: number, choice: Credential | fc.Arbitrary<Credential>][]) =>
  fc.oneof(
    ...choices.map(([weight, choice]) => ({
      weight,
      arbitrary: choice instanceof fc.Arbitrary ? choice : fc.constant(choice),
    })),
  );

/** Users and tasks API: the user's or the admin's bearer token, a wrong one or none. */
function bearerAuth(op: Operation): fc.Arbitrary<Credential> {
  if (!op.security.length) return fc.constant(NONE);
  const wrong = fc.constantFrom('Bearer x', 'Bearer ', 'bearer ~~token~~ ~~token~~', 'Token ~~token~~');
  return mix(
    [6, authorization('Bearer ~~token~~')],
    [2, authorization('Bearer ~~admin~~')],
    [1, NONE],
    [1, wrong.map(authorization)],
  );
}

/**
 * Quotation API: a signed OneSky request, the users and tasks API's bearer token, a stale or wrong
 * signature, or none.
 */
function oneSkyAuth(op: Operation): fc.Arbitrary<Credential> {
  if (!op.security.length) return fc.constant(NONE);
  const signed = (timestamp: string, hash: string): Credential =>
    credential(
      [],
      [
        ['api_key', '~~api_key~~'],
        ['timestamp', timestamp],
        ['dev_hash', hash],
      ],
    );
  const wrong = fc.constantFrom(['1', '~~dev_hash~~'], ['~~timestamp~~', '0'.repeat(32)], ['9'.repeat(20), 'x']);
  return mix(
    [6, signed('~~timestamp~~', '~~dev_hash~~')],
    [2, authorization('Bearer ~~token~~')],
    [1, NONE],
    [1, wrong.map(([timestamp, hash]) => signed(timestamp, hash))],
  );
}

/** Proxy node: the catch-all has no credential parameter; billed paths take a key or X-Cashu. */
function proxyAuth(op: Operation): fc.Arbitrary<Credential> {
  if (op.parameters.some((p) => p.name === 'authorization')) return fc.constant(NONE);
  const wrong = fc.constantFrom('Bearer sk-unknown', 'Bearer cashuBgarbage', 'Bearer ');
  return mix(
    [12, authorization('Bearer ~~sk~~')],
    // Each fresh token is minted at the dev mint: a few of them go a long way.
    [1, credential([['x-cashu', '~~cashu~~']])],
    [2, NONE],
    [2, wrong.map(authorization)],
  );
}

/**
 * The body the proxy forwards is not described (its specification says only "not shown"); billed paths are
 * metered from these OpenAI fields, so the catch-all's writes get them.
 */
const FORWARDED_BODY = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { enum: ['user', 'system', 'assistant'] }, content: { type: 'string' } },
      },
    },
    prompt: { type: 'string' },
    input: { type: 'string' },
    max_tokens: { type: 'integer', minimum: 1, maximum: 5000 },
    stream: { type: 'boolean' },
  },
};

function withForwardedBodies(operations: Operation[]): Operation[] {
  return operations.map((op) => {
    if (op.path !== '/{path}' || ['GET', 'OPTIONS'].includes(op.method) || op.bodies.length) return op;
    // POST is where the money is (reservation, metering, settlement): it gets the most requests.
    const bodies = [{ type: 'application/json', schema: FORWARDED_BODY }];
    return { ...op, bodies, weight: op.method === 'POST' ? 6 : 2 };
  });
}

/**
 * The viewer and the platform routes have no description of their own: the listing and the viewer's
 * page name them.
 */
async function platformOperations(world: World): Promise<Operation[]> {
  const listing = (await (await fetch(`${world.url}/openapi/`)).json()) as { descriptions: { name: string }[] };
  const page = await (await fetch(`${world.url}/docs/`)).text();
  const assets = [...new Set([...page.matchAll(/(?:src|href)="(?:\.\/)?([\w./-]+)"/g)].map((m) => m[1]))];
  const get = (path: string, name?: string, values?: string[]): Operation => ({
    method: 'GET',
    path,
    parameters: name ? [{ name, in: 'path', required: true, schema: { type: 'string', enum: values } }] : [],
    bodies: [],
    bodyRequired: false,
    security: [],
  });
  return [
    get('/healthz'),
    get('/readyz'),
    get('/metrics'),
    get('/openapi/'),
    get(
      '/openapi/{name}.json',
      'name',
      listing.descriptions.map((d) => d.name),
    ),
    get('/docs'),
    get('/docs/'),
    get('/docs/{asset}', 'asset', assets.length ? assets : ['index.html']),
  ];
}

interface Area {
  name: string;
  operations(world: World): Promise<Operation[]>;
  auth?: (op: Operation) => fc.Arbitrary<Credential>;
}

const AREAS: Area[] = [
  {
    name: 'proxy',
    operations: async (w) => withForwardedBodies(operationsOf(await w.document('proxy'))),
    auth: proxyAuth,
  },
  { name: 'tasks and users', operations: async (w) => operationsOf(await w.document('tasks')), auth: bearerAuth },
  { name: 'quotes', operations: async (w) => operationsOf(await w.document('quotes')), auth: oneSkyAuth },
  { name: 'docs, openapi and platform', operations: platformOperations },
];

interface Failure {
  count: number;
  request: FuzzRequest;
  index: number;
  answer: string;
}

/** Runs `work` on every item, `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

const excerpt = (value: string | Uint8Array | undefined, length = 300) => {
  const text = typeof value === 'string' || value === undefined ? (value ?? '') : Buffer.from(value).toString('latin1');
  return JSON.stringify(text.slice(0, length));
};

/**
 * A failure's class: what went wrong and where. A 5xx is its operation's own; a wrong shape
 * from Fastify itself (FST_ codes) or for another method on a route is one class per area,
 * whichever operation it came from.
 */
function classOf(request: FuzzRequest, problem: string, answer: string): string {
  const what = problem.replace(/\d{4,}/g, 'N').slice(0, 140);
  const fastify = /"code":"(FST_\w+)"/.exec(answer)?.[1];
  if (/^\d{3}$/.test(problem)) return `${what} | ${request.operation}`;
  if (fastify) return `${what} | ${fastify}`;
  if (!request.operation.startsWith(`${request.method} `)) return `${what} | another method on the route`;
  return `${what} | ${request.operation}`;
}

function report(area: string, failures: Map<string, Failure>): string {
  const replay = `FUZZ_SEED=${SEED}${RUNS !== 1000 ? ` FUZZ_RUNS=${RUNS}` : ''}`;
  const lines = [`${failures.size} failure classes in ${area}; replay with ${replay} (FUZZ_ONLY=<#> for one request)`];
  for (const [key, f] of [...failures].sort((a, b) => b[1].count - a[1].count)) {
    lines.push(
      `- ${key} (${f.count}×)`,
      `    #${f.index} ${f.request.method} ${f.request.path.slice(0, 300)}`,
      `    headers ${JSON.stringify(f.request.headers).slice(0, 300)}`,
      `    mutations ${f.request.mutations.join(', ') || 'none'}`,
      `    body ${excerpt(f.request.body)}`,
      `    answer ${f.answer.slice(0, 400)}`,
    );
  }
  return lines.join('\n');
}

describe.each(databaseKinds)('requests generated from the OpenAPI descriptions on %s', (kind) => {
  let world: World;
  let prototypes: PrototypeSnapshot;

  beforeAll(async () => {
    // Before the world: setting it up uploads files with prototype keys.
    prototypes = prototypeSnapshot();
    world = await startWorld(kind);
  }, 120_000);
  afterAll(async () => {
    await world?.close();
  });

  const title = `$name: ${RUNS} requests, no 5xx, errors in the area's shape, no hang, no prototype change`;
  it.each(AREAS)(
    title,
    async (area) => {
      const operations = await area.operations(world);
      expect(operations.length).toBeGreaterThan(0);
      const arbitrary = requestArbitrary(operations, { hints: world.hints, auth: area.auth });
      const sample = fc.sample(arbitrary, { seed: SEED, numRuns: RUNS }).map((request, index) => ({ request, index }));
      const requests = ONLY ? sample.filter(({ index }) => ONLY.has(index)) : sample;
      const failures = new Map<string, Failure>();
      const fail = (request: FuzzRequest, index: number, problem: string, answer = '') => {
        const key = classOf(request, problem, answer);
        const known = failures.get(key);
        if (known) known.count += 1;
        else failures.set(key, { count: 1, request, index, answer });
      };
      const statuses = new Map<string, number>();
      const inFlight = new Set<number>();
      let succeeded = 0;

      for (let start = 0; start < requests.length; start += BATCH) {
        const batch = requests.slice(start, start + BATCH);
        await eachLimited(batch, CONCURRENCY, async ({ request, index }) => {
          const { method, path, body } = request;
          if (TRACE) writeSync(2, `#${index} ${method} ${path.slice(0, 200)} ${excerpt(body, 80)}\n`);
          inFlight.add(index);
          const answer = await world.send(request);
          inFlight.delete(index);
          // Checked at each answer, so the request that changed a prototype is this one or one in flight with it.
          const changes = prototypeChanges(prototypes);
          if (changes.length) {
            restorePrototypes(prototypes);
            const others = [...inFlight].map((i) => `#${i}`).join(' ') || 'none';
            fail(request, index, `prototype changed: ${changes.join('; ')}`, `in flight with it: ${others}`);
          }
          if ('error' in answer) return fail(request, index, `no answer: ${answer.error}`);
          const { status, contentType, text } = answer;
          const tally = `${request.operation} ${status}`;
          statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
          if (status < 300) succeeded += 1;
          const problem = violation(method, path, answer);
          if (problem) fail(request, index, problem, `${status} ${contentType} ${text.slice(0, 400)}`);
        });
        const span = `requests #${batch[0].index}–${batch.at(-1)!.index}`;
        if (!(await world.healthy())) {
          fail(batch[0].request, batch[0].index, `/healthz does not answer after ${span}`);
          break;
        }
        // Work a request leaves running (an import) may change one later.
        const changes = prototypeChanges(prototypes);
        if (changes.length) {
          restorePrototypes(prototypes);
          fail(batch[0].request, batch[0].index, `prototype changed during ${span}: ${changes.join('; ')}`);
        }
        await world.rearm();
      }
      if (TRACE) {
        writeSync(
          2,
          `${[...statuses]
            .sort()
            .map(([tally, n]) => `${tally}: ${n}`)
            .join('\n')}\n`,
        );
      }
      expect([...failures.keys()], report(area.name, failures)).toEqual([]);
      // The live credentials worked: a good share of the requests got past authentication to a 2xx.
      if (!ONLY) {
        expect(succeeded, `${succeeded} of ${requests.length} requests answered 2xx`).toBeGreaterThan(RUNS / 20);
      }
    },
    300_000,
  );
});
