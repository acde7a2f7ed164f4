// Descriptions and responses are hostile: an XSS corpus in every place a description or a
// server can put text (titles, markdown, links, enum values, examples, server URLs, names,
// response bodies and header values) must never run script or leave an active element.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { FIXTURES, openApiSpec, openBrowserPage, openViewer, sendText, type StaticServer } from './support.js';

let site: StaticServer;
let page: Page;
const EVIL = `<img src=x onerror="__xss('body')"><script>__xss('body.script')</script>`;

openBrowserPage(
  [
    (req, res) => {
      if (!req.url?.startsWith('/evil/')) return false;
      const html = req.url.includes('html');
      sendText(
        res,
        200,
        html ? EVIL : JSON.stringify({ html: EVIL, '<img src=x onerror=__xss(1)>': 1 }),
        html ? 'text/html' : 'application/json',
        {
          'X-Evil': `<img src=x onerror="__xss('header.value')">`,
          'Access-Control-Expose-Headers': 'X-Evil',
        },
      );
      return true;
    },
  ],
  (opened) => {
    ({ site, page } = opened);
    page.on('dialog', (dialog) => dialog.dismiss());
  },
);

async function assertInert(p: Page) {
  await p.waitForTimeout(150); // let any injected image error handler fire
  const report = await p.evaluate(() => {
    const root = document.querySelector('.qv')!;
    return {
      hits: (window as any).__hits as string[],
      scripts: root.querySelectorAll(
        'script, iframe, object, embed, .qv-markdown form, .qv-markdown input, .qv-markdown button',
      ).length,
      handlers: Array.from(root.querySelectorAll('*')).filter((el) =>
        Array.from(el.attributes).some((a) => /^on/i.test(a.name)),
      ).length,
      jsLinks: Array.from(root.querySelectorAll('[href], [src]')).filter((el) =>
        /^\s*(javascript|data):/i.test(el.getAttribute('href') ?? el.getAttribute('src') ?? ''),
      ).length,
      styles: root.querySelectorAll('[style]').length,
    };
  });
  expect(report).toEqual({ hits: [], scripts: 0, handlers: 0, jsLinks: 0, styles: 0 });
}

describe('XSS corpus', () => {
  it('renders a hostile description fully expanded without running anything', async () => {
    const corpus = JSON.parse(readFileSync(join(FIXTURES, 'xss-corpus.json'), 'utf8'));
    await page.goto(`${site.url}/harness.html`);
    await page.evaluate(`window.__hits = []; window.__xss = (where) => window.__hits.push(String(where));`);
    await page.evaluate(
      `new Promise((resolve) => { window.ui = new SwaggerUi({ spec: ${JSON.stringify(corpus)}, ` +
        `docExpansion: 'full', onComplete: resolve, onFailure: resolve }); window.ui.load(); })`,
    );
    await page.waitForFunction(() => document.querySelectorAll('.qv-op-body:not([hidden])').length === 1);
    // Text stays text: the title shows the markup literally.
    await expect(page.locator('.qv-title').textContent()).resolves.toContain(
      `<img src=x onerror="__xss('info.title')">`,
    );
    // Open every model view, nested model and the Authorize panel.
    await page.locator('.qv-authorize').click();
    for (const tab of await page.locator('.qv-tab').all()) await tab.click();
    for (const summary of await page.locator('details summary').all()) await summary.click();
    await page.locator('.qv-op select[name=choice] option').first().waitFor({ state: 'attached' });
    await assertInert(page);
  });

  it('shows hostile response bodies and header values as text', async () => {
    const spec = openApiSpec('evil server', `${site.url}/evil`, {
      '/json': { get: { responses: { 200: { description: 'j' } } } },
      '/html': { get: { responses: { 200: { description: 'h' } } } },
    });
    await openViewer(page, site.url, `{ spec: ${spec}, docExpansion: 'full', showRequestHeaders: true }`);
    await page.evaluate(`window.__hits = []; window.__xss = (where) => window.__hits.push(String(where));`);
    await page.waitForFunction(() => document.querySelectorAll('.qv-submit').length === 2);
    for (const button of await page.locator('.qv-submit').all()) await button.click();
    await page.waitForFunction(() => document.querySelectorAll('.qv-response-code').length === 2);
    await expect(page.locator('.qv-response-headers').first().textContent()).resolves.toContain(
      `x-evil: <img src=x onerror="__xss('header.value')">`,
    );
    await expect(page.locator('.qv-response-text').nth(1).textContent()).resolves.toBe(EVIL);
    await assertInert(page);
  });
});
