// quartet serves the viewer at /docs/: static files with their content types, caching and
// nosniff, a strict CSP on the page, and an index listing every mounted service's description.
// In the browser, each of quartet's own descriptions renders under that CSP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';
import { request } from 'node:http';
import { launchBrowser } from './support.js';

/** Status of a GET sent with the path exactly as written (fetch would normalize dot segments). */
function rawStatus(path: string): Promise<number> {
  const { hostname, port } = new URL(quartet.url);
  return new Promise((resolve, reject) => {
    request({ hostname, port, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

let quartet: TestServer;
let browser: Browser;

beforeAll(async () => {
  [quartet, browser] = await Promise.all([startTestServer('sqlite'), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await quartet?.close();
});

describe('/docs/ on quartet', () => {
  it('redirects /docs to /docs/ and serves the index with a strict CSP listing the descriptions', async () => {
    const redirect = await fetch(`${quartet.url}/docs`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/docs/');
    const index = await fetch(`${quartet.url}/docs/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const csp = index.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain('connect-src *');
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await index.text();
    const listed = (await (await fetch(`${quartet.url}/openapi/`)).json()) as { descriptions: { url: string }[] };
    const meta = /<meta name="viewer-config" content="([^"]*)">/
      .exec(html)![1]
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    expect(JSON.parse(meta).descriptions).toEqual(listed.descriptions);
    expect(html).not.toMatch(/<script>/); // no inline script
  });

  it('serves assets with content types, ETags and 304s, and 404s for anything else', async () => {
    const js = await fetch(`${quartet.url}/docs/viewer.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = js.headers.get('etag')!;
    const again = await fetch(`${quartet.url}/docs/viewer.js`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect((await fetch(`${quartet.url}/docs/viewer.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${quartet.url}/docs/lang/ru.js`)).status).toBe(200);
    expect((await fetch(`${quartet.url}/docs/oauth2-redirect.html`)).headers.get('content-security-policy')).toContain(
      "script-src 'self'",
    );
    expect(await rawStatus('/docs/%2e%2e/package.json')).toBe(404);
    expect(await rawStatus('/docs/..%2fpackage.json')).toBe(404);
    expect((await fetch(`${quartet.url}/docs/nope.js`)).status).toBe(404);
  });

  it("renders each of quartet's own descriptions from the selector, with no CSP violation", async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${quartet.url}/docs/`);
    const listed = (await (await fetch(`${quartet.url}/openapi/`)).json()) as {
      descriptions: { title: string; url: string }[];
    };
    expect(listed.descriptions.length).toBeGreaterThan(0);
    await expect(page.locator('.qv-descriptions option').allTextContents()).resolves.toEqual(
      listed.descriptions.map((d) => d.title),
    );
    for (const description of listed.descriptions) {
      await page.locator('.qv-descriptions').selectOption(description.url);
      await page.locator('.qv-title', { hasText: description.title }).waitFor();
      // The title shows with the first operations; wait for the whole description (the status
      // message goes), whose page adds the Authorize panel above the list: a click aimed at a
      // heading of the preview while that happens lands on another one.
      // (A locator wait: a string predicate is evaluated by eval, which the page's CSP refuses.)
      await page.locator('.qv-message').waitFor({ state: 'hidden', timeout: 60_000 });
      await expect(page.locator('.qv-spec-version').textContent()).resolves.toBe('OAS 3.1.0');
      await expect(page.locator('.qv-message.qv-failure').count()).resolves.toBe(0);
      // Open every operation of the description: all of them render. A tag's operations render in
      // batches (later ones a frame or more later on a busy machine): wait for all before opening them.
      const document = (await (await fetch(`${quartet.url}${description.url}`)).json()) as {
        paths: Record<string, Record<string, unknown>>;
      };
      const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
      const expected = Object.values(document.paths).flatMap((item) => Object.keys(item).filter((k) => methods.has(k)));
      for (const tag of await page.locator('.qv-tag-toggle').all()) await tag.click();
      await expect.poll(() => page.locator('.qv-op-head').count(), { timeout: 60_000 }).toBe(expected.length);
      // Dispatched on each heading, not clicked at its place: an opened body's highlighted example
      // takes its real height when it scrolls into view (content-visibility), which can move the next
      // heading under a click already aimed (seen under load: one operation never opened).
      for (const head of await page.locator('.qv-op-head').all()) await head.dispatchEvent('click');
      // Bodies render when opened, possibly a frame later: wait for all of them, not just the first.
      const operations = await page.locator('.qv-op').count();
      await expect.poll(() => page.locator('.qv-op-body:visible').count(), { timeout: 60_000 }).toBe(operations);
    }
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
