// Viewer benchmark: in one headless Chromium, time to first render and time to expand one
// operation, for GitHub's REST description (@octokit/openapi, ~13 MB) and a Stripe-sized one
// (generated here, ~3.5 MB: no npm package ships Stripe's), for our viewer against Swagger UI 5
// (swagger-ui-dist), Redoc 2.5 (standalone bundle) and Scalar (@scalar/api-reference's standalone
// bundle), all served from loopback; nothing else is reachable. Ratios are anchor time / our time
// (higher is better for us); the goals compare with the fastest anchor. Also reports our gzipped JS+CSS.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, normalize, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../test/support/browser.js';
import { stringify as stringifyYaml } from 'yaml';
import type { BenchResult } from './harness.js';

const ROOT = join(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist', 'viewer');
const TIMEOUT_MS = Number(process.env.VIEWER_BENCH_TIMEOUT_MS ?? 60_000);

/** A deterministic Stripe-like description: many resources, expandable anyOf fields, form bodies. */
export function stripeLike(resources = 170): Record<string, unknown> {
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const words = (
    'account balance charge customer dispute event file invoice payment payout price product quote refund review ' +
    'session setup source subscription tax token transfer usage webhook'
  ).split(' ');
  const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(random() * words.length)]).join(' ');
  const names = Array.from(
    { length: resources },
    (_, i) => `${words[i % words.length]}_${Math.floor(i / words.length)}`,
  );
  const schemas: Record<string, any> = {};
  for (const [i, name] of names.entries()) {
    const properties: Record<string, any> = {
      id: { type: 'string', description: 'Unique identifier for the object.', maxLength: 5000 },
      object: { type: 'string', enum: [name] },
    };
    const count = 12 + Math.floor(random() * 20);
    for (let p = 0; p < count; p++) {
      const kind = random();
      const other = names[Math.floor(random() * names.length)];
      properties[`${words[p % words.length]}_${p}`] =
        kind < 0.3
          ? { type: 'string', description: text(30), maxLength: 5000, nullable: random() < 0.5 }
          : kind < 0.45
            ? { type: 'integer', description: text(15) }
            : kind < 0.55
              ? { type: 'boolean', description: text(10) }
              : kind < 0.65
                ? { type: 'string', enum: words.slice(0, 3 + Math.floor(random() * 8)), description: text(20) }
                : kind < 0.8
                  ? {
                      anyOf: [{ maxLength: 5000, type: 'string' }, { $ref: `#/components/schemas/${other}` }],
                      description: text(25),
                      'x-expansionResources': { oneOf: [{ $ref: `#/components/schemas/${other}` }] },
                    }
                  : kind < 0.9
                    ? { type: 'array', items: { $ref: `#/components/schemas/${other}` }, description: text(20) }
                    : {
                        type: 'object',
                        description: text(15),
                        properties: {
                          nested: { type: 'string' },
                          amount: { type: 'integer' },
                          metadata: { type: 'object', additionalProperties: { type: 'string' } },
                        },
                      };
    }
    schemas[name] = {
      type: 'object',
      title: name,
      description: text(60),
      properties,
      required: ['id', 'object'],
      'x-resourceId': name,
      'x-stripeOperations': [{ method_name: 'list', method_type: 'list', operation: 'get', path: `/v1/${name}s` }],
    };
    if (i % 10 === 0) {
      schemas[`${name}_list`] = {
        type: 'object',
        properties: {
          data: { type: 'array', items: { $ref: `#/components/schemas/${name}` } },
          has_more: { type: 'boolean' },
          url: { type: 'string' },
        },
      };
    }
  }
  const paths: Record<string, any> = {};
  const error = {
    default: {
      description: 'Error response.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/error' } } },
    },
  };
  schemas.error = {
    type: 'object',
    properties: {
      error: {
        type: 'object',
        properties: {
          code: { type: 'string' },
          message: { type: 'string' },
          type: { type: 'string', enum: ['api_error', 'card_error', 'idempotency_error', 'invalid_request_error'] },
        },
      },
    },
  };
  for (const name of names) {
    const ref = { $ref: `#/components/schemas/${name}` };
    const form = {
      content: {
        'application/x-www-form-urlencoded': {
          schema: {
            type: 'object',
            properties: Object.fromEntries(
              Object.entries(schemas[name].properties)
                .slice(2)
                .map(([k, v]: [string, any]) => [k, v.anyOf ? { type: 'string', description: v.description } : v]),
            ),
          },
        },
      },
    };
    const listParams = ['created', 'ending_before', 'expand', 'limit', 'starting_after'].map((p) => ({
      name: p,
      in: 'query',
      description: text(25),
      required: false,
      schema:
        p === 'limit'
          ? { type: 'integer' }
          : p === 'expand'
            ? { type: 'array', items: { type: 'string', maxLength: 5000 } }
            : { type: 'string', maxLength: 5000 },
      style: p === 'expand' ? 'deepObject' : 'form',
      explode: true,
    }));
    paths[`/v1/${name}s`] = {
      get: {
        operationId: `Get${name}s`,
        summary: `List all ${name}s`,
        description: `<p>${text(50)}</p>`,
        tags: [name.split('_')[0]],
        parameters: listParams,
        responses: {
          200: {
            description: 'Successful response.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['data', 'has_more', 'object', 'url'],
                  properties: {
                    data: { type: 'array', items: ref },
                    has_more: { type: 'boolean' },
                    object: { type: 'string', enum: ['list'] },
                    url: { type: 'string', pattern: `^/v1/${name}s` },
                  },
                },
              },
            },
          },
          ...error,
        },
      },
      post: {
        operationId: `Post${name}s`,
        summary: `Create a ${name}`,
        description: `<p>${text(50)}</p>`,
        tags: [name.split('_')[0]],
        requestBody: form,
        responses: {
          200: { description: 'Successful response.', content: { 'application/json': { schema: ref } } },
          ...error,
        },
      },
    };
    paths[`/v1/${name}s/{id}`] = {
      get: {
        operationId: `Get${name}sId`,
        summary: `Retrieve a ${name}`,
        description: `<p>${text(40)}</p>`,
        tags: [name.split('_')[0]],
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 5000 } },
          listParams[2],
        ],
        responses: {
          200: { description: 'Successful response.', content: { 'application/json': { schema: ref } } },
          ...error,
        },
      },
      post: {
        operationId: `Post${name}sId`,
        summary: `Update a ${name}`,
        description: `<p>${text(40)}</p>`,
        tags: [name.split('_')[0]],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: form,
        responses: {
          200: { description: 'Successful response.', content: { 'application/json': { schema: ref } } },
          ...error,
        },
      },
      delete: {
        operationId: `Delete${name}sId`,
        summary: `Delete a ${name}`,
        tags: [name.split('_')[0]],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: {
            description: 'Deleted.',
            content: {
              'application/json': {
                schema: { type: 'object', properties: { deleted: { type: 'boolean' }, id: { type: 'string' } } },
              },
            },
          },
          ...error,
        },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Stripe-sized API', version: '2024-06-20', description: text(200) },
    servers: [{ url: 'https://api.example.com/' }],
    security: [{ basicAuth: [] }, { bearerAuth: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic' }, bearerAuth: { type: 'http', scheme: 'bearer' } },
    },
  };
}

