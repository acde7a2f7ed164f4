// Localization the 2.x way: lang/translator.js + a language file of phrase → translation, data-
// sw-translate elements, learn/translate. All 14 languages cover every phrase the viewer shows.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expandOperation, openBrowserPage, ROOT, sendText, type StaticServer } from './support.js';

const LANG_DIR = join(ROOT, 'viewer', 'lang');
const english = JSON.parse(readFileSync(join(LANG_DIR, 'en.json'), 'utf8')) as Record<string, string>;

/** Every literal phrase passed to t(), tr(), field(), action() or section() in the viewer source. */
function sourcePhrases(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) {
        const text = readFileSync(full, 'utf8');
        for (const m of text.matchAll(/\b(?:t|tr|field|action|section)\((['"])((?:(?!\1)[^\\]|\\.)*)\1/g)) {
          found.add(m[2].replace(/\\(.)/g, '$1'));
        }
        // Column headings are mapped through tr() from arrays.
        for (const m of text.matchAll(
          /\[((?:'[^']+',\s*)+'[^']+')\]\.(?:map|forEach)\(\(\w+(?:, \w+)?\) => (?:tr|t)\(/g,
        )) {
          for (const s of m[1].matchAll(/'([^']+)'/g)) found.add(s[1]);
        }
      }
    }
  };
  walk(join(ROOT, 'viewer', 'src'));
  return found;
}

describe('language files', () => {
  it('the English catalogue lists every phrase the viewer shows', () => {
    const missing = [...sourcePhrases()].filter((p) => !(p in english));
    expect(missing).toEqual([]);
  });

  it('ships the 14 languages of 2.x, each translating every phrase', () => {
    const codes = readdirSync(LANG_DIR)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace('.json', ''))
      .sort();
    expect(codes).toEqual(['ca', 'el', 'en', 'es', 'fr', 'geo', 'it', 'ja', 'ko-kr', 'pl', 'pt', 'ru', 'tr', 'zh-cn']);
    for (const code of codes) {
      const words = JSON.parse(readFileSync(join(LANG_DIR, `${code}.json`), 'utf8'));
      expect(Object.keys(words).sort(), code).toEqual(Object.keys(english).sort());
      if (code !== 'en') expect(words['Try it out!'], code).not.toBe('Try it out!');
    }
  });
});

let site: StaticServer;
let page: Page;

// The 2.x header's URL field and Explore button, kept on one line of the page as in 2.x.
const API_SELECTOR_FIELDS =
  '<input id="input_baseUrl" name="baseUrl" type="text"><button id="explore" data-sw-translate>Explore</button>';

/** A page laid out like a 2.x index.html: translator, language file, its own translated header. */
function legacyPage(langScript: string) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>2.x page</title>
<link href="/viewer/viewer.css" rel="stylesheet">
<script src="/viewer/lang/translator.js"></script>
<script src="${langScript}"></script>
<script src="/viewer/viewer.js"></script>
<script src="/legacy-init.js"></script>
</head><body>
<div id="header"><form id="api_selector">${API_SELECTOR_FIELDS}</form></div>
<div id="message-bar" class="swagger-ui-wrap" data-sw-translate>&nbsp;</div>
<div id="swagger-ui-container" class="swagger-ui-wrap"></div>
</body></html>`;
}

// What a 2.x page's inline script did (moved to a file here, as a strict CSP requires).
const LEGACY_INIT = `
hljs.configure({ highlightSizeThreshold: 5000 });
window.swaggerUi = new SwaggerUi({
  url: '/fixtures/petstore-2.0.json',
  dom_id: 'swagger-ui-container',
  supportedSubmitMethods: ['get', 'post', 'put', 'delete', 'patch'],
  onComplete: function (swaggerApi, swaggerUi) {
    if (typeof initOAuth == 'function') {
      initOAuth({ clientId: 'your-client-id', realm: 'your-realms', appName: 'your-app-name' });
    }
    if (window.SwaggerTranslator) window.SwaggerTranslator.translate();
    window.completed = true;
  },
  onFailure: function (data) { window.failed = data; },
  docExpansion: 'none',
  jsonEditor: false,
  defaultModelRendering: 'schema',
  showRequestHeaders: false
});
window.swaggerUi.load();
`;

// A language file in the exact 2.x form, written for this test.
const CUSTOM_LANG = `'use strict';
/* Pirate */
window.SwaggerTranslator.learn({
  "Warning: Deprecated": "Beware: sunk",
  "Implementation Notes": "Captain's notes",
  "Parameters": "Booty",
  "Try it out!": "Fire the cannons!",
  "Show/Hide": "Hoist/Lower",
  "Explore": "Set sail"
});`;

openBrowserPage(
  [
    (req, res) => {
      if (req.url === '/legacy-ru.html') {
        return (sendText(res, 200, legacyPage('/viewer/lang/ru.js'), 'text/html'), true);
      }
      if (req.url === '/legacy-pirate.html') return (sendText(res, 200, legacyPage('/pirate.js'), 'text/html'), true);
      if (req.url === '/pirate.js') return (sendText(res, 200, CUSTOM_LANG, 'text/javascript'), true);
      if (req.url === '/legacy-init.js') return (sendText(res, 200, LEGACY_INIT, 'text/javascript'), true);
      return false;
    },
  ],
  (opened) => ({ site, page } = opened),
);

describe('localization in the browser', () => {
  it('a 2.x page works by swapping its script tags, translated by lang/ru.js', async () => {
    await page.goto(`${site.url}/legacy-ru.html`);
    await page.waitForFunction('window.completed === true');
    await expect(page.locator('#explore').textContent()).resolves.toBe('Обзор');
    await expect(page.locator('.qv-tag-actions button').first().textContent()).resolves.toBe('Показать/Скрыть');
    const op = await expandOperation(page, 'pet', 'get', '/pet/findByTags');
    await expect(op.locator('.qv-warning').first().textContent()).resolves.toBe('Предупреждение: Устарело');
    await expect(op.locator('.qv-submit').textContent()).resolves.toBe('Попробовать!');
    await expect(op.locator('.qv-params th').allTextContents()).resolves.toEqual([
      'Параметр',
      'Значение',
      'Описание',
      'Тип параметра',
      'Тип данных',
    ]);
    // The page's own address box drives the viewer.
    await page.locator('#input_baseUrl').fill('/fixtures/openapi-3.1.json');
    await page.locator('#explore').click();
    await page.locator('.qv-title', { hasText: 'Library Three One' }).waitFor();
  });

  it('loads a hand-written 2.x-format language file, and learn() re-translates live', async () => {
    await page.goto(`${site.url}/legacy-pirate.html`);
    await page.waitForFunction('window.completed === true');
    await expect(page.locator('#explore').textContent()).resolves.toBe('Set sail');
    const op = await expandOperation(page, 'pet', 'get', '/pet/findByTags');
    await expect(op.locator('.qv-submit').textContent()).resolves.toBe('Fire the cannons!');
    await expect(op.locator('h4', { hasText: 'Booty' }).count()).resolves.toBe(1);
    await page.evaluate(`window.SwaggerTranslator.learn({ "Show/Hide": "Peek" })`);
    await expect(page.locator('.qv-tag-actions button').first().textContent()).resolves.toBe('Peek');
  });

  it('our index.html takes ?lang=', async () => {
    await page.goto(`${site.url}/viewer/index.html?lang=ja&url=${encodeURIComponent('/fixtures/petstore-2.0.json')}`);
    await page.locator('.qv-title', { hasText: 'Petstore Two' }).waitFor();
    await expect(page.locator('.qv-explore button').textContent()).resolves.toBe('表示');
    await expect(page.locator('.qv-authorize').textContent()).resolves.toBe('認可する');
  });
});
