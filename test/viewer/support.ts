// Browser-test support: one Debian Chromium per test file (test/support/browser.ts), and a
// loopback static server for the built viewer, the fixtures and whatever routes a test adds.
import { readFileSync, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join, normalize } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { launchBrowser } from '../support/browser.js';

export { launchBrowser };

export const ROOT = join(import.meta.dirname, '..', '..');
export const DIST = join(ROOT, 'dist', 'viewer');
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'viewer');
/** Swagger UI 2.2.10's own dist/ (the swagger-ui@2.2.10 dev dependency): index.html, o2c.html, lang/. */
export const SWAGGER_UI_2 = join(ROOT, 'node_modules', 'swagger-ui', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.yaml': 'application/yaml',
  '.png': 'image/png',
  '.gif': 'image/gif',
};

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  body: string,
) => boolean | void | Promise<boolean | void>;

export interface StaticServer {
  url: string;
  server: Server;
  /** Requests seen, newest last (method, url, headers). */
  seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

/** A page that loads the viewer without booting it; tests create SwaggerUi themselves. */
export const HARNESS = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>viewer test</title>
<link rel="stylesheet" href="/viewer/viewer.css"><script src="/viewer/viewer.js"></script></head>
<body><div id="swagger_ui"></div></body></html>`;

/**
 * Serves /viewer/* from dist/viewer, /fixtures/* from test/fixtures/viewer (with CORS so other
 * origins can load them), /sui2/* from Swagger UI 2.2.10's dist (its index.html with quartet's
 * includes, see swagger2Index), /harness.html, the 1.2 petstore under /v12/api-docs, then `routes`.
 */
export async function startStatic(routes: Handler[] = [], options: { cors?: boolean } = {}): Promise<StaticServer> {
  const seen: StaticServer['seen'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    if (options.cors !== false) res.setHeader('Access-Control-Allow-Origin', '*');
    for (const route of routes) if (await route(req, res, body)) return;
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
    if (path === '/harness.html') return sendText(res, 200, HARNESS, TYPES['.html']);
    if (path === '/sui2/index.html') return sendText(res, 200, swagger2Index(), TYPES['.html']);
    const v12 = /^\/v12\/api-docs(?:\/(pet|store))?$/.exec(path);
    let file: string | undefined;
    if (v12) file = join(FIXTURES, 'v12', `${v12[1] ?? 'api-docs'}.json`);
    else if (path.startsWith('/viewer/')) file = join(DIST, normalize(path.slice(8)));
    else if (path.startsWith('/fixtures/')) file = join(FIXTURES, normalize(path.slice(10)));
    else if (path.startsWith('/sui2/')) file = join(SWAGGER_UI_2, normalize(path.slice(6)));
    if (file && existsSync(file) && statSync(file).isFile()) {
      return sendText(res, 200, readFileSync(file), TYPES[extname(file)] ?? 'application/octet-stream');
    }
    sendText(res, 404, 'not found', 'text/plain');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Swagger UI 2.2.10's own dist/index.html with only its style and script includes swapped for
 * quartet's (viewer.css, viewer.js): its inline script, header and onComplete → initOAuth stay.
 * `edit` changes the page further, as a site configures its copy (for example an option).
 */
export function swagger2Index(edit: (html: string) => string = (html) => html): string {
  const original = readFileSync(join(SWAGGER_UI_2, 'index.html'), 'utf8');
  const styles = /^ *<link href='css\/[^']+' media='[^']+' rel='stylesheet' type='text\/css'\/>\n/gm;
  const scripts = /^ *<script src='[^']+' type='text\/javascript'><\/script>\n/gm;
  if (original.match(styles)?.length !== 5 || original.match(scripts)?.length !== 14) {
    throw new Error('swagger-ui 2.2.10 index.html is not the expected file');
  }
  // The first include of each kind becomes quartet's, the others go.
  const once = (replacement: string) => {
    let done = false;
    return () => (done ? '' : ((done = true), replacement));
  };
  const swapped = original
    .replace(styles, once('  <link href="/viewer/viewer.css" rel="stylesheet">\n'))
    .replace(scripts, once('  <script src="/viewer/viewer.js"></script>\n'));
  return edit(swapped);
}

export interface BrowserPage {
  site: StaticServer;
  page: Page;
}

/**
 * Before the tests of the file (or describe): Chromium with one page, and a static server with
 * `routes`; both closed after them.
 */
export function openBrowserPage(routes: Handler[], ready: (opened: BrowserPage) => void): void {
  let close = async () => {};
  beforeAll(async () => {
    const [browser, site] = await Promise.all([launchBrowser(), startStatic(routes)]);
    close = async () => {
      await browser.close();
      await site.close();
    };
    ready({ site, page: await browser.newPage() });
  });
  afterAll(() => close());
}

export function sendText(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  type: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'Content-Type': type, ...headers });
  res.end(body);
}

/** An OpenAPI 3.0.0 description as JSON, for an inline `spec`: its title, one server, the paths. */
export function openApiSpec(title: string, server: string, paths: object, extra: object = {}): string {
  return JSON.stringify({
    openapi: '3.0.0',
    info: { title, version: '1' },
    servers: [{ url: server }],
    paths,
    ...extra,
  });
}

/**
 * Opens the harness and creates the viewer with `options` (a JS object literal source, so tests
 * can pass functions), waiting for onComplete or onFailure.
 */
export async function openViewer(page: Page, base: string, options: string, query = ''): Promise<{ failure?: string }> {
  await page.goto(`${base}/harness.html${query}`);
  return page.evaluate(`new Promise((resolve) => {
    const options = (${options});
    const onComplete = options.onComplete, onFailure = options.onFailure;
    window.ui = new SwaggerUi(Object.assign({}, options, {
      onComplete: (api, ui) => { onComplete && onComplete(api, ui); resolve({}); },
      onFailure: (message) => { onFailure && onFailure(message); resolve({ failure: message }); },
    }));
    window.ui.load();
  })`) as Promise<{ failure?: string }>;
}

/** Expands a tag (if needed) and an operation by its visible path and method. */
export async function expandOperation(page: Page, tag: string, method: string, path: string) {
  // The resources' tag, not a webhook group of the same name (listed after them).
  const tagButton = page.locator('.qv-tag-toggle', { hasText: new RegExp(`^${tag}$`) }).first();
  if ((await tagButton.getAttribute('aria-expanded')) !== 'true') await tagButton.click();
  const op = page
    .locator(`.qv-op.qv-${method.toLowerCase()}`)
    .filter({ has: page.locator('.qv-path', { hasText: new RegExp(`^${escapeRegExp(path)}$`) }) })
    .first();
  const head = op.locator('.qv-op-head');
  if ((await head.getAttribute('aria-expanded')) !== 'true') await head.click();
  return op;
}

/** `text` with the character at `where` (modulo its length) deleted or replaced by `char`, or `char` inserted there. */
export function edited(text: string, where: number, how: 'delete' | 'replace' | 'insert', char: string): string {
  const i = where % text.length;
  if (how === 'delete') return text.slice(0, i) + text.slice(i + 1);
  return text.slice(0, i) + char + text.slice(how === 'replace' ? i + 1 : i);
}

export function escapeRegExp(text: string) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