/** Marks the first moment `selector` exists, after the next frame has been produced. */
const probe = (selector: string) => `<script>
(function () {
  var done = false;
  var check = function () {
    if (done || !document.querySelector(${JSON.stringify(selector)})) return;
    done = true;
    requestAnimationFrame(function () { setTimeout(function () { window.__firstRender = performance.now(); }, 0); });
  };
  new MutationObserver(check).observe(document.documentElement, { subtree: true, childList: true });
})();
</script>`;

type ViewerName = 'quartet' | 'before' | 'swagger-ui' | 'redoc' | 'scalar';
type Ours = 'quartet' | 'before';
/**
 * VIEWER_BENCH_BEFORE=<dir>: also measures another build of our viewer (an earlier commit's
 * dist/viewer), as "before", so one run gives the ratios before and after a change.
 */
const BEFORE = process.env.VIEWER_BENCH_BEFORE;
const ANCHORS = ['swagger-ui', 'redoc', 'scalar'] as const;

/** The anchors' packages: where their files are served from and their versions, read from node_modules. */
const ANCHOR_FILES: Record<(typeof ANCHORS)[number], { name: string; pkg: string; dir: string }> = {
  'swagger-ui': { name: 'Swagger UI', pkg: 'swagger-ui-dist', dir: '' },
  redoc: { name: 'Redoc', pkg: 'redoc', dir: 'bundles' },
  scalar: { name: 'Scalar', pkg: '@scalar/api-reference', dir: 'dist/browser' },
};

