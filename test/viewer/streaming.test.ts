// A JSON description is shown while it arrives (viewer/src/stream.ts, docs/viewer.md#large-descriptions):
// the server here sends the first path items and then holds the rest back until the test lets it go.
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Page } from 'playwright-core';
import { expandOperation, openBrowserPage, openViewer, sendText, type StaticServer } from './support.js';

/** A 3.0 description of `count` operations, their parameters and schemas in `components`, after `paths`. */
function bigDescription(count: number) {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    paths[`/things/${i}`] = {
      get: {
        tags: [i < count / 2 ? 'things' : 'more things'],
        operationId: `getThing${i}`,
        summary: `Thing number ${i}`,
        parameters: [{ $ref: '#/components/parameters/Limit' }],
        responses: {
          200: {
            description: 'The thing',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
          },
        },
      },
    };
  }
  const schemas: Record<string, unknown> = {
    Thing: { type: 'object', properties: { size: { type: 'integer' }, colour: { type: 'string' } } },
  };
  // Enough definitions that reading them is real work: about 1.5 MB in all.
  for (let i = 0; i < 3000; i++) {
    schemas[`Filler${i}`] = {
      type: 'object',
      description: `Filler ${i} `.repeat(40),
      properties: { a: { type: 'string' } },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Arrives slowly', version: '1' },
    servers: [{ url: 'http://127.0.0.1:9/api' }],
    paths,
    components: {
      parameters: {
        Limit: { name: 'limit', in: 'query', description: 'How many at most', schema: { type: 'integer' } },
      },
      schemas,
    },
  };
}

const BIG = JSON.stringify(bigDescription(80), null, 1);
/** The first part ends before the 21st path item: 20 operations can be shown before the rest. */
const CUT = BIG.indexOf('"/things/20"');
const MALFORMED_LATE = BIG.replace('"Filler2999"', '"Filler2999" "oops"');
const MALFORMED_PATHS = BIG.replace('"/things/40": {', '"/things/40": {,');
/** Stripe's order: members sorted by name, so `components` comes first and `paths` last but for `servers`. */
const SORTED = JSON.stringify(
  Object.fromEntries(Object.entries(bigDescription(80)).sort(([a], [b]) => (a < b ? -1 : 1))),
);

/** The same description as YAML, cut after the line of `/things/20` (so 0–19 are complete). */
const BIG_YAML = stringify(bigDescription(80));
const CUT_YAML = BIG_YAML.indexOf('  /things/21:');
const MALFORMED_YAML = BIG_YAML.replace('  Filler2999:', '  Filler2999: [');

/** The message of the yaml library's one parse of the whole text, as the viewer reports it (load.ts). */
function yamlError(text: string) {
  try {
    parse(text, { maxAliasCount: 1000 });
    return 'no error';
  } catch (error) {
    return (error as Error).message;
  }
}

let gate: { release: () => void; released: Promise<void> };
const newGate = () => {
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  gate = { release, released };
};
newGate();

/** Sends `text` up to `cut`, then the rest once the test releases the gate. */
async function held(res: ServerResponse, text: string, cut: number, type = 'application/json') {
  res.writeHead(200, { 'Content-Type': type });
  res.write(text.slice(0, cut));
  await gate.released;
  res.end(text.slice(cut));
}

const routes = (req: IncomingMessage, res: ServerResponse) => {
  const url = (req.url ?? '').split('?')[0];
  if (url === '/big.json') void held(res, BIG, CUT);
  else if (url === '/malformed-late.json') void held(res, MALFORMED_LATE, CUT);
  else if (url === '/malformed-paths.json') void held(res, MALFORMED_PATHS, CUT);
  else if (url === '/sorted.json') sendText(res, 200, SORTED, 'application/json');
  else if (url === '/big.yaml') void held(res, BIG_YAML, CUT_YAML, 'application/yaml');
  else if (url === '/malformed.yaml') void held(res, MALFORMED_YAML, CUT_YAML, 'application/yaml');
  else return false;
  return true;
};