// onComplete marks when the whole description has been read (first render comes before it).
const ourPage = (dir: string) => (spec: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>quartet</title>${probe('.qv-tag-toggle')}
<link rel="stylesheet" href="/${dir}/viewer.css"><script src="/${dir}/viewer.js"></script></head>
<body><div id="app"></div>
<script>new SwaggerUi({ url: '${spec}', dom_id: 'app', validatorUrl: null,
  onComplete: function () { window.__complete = performance.now(); } }).load();</script></body></html>`;

const PAGES: Record<ViewerName, (spec: string) => string> = {
  quartet: ourPage('ours'),
  before: ourPage('before'),
  'swagger-ui': (
    spec,
  ) => `<!doctype html><html><head><meta charset="utf-8"><title>swagger-ui</title>${probe('.opblock-tag')}
<link rel="stylesheet" href="/swagger-ui/swagger-ui.css"><script src="/swagger-ui/swagger-ui-bundle.js"></script></head>
<body><div id="app"></div>
<script>window.ui = SwaggerUIBundle({ url: '${spec}', dom_id: '#app', validatorUrl: null });</script></body></html>`,
  redoc: (spec) => `<!doctype html><html><head><meta charset="utf-8"><title>redoc</title>
${probe('.api-content [data-section-id^="operation/"]')}
<script src="/redoc/redoc.standalone.js"></script></head>
<body><div id="app"></div><script>Redoc.init('${spec}', {}, document.getElementById('app'));</script></body></html>`,
  // Scalar's first tag section in the content column; its fonts and telemetry are off (no network).
  scalar: (spec) => `<!doctype html><html><head><meta charset="utf-8"><title>scalar</title>
${probe('section[id*="/tag/"]')}
<script src="/scalar/standalone.js"></script></head>
<body><div id="app"></div><script>Scalar.createApiReference('#app',
  { url: '${spec}', withDefaultFonts: false, telemetry: false });</script></body></html>`,
};

interface Op {
  tag: string;
  method: string;
  path: string;
  id: string;
}

/** Clicks what opens one operation and returns ms until the next frame after it has rendered. */
const expandOurs = (op: Op) => `(async () => {
    const tag = [...document.querySelectorAll('.qv-tag-toggle')]
      .find((b) => b.textContent === ${JSON.stringify(op.tag)});
    if (tag.getAttribute('aria-expanded') !== 'true') tag.click();
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50)));
    const li = [...document.querySelectorAll('.qv-op.qv-${op.method}')]
      .find((el) => el.querySelector('.qv-path').textContent === ${JSON.stringify(op.path)});
    const start = performance.now();
    li.querySelector('.qv-op-head').click();
    const body = () => li.querySelector('.qv-op-body');
    return await waitFrame(() => !body().hidden && body().childElementCount > 0, start);
  })()`;

const EXPAND: Record<ViewerName, (op: Op) => string> = {
  quartet: expandOurs,
  before: expandOurs,
  'swagger-ui': (op) => `(async () => {
    const find = () => [...document.querySelectorAll('.opblock-summary-path')]
      .filter((el) => el.getAttribute('data-path') === ${JSON.stringify(op.path)})
      .map((el) => el.closest('.opblock'))
      .find((el) => el.classList.contains('opblock-${op.method}'));
    let block = find();
    if (!block) {
      const tag = [...document.querySelectorAll('.opblock-tag')]
        .find((el) => el.getAttribute('data-tag') === ${JSON.stringify(op.tag)});
      tag.click();
      await waitFrame(() => !!find(), performance.now());
      block = find();
    }
    const start = performance.now();
    (block.querySelector('.opblock-summary-control') ?? block.querySelector('.opblock-summary')).click();
    return await waitFrame(() => !!block.querySelector('.opblock-body'), start);
  })()`,
  redoc: (op) => `(async () => {
    const section = document.querySelector('[data-section-id="operation/${op.id}"]');
    section.scrollIntoView();
    const button = [...section.querySelectorAll('button')].find((b) => /^\\s*200/.test(b.textContent));
    const before = section.querySelectorAll('*').length;
    const start = performance.now();
    button.click();
    return await waitFrame(() => section.querySelectorAll('*').length > before, start);
  })()`,
  // Scalar renders operations in one long column: the sidebar's link to the operation brings it
  // into view and renders it (its tag's group opened first, as a reader would).
  scalar: (op) => `(async () => {
    const suffix = ${JSON.stringify(`/${op.method.toUpperCase()}${op.path}`)};
    const link = () => [...document.querySelectorAll('.t-doc__sidebar a')]
      .find((a) => (a.getAttribute('href') ?? '').endsWith(suffix));
    if (!link()) {
      [...document.querySelectorAll('.t-doc__sidebar button')]
        .find((b) => b.textContent.trim() === ${JSON.stringify(`Open Group - ${op.tag}`)}).click();
      await waitFrame(() => !!link(), performance.now());
    }
    const start = performance.now();
    link().click();
    const section = () => [...document.querySelectorAll('section[id*="/tag/"]')].find((s) => s.id.endsWith(suffix));
    return await waitFrame(() => {
      const s = section();
      return !!s && !!s.querySelector('.operation-title') && !!s.querySelector('.request-card');
    }, start);
  })()`,
};

const WAIT_FRAME = `window.waitFrame = (ready, start) => new Promise((resolve, reject) => {
  const limit = start + ${TIMEOUT_MS};
  const tick = () => {
    if (ready()) return requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start), 0));
    if (performance.now() > limit) return reject(new Error('timed out'));
    requestAnimationFrame(tick);
  };
  tick();
});`;

const REPEAT = Number(process.env.VIEWER_BENCH_REPEAT ?? 2);

interface Measurement {
  firstRenderMs?: number;
  /** quartet only: when onComplete ran, i.e. the whole description was read and listed. */
  completeMs?: number;
  expandMs?: number;
  error?: string;
}

function best(a: Measurement | undefined, b: Measurement): Measurement {
  if (!a) return b;
  const min = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.min(x, y));
  return {
    firstRenderMs: min(a.firstRenderMs, b.firstRenderMs),
    completeMs: min(a.completeMs, b.completeMs),
    expandMs: min(a.expandMs, b.expandMs),
    error: a.error && b.error ? b.error : undefined,
  };
}

const timedOut = (m: Measurement) => /timed out|Timeout|no answer/.test(m.error ?? '');

/** A page busy in a long task never answers evaluate(): give up after the time limit. */
function limited<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>(
      (_resolve, reject) =>
        (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS)),
    ),
  ]).finally(() => clearTimeout(timer));
}

async function measure(browser: Browser, base: string, viewer: ViewerName, spec: string, op: Op): Promise<Measurement> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Loopback only: whatever a viewer would fetch from elsewhere (fonts, telemetry) fails at once.
  await context.route(
    (url) => url.hostname !== '127.0.0.1',
    (route) => route.abort(),
  );
  const page: Page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message.split('\n')[0]));
  try {
    await page.goto(`${base}/page/${viewer}?spec=${encodeURIComponent(spec)}`);
    await page.waitForFunction('window.__firstRender !== undefined', undefined, { timeout: TIMEOUT_MS, polling: 100 });
    const firstRenderMs = Math.round((await page.evaluate('window.__firstRender')) as number);
    let completeMs: number | undefined;
    if (viewer === 'quartet' || viewer === 'before') {
      await page.waitForFunction('window.__complete !== undefined', undefined, { timeout: TIMEOUT_MS, polling: 50 });
      completeMs = Math.round((await page.evaluate('window.__complete')) as number);
    }
    await page.evaluate(WAIT_FRAME);
    let expandMs: number | undefined;
    try {
      expandMs = Math.round((await limited(page.evaluate(EXPAND[viewer](op)), 'expand')) as number);
    } catch (error) {
      return { firstRenderMs, completeMs, error: `expand: ${(error as Error).message.split('\n')[0]}` };
    }
    return { firstRenderMs, completeMs, expandMs };
  } catch (error) {
    const errors = pageErrors.length ? `; page errors: ${pageErrors.slice(0, 2).join(' | ')}` : '';
    return { error: `${(error as Error).message.split('\n')[0]}${errors}` };
  } finally {
    // Closing a page stuck in a long task can itself hang; do not wait for it forever.
    await limited(context.close(), 'close').catch(() => undefined);
  }
}

export default async function (): Promise<BenchResult[]> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-viewer.mjs')], { stdio: 'inherit' });
  const github = readFileSync(join(ROOT, 'node_modules', '@octokit', 'openapi', 'generated', 'api.github.com.json'));
  const stripe = Buffer.from(JSON.stringify(stripeLike()));
  // The same description as YAML (block style, as YAML descriptions are written): YAML is parsed
  // piece by piece as it arrives (viewer/src/stream-yaml.ts), so it is measured on its own.
  // Shared objects written out each time, not as anchors and aliases (as descriptions are written).
  const stripeYaml = Buffer.from(stringifyYaml(stripeLike(), { aliasDuplicateObjects: false }));
  const specs: Record<string, Buffer> = {
    'github.json': github,
    'stripe.json': stripe,
    'stripe.yaml': stripeYaml,
    'petstore.json': readFileSync(join(ROOT, 'test', 'fixtures', 'viewer', 'petstore-2.0.json')),
  };
  const mounts: Record<string, string> = { '/ours/': DIST };
  if (BEFORE) mounts['/before/'] = resolve(BEFORE);
  const anchorLabel: Record<string, string> = {};
  for (const anchor of ANCHORS) {
    const { name, pkg, dir } = ANCHOR_FILES[anchor];
    const pkgDir = join(ROOT, 'node_modules', pkg);
    mounts[`/${anchor}/`] = join(pkgDir, dir);
    anchorLabel[anchor] = `${name} ${JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version}`;
  }
  const types: Record<string, string> = {
    js: 'text/javascript',
    css: 'text/css',
    json: 'application/json',
    yaml: 'application/yaml',
    html: 'text/html',
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const page = /^\/page\/(quartet|before|swagger-ui|redoc|scalar)$/.exec(url.pathname);
    if (page) {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      return res.end(PAGES[page[1] as ViewerName](url.searchParams.get('spec') ?? ''));
    }
    if (url.pathname.startsWith('/specs/') && specs[url.pathname.slice(7)]) {
      res.writeHead(200, { 'Content-Type': types[url.pathname.split('.').pop()!] });
      return res.end(specs[url.pathname.slice(7)]);
    }
    for (const [prefix, dir] of Object.entries(mounts)) {
      const file = join(dir, normalize(url.pathname.slice(prefix.length)));
      if (url.pathname.startsWith(prefix) && file.startsWith(dir) && existsSync(file)) {
        res.writeHead(200, { 'Content-Type': types[file.split('.').pop()!] ?? 'application/octet-stream' });
        return res.end(readFileSync(file));
      }
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const browser = await launchBrowser();
  const results: BenchResult[] = [];
  const inputs: { label: string; spec: string; op: Op }[] = [
    {
      label: 'GitHub REST (13 MB)',
      spec: '/specs/github.json',
      op: {
        tag: 'actions',
        method: 'get',
        path: '/enterprises/{enterprise}/actions/cache/retention-limit',
        id: 'actions/get-actions-cache-retention-limit-for-enterprise',
      },
    },
    {
      label: `Stripe-sized (${(stripe.length / 1e6).toFixed(1)} MB)`,
      spec: '/specs/stripe.json',
      op: { tag: 'account', method: 'get', path: '/v1/account_0s/{id}', id: 'Getaccount_0sId' },
    },
    {
      label: `Stripe-sized as YAML (${(stripeYaml.length / 1e6).toFixed(1)} MB)`,
      spec: '/specs/stripe.yaml',
      op: { tag: 'account', method: 'get', path: '/v1/account_0s/{id}', id: 'Getaccount_0sId' },
    },
  ];
  // VIEWER_BENCH_INPUTS=stripe.yaml: a subset of the inputs, by file name.
  const onlyInputs = process.env.VIEWER_BENCH_INPUTS?.split(',');
  if (onlyInputs) {
    inputs.splice(0, inputs.length, ...inputs.filter((input) => onlyInputs.includes(input.spec.slice(7))));
  }
  // VIEWER_BENCH_SMOKE=1: a small description, to check the measuring code itself quickly.
  if (process.env.VIEWER_BENCH_SMOKE === '1') {
    inputs.splice(0, inputs.length, {
      label: 'petstore',
      spec: '/specs/petstore.json',
      op: { tag: 'pet', method: 'get', path: '/pet/{petId}', id: 'getPetById' },
    });
  }
  // VIEWER_BENCH_ONLY=quartet,scalar: a subset of the viewers (for a quick look; ratios need the anchors).
  const only = process.env.VIEWER_BENCH_ONLY?.split(',');
  const viewers = (['quartet', ...(BEFORE ? ['before'] : []), ...ANCHORS] as ViewerName[]).filter(
    (v) => !only || only.includes(v),
  );
  try {
    // One unmeasured round on the small petstore: the browser's first pages pay for starting its
    // processes and caches, which would otherwise count against whichever viewer goes first.
    const petstore = { tag: 'pet', method: 'get', path: '/pet/{petId}', id: 'getPetById' };
    for (const viewer of viewers) await measure(browser, base, viewer, '/specs/petstore.json', petstore);
    for (const input of inputs) {
      const runs: Partial<Record<ViewerName, Measurement>> = {};
      // The machine is shared: best of REPEAT runs, interleaved. Redoc runs once (it is the slowest
      // by far and mostly hits the time limit on these inputs), and so does a viewer whose first
      // render did not finish within the limit.
      for (let round = 0; round < REPEAT; round++) {
        for (const viewer of viewers) {
          const stuck = runs[viewer] && runs[viewer].firstRenderMs === undefined && timedOut(runs[viewer]);
          if (round > 0 && (viewer === 'redoc' || stuck)) continue;
          const run = await measure(browser, base, viewer, input.spec, input.op);
          console.log(`    ${input.label} ${viewer}: ${JSON.stringify(run)}`);
          runs[viewer] = best(runs[viewer], run);
        }
      }
      results.push(...compare(input.label, runs, anchorLabel, 'quartet'));
      if (BEFORE) results.push(...compare(`${input.label}, before (${BEFORE})`, runs, anchorLabel, 'before'));
    }
  } finally {
    await browser.close();
    server.close();
  }
  const gz = (file: string) => gzipSync(readFileSync(join(DIST, file)), { level: 9 }).length;
  results.push({
    name: 'viewer JS+CSS gzipped',
    value: Math.round((gz('viewer.js') + gz('viewer.css')) / 100) / 10,
    unit: 'KB',
    goal: '≤ 100 KB',
    notes: 'viewer.js + viewer.css, gzip -9, 1 KB = 1,000 bytes',
  });
  return results;
}

/** Ratios of one input: each anchor, then the fastest of them (which the goals are about). */
function compare(
  label: string,
  runs: Partial<Record<ViewerName, Measurement>>,
  anchorLabel: Record<string, string>,
  who: Ours,
): BenchResult[] {
  const results: BenchResult[] = [];
  const ours = runs[who];
  if (!ours) return results;
  if (ours.completeMs !== undefined) {
    results.push({
      name: `viewer whole description read, ${label}`,
      value: ours.completeMs,
      unit: 'ms',
      notes: 'quartet: onComplete (every tag listed), after the first render',
    });
  }
  for (const [metric, key, goal] of [
    ['first render', 'firstRenderMs', '≥ 5× faster than the fastest other (ratio ≥ 5)'],
    ['expand operation', 'expandMs', '< 50 ms'],
  ] as const) {
    if (ours[key] === undefined) {
      results.push({
        name: `viewer ${metric}, ${label}`,
        value: -1,
        unit: 'ms',
        notes: `quartet failed: ${ours.error}`,
      });
      continue;
    }
    const ratioTo = (value: number) => Math.round((value / Math.max(1, ours[key]!)) * 10) / 10;
    let fastest: { anchor: string; value: number } | undefined;
    for (const anchor of ANCHORS) {
      const other = runs[anchor];
      if (!other) continue;
      // An anchor that did not finish within the limit counts as the limit: the ratio is then a lower bound.
      const value = other[key] ?? (timedOut(other) ? TIMEOUT_MS : undefined);
      const anchorNote =
        other[key] === undefined && timedOut(other)
          ? `; anchor did not finish within ${TIMEOUT_MS / 1000} s, ratio is a lower bound`
          : other.error
            ? `; anchor: ${other.error}`
            : '';
      if (value !== undefined && (!fastest || value < fastest.value)) fastest = { anchor, value };
      results.push({
        name: `viewer ${metric}, ${label}, vs ${anchor}`,
        value: ours[key]!,
        unit: 'ms',
        anchor: anchorLabel[anchor],
        anchorValue: value,
        ratio: value !== undefined ? ratioTo(value) : undefined,
        notes: `ratio = anchor ms / quartet ms${anchorNote}`,
      });
    }
    if (fastest) {
      results.push({
        name: `viewer ${metric}, ${label}, vs the fastest other`,
        value: ours[key]!,
        unit: 'ms',
        anchor: anchorLabel[fastest.anchor],
        anchorValue: fastest.value,
        ratio: ratioTo(fastest.value),
        goal,
        notes: 'ratio = anchor ms / quartet ms',
      });
    }
  }
  return results;
}