let site: StaticServer;
let page: Page;
openBrowserPage([routes], (opened) => ({ site, page } = opened));

/** Starts the viewer without waiting: window.outcome becomes {complete} or {failure}. */
async function start(options: string) {
  newGate();
  await page.goto(`${site.url}/harness.html`);
  await page.evaluate(`window.outcome = undefined;
    window.ui = new SwaggerUi(Object.assign(${options}, {
      onComplete: () => { window.outcome = { complete: true }; },
      onFailure: (message) => { window.outcome = { failure: message }; },
    }));
    void window.ui.load();`);
}

const outcome = () => page.evaluate('window.outcome') as Promise<{ complete?: boolean; failure?: string } | undefined>;
const finished = async () => {
  await page.waitForFunction('window.outcome !== undefined');
  return (await outcome())!;
};

/** The message JSON.parse gives for the text at `path`, as the viewer reported before it streamed. */
const parseError = (path: string) =>
  page.evaluate(
    `fetch(${JSON.stringify(path)}).then((r) => r.text()).then((text) => {
      try { JSON.parse(text.trimStart()); return 'no error'; } catch (error) { return error.message; }
    })`,
  ) as Promise<string>;

describe('a big description arriving slowly', () => {
  it('shows its first operations, usable, before the rest has arrived, then everything', async () => {
    await start(`{ url: '/big.json' }`);
    const tag = page.locator('.qv-tag-toggle', { hasText: /^things$/ });
    await tag.waitFor();
    // The rest is still held back by the server: nothing complete yet, the status says so.
    expect(await outcome()).toBeUndefined();
    await expect(page.locator('.qv-message').textContent()).resolves.toContain('fetching resource list');
    await expect(page.locator('.qv-tag-toggle').allTextContents()).resolves.toEqual(['things']);
    await tag.click();
    // The preview shows the operations read when it was made: all 20 of the first part, or fewer
    // when the browser's first read of the body came in two pieces (seen under load in CI).
    await expect.poll(() => page.locator('.qv-op').count(), { timeout: 60_000 }).toBeGreaterThan(0);
    const summaries = await page.locator('.qv-op .qv-summary').allTextContents();
    expect(summaries.length).toBeLessThanOrEqual(20);
    expect(summaries).toEqual(summaries.map((_, i) => `Thing number ${i}`));
    // Search and opening an operation work; its details wait for the definitions still to come.
    // The last one shown: its number is a prefix of no other shown ("number 1" of 0..1, "number 13" of 0..19).
    const last = summaries.length - 1;
    await page.locator('.qv-search').fill(`number ${last}`);
    await page.locator('.qv-op:not([hidden])').first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll('.qv-op:not([hidden])').length === 1);
    await expect(page.locator('.qv-op:not([hidden]) .qv-path').textContent()).resolves.toBe(`/things/${last}`);
    await page.locator('.qv-search').fill('');
    await page.waitForFunction(
      (shown) => document.querySelectorAll('.qv-op:not([hidden])').length === shown,
      summaries.length,
    );
    const op = await expandOperation(page, 'things', 'get', '/things/0');
    await expect(op.locator('.qv-op-body [role=status]').textContent()).resolves.toBe('Loading…');

    gate.release();
    expect(await finished()).toEqual({ complete: true });
    await expect(page.locator('.qv-tag-toggle').allTextContents()).resolves.toEqual(['things', 'more things']);
    await expect(page.locator('.qv-message').isHidden()).resolves.toBe(true);
    // What the reader opened stays open, now with its details (from `components`).
    await expect(tag.getAttribute('aria-expanded')).resolves.toBe('true');
    await expect.poll(() => page.locator('#resource_things .qv-op').count(), { timeout: 60_000 }).toBe(40);
    const opened = page.locator('#resource_things .qv-op', {
      has: page.locator('.qv-path', { hasText: /^\/things\/0$/ }),
    });
    await expect(opened.locator('.qv-op-head').getAttribute('aria-expanded')).resolves.toBe('true');
    await expect(opened.locator('.qv-op-body').textContent()).resolves.toContain('How many at most');
    await expect(opened.locator('input[name=limit]').count()).resolves.toBe(1);
    await expect(opened.locator('.qv-op-body').textContent()).resolves.not.toContain('Loading…');
  });

  it('reports a syntax error after the first operations were shown as before, and shows nothing else', async () => {
    for (const path of ['/malformed-late.json', '/malformed-paths.json']) {
      await start(`{ url: '${path}' }`);
      await page.locator('.qv-tag-toggle').first().waitFor();
      gate.release();
      const result = await finished();
      expect(result.failure).toBe(`Unable to read api ${site.url}${path}: ${await parseError(path)}`);
      await expect(page.locator('.qv-message.qv-failure').textContent()).resolves.toBe(result.failure);
      await expect(page.locator('.qv-tag-toggle').count()).resolves.toBe(0);
    }
  });

  it('a newer description replaces one still arriving', async () => {
    await start(`{ url: '/big.json' }`);
    await page.locator('.qv-tag-toggle').first().waitFor();
    await page.evaluate(`window.ui.explore('/fixtures/petstore-2.0.json')`);
    await page.waitForFunction(() => document.querySelector('.qv-title')?.textContent?.includes('Petstore'));
    gate.release();
    await page.waitForTimeout(300);
    await expect(page.locator('.qv-title').textContent()).resolves.toContain('Petstore Two');
    await expect(page.locator('.qv-tag-toggle', { hasText: /^things$/ }).count()).resolves.toBe(0);
  });

  it('renders a description whose `paths` comes after its `components` (Stripe\u2019s order)', async () => {
    newGate();
    const result = await openViewer(page, site.url, `{ url: '/sorted.json' }`);
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-tag-toggle').allTextContents()).resolves.toEqual(['things', 'more things']);
    const op = await expandOperation(page, 'more things', 'get', '/things/79');
    await expect(op.locator('.qv-op-body').textContent()).resolves.toContain('How many at most');
    await expect(op.locator('.qv-example').first().textContent()).resolves.toContain('"colour"');
  });

  it('shows the first operations of a YAML description before the rest has arrived, then everything', async () => {
    expect(CUT_YAML).toBeGreaterThan(0);
    await start(`{ url: '/big.yaml' }`);
    const tag = page.locator('.qv-tag-toggle', { hasText: /^things$/ });
    await tag.waitFor();
    expect(await outcome()).toBeUndefined();
    await tag.click();
    // All 20 of the first part, or fewer when the browser read it in two pieces (as for JSON).
    await expect.poll(() => page.locator('.qv-op').count(), { timeout: 60_000 }).toBeGreaterThan(0);
    const summaries = await page.locator('.qv-op .qv-summary').allTextContents();
    expect(summaries.length).toBeLessThanOrEqual(20);
    expect(summaries).toEqual(summaries.map((_, i) => `Thing number ${i}`));
    gate.release();
    expect(await finished()).toEqual({ complete: true });
    await expect(page.locator('.qv-tag-toggle').allTextContents()).resolves.toEqual(['things', 'more things']);
    await expect.poll(() => page.locator('#resource_things .qv-op').count(), { timeout: 60_000 }).toBe(40);
    const op = await expandOperation(page, 'more things', 'get', '/things/79');
    await expect(op.locator('.qv-op-body').textContent()).resolves.toContain('How many at most');
  });

  it('reports a YAML syntax error after the first operations as the whole parse does', async () => {
    await start(`{ url: '/malformed.yaml' }`);
    await page.locator('.qv-tag-toggle').first().waitFor();
    gate.release();
    const result = await finished();
    expect(result.failure).toBe(`Unable to read api ${site.url}/malformed.yaml: ${yamlError(MALFORMED_YAML)}`);
    await expect(page.locator('.qv-tag-toggle').count()).resolves.toBe(0);
  });
});
