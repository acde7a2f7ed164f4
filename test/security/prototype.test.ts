// Prototype pollution across services (issue 12): keys that come from uploads, query strings,
// bodies and descriptions are plain keys. `__proto__`, `constructor` and `prototype` round-trip
// through every file format, and the export of a hostile file changes nothing for anyone else:
// Cashu tokens credit their own account, registrations work, later exports answer. The test
// workers run with --disable-proto=delete as production does, which disarms `__proto__` but not
// `constructor.prototype`: both are tried. test/support/prototypes.ts also checks the built-in
// prototypes at the end of every test file. The viewer runs in a browser, where `__proto__` is live.
import { request } from 'node:http';
import * as gettextParser from 'gettext-parser';
import type { Page } from 'playwright-core';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { browserTests } from '../support/browser.js';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { call, info } from '../proxy/wallet-helpers.js';
import { Client, startQuotesServer } from '../quotes/helpers.js';
import { expandOperation, openBrowserPage, openViewer, sendText, type StaticServer } from '../viewer/support.js';

/** Every [path, value] leaf of a parsed tree, own keys only, in order. */
function leaves(node: unknown, path: string[] = []): [string, unknown][] {
  if (node === null || typeof node !== 'object') return [[path.join(' > '), node]];
  return Object.entries(node).flatMap(([key, child]) => leaves(child, [...path, key]));
}

/** Nothing was written into the shared prototypes (where the symptoms of issue 12 start). */
function expectPrototypesClean() {
  for (const proto of [Object.prototype, Array.prototype, Function.prototype]) {
    for (const name of ['accountId', 'polluted', 'get']) expect(Object.hasOwn(proto, name), name).toBe(false);
  }
  expect(({} as Record<string, unknown>).accountId).toBeUndefined();
}

/** A GET with a JSON body (fetch refuses to send one). */
function getWithBody(url: string, token: string, body: string): Promise<{ status: number; type: string }> {
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'content-length': body.length,
  };
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: 'GET', headers }, (response) => {
      response.resume();
      const type = String(response.headers['content-type']);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, type }));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

// The files: each format with the three names as keys (and contexts, ids, resource names).
const JSON_BASE = `{"__proto__": {"accountId": "1", "polluted": "Polluted"},
  "constructor": {"prototype": {"polluted": "Via constructor"}}, "prototype": "Prototype",
  "menu": {"constructor": "Constructor", "list": ["First", "Second"]}}`;
const JSON_DE = `{"__proto__": {"accountId": "Eins", "polluted": "Verseucht"},
  "constructor": {"prototype": {"polluted": "Über constructor"}}, "prototype": "Prototyp",
  "menu": {"constructor": "Konstruktor", "list": ["Erste", "Zweite"]}}`;
const yaml = (root: string, texts: string[]) =>
  `${root}:\n  __proto__:\n    accountId: "${texts[0]}"\n    polluted: ${texts[1]}\n` +
  `  constructor:\n    prototype:\n      polluted: ${texts[2]}\n  prototype: ${texts[3]}\n`;
const PO_HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n';
const po = (texts: string[]) =>
  PO_HEADER +
  [
    `msgctxt "__proto__"\nmsgid "polluted"\nmsgstr "${texts[0]}"\n`,
    `msgctxt "constructor"\nmsgid "prototype"\nmsgstr "${texts[1]}"\n`,
    `msgid "constructor"\nmsgstr "${texts[2]}"\n`,
    `msgid "__proto__"\nmsgstr "${texts[3]}"\n`,
    `msgid "prototype"\nmsgstr "${texts[4]}"\n`,
  ].join('\n');
const xliff = (targets: string[]) => `<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
<file original="a" source-language="en-US" target-language="de-DE" datatype="plaintext"><body>
${['__proto__', 'constructor', 'prototype']
  .map(
    (id, i) => `<trans-unit id="${id}"><source>Source ${id}</source>
  <target state="translated">${targets[i]}</target></trans-unit>`,
  )
  .join('\n')}
</body></file></xliff>`;
const android = (texts: string[]) => `<?xml version="1.0" encoding="utf-8"?>
<resources>
  <string name="__proto__">${texts[0]}</string>
  <string name="constructor">${texts[1]}</string>
  <plurals name="prototype"><item quantity="one">${texts[2]}</item><item quantity="other">${texts[3]}</item></plurals>
  <string-array name="constructor"><item>${texts[4]}</item></string-array>
</resources>`;
const ios = (texts: string[]) =>
  `"__proto__" = "${texts[0]}";\n"constructor" = "${texts[1]}";\n"prototype" = "${texts[2]}";\n` +
  `"[\\"__proto__\\",\\"polluted\\"]" = "${texts[3]}";\n`;

// What a user reads in an export: entries, units, resources, lines.
const poEntries = (text: string) => {
  const { translations } = gettextParser.po.parse(text, { defaultCharset: 'utf-8' });
  return Object.entries(translations).flatMap(([context, table]) =>
    Object.values(table)
      .filter((entry) => entry.msgid !== '')
      .map((entry) => [context, entry.msgid, entry.msgstr[0]]),
  );
};
const xliffTargets = (text: string) =>
  [...text.matchAll(/<trans-unit id="([^"]*)">[\s\S]*?<target[^>]*>([^<]*)<\/target>/g)].map((m) => [m[1], m[2]]);
const ANDROID_PARTS =
  /<(string|plurals|string-array) name="([^"]*)"|<item(?: quantity="([^"]*)")?>([^<]*)<\/item>|>([^<]+)<\/string>/g;
const androidResources = (text: string) =>
  [...text.matchAll(ANDROID_PARTS)].map((m) => m.slice(1).filter(Boolean).join(' '));

const YAML_DE = yaml('de', ['Eins', 'Verseucht', 'Über', 'Prototyp']);
const IOS_DE = ios(['Proto DE', 'Konstruktor', 'Prototyp', 'Pfad']);
// [format, file name, base file, German file, reader of an export, the German export as read]
const CASES: [string, string, string, string, (text: string) => unknown, unknown][] = [
  [
    'HIERARCHICAL_JSON',
    'app.json',
    JSON_BASE,
    JSON_DE,
    (text) => leaves(JSON.parse(text)),
    leaves(JSON.parse(JSON_DE)),
  ],
  [
    'YAML',
    'en.yml',
    yaml('en', ['1', 'Polluted', 'Via constructor', 'Prototype']),
    YAML_DE,
    (text) => leaves(parseDocument(text).toJS()),
    leaves(parseDocument(YAML_DE).toJS()),
  ],
  [
    'GNU_PO',
    'app.po',
    po(['', '', '', '', '']),
    po(['Verseucht', 'Prototyp', 'Konstruktor', 'Proto', 'Prototyp 2']),
    poEntries,
    [
      ['', 'constructor', 'Konstruktor'],
      ['', '__proto__', 'Proto'],
      ['', 'prototype', 'Prototyp 2'],
      ['__proto__', 'polluted', 'Verseucht'],
      ['constructor', 'prototype', 'Prototyp'],
    ],
  ],
  [
    'XLIFF',
    'app.xlf',
    xliff(['', '', '']),
    xliff(['Proto', 'Konstruktor', 'Prototyp']),
    xliffTargets,
    [
      ['__proto__', 'Proto'],
      ['constructor', 'Konstruktor'],
      ['prototype', 'Prototyp'],
    ],
  ],
  [
    'ANDROID_XML',
    'strings.xml',
    android(['Proto', 'Constructor', 'One', 'Many', 'Item']),
    android(['Proto DE', 'Konstruktor', 'Ein', 'Viele', 'Eintrag']),
    androidResources,
    [
      'string __proto__',
      'Proto DE',
      'string constructor',
      'Konstruktor',
      'plurals prototype',
      'one Ein',
      'other Viele',
      'string-array constructor',
      'Eintrag',
    ],
  ],
  [
    'IOS_STRINGS',
    'Localizable.strings',
    ios(['Proto', 'Constructor', 'Prototype', 'Path']),
    IOS_DE,
    (text) => text,
    IOS_DE,
  ],
];

describe.each(databaseKinds)('prototype pollution on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const env = { SERVICES: 'proxy,tasks,quotes', PROXY_MINTS: mint.url, PROXY_MINT_TIMEOUT_MS: '2000' };
    server = await startQuotesServer(kind, env);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
    await mint?.close();
  });

  const exportOf = async (project: number, name: string, locale: string) => {
    const query = new URLSearchParams({ locale, source_file_name: name });
    const answer = await client.get(`/1/projects/${project}/translations?${query}`);
    expect(answer.status, answer.text).toBe(200);
    return answer.text;
  };

  const completed = { status: 'completed' };

  it.each(CASES)(
    '%s round-trips __proto__, constructor and prototype as plain keys',
    async (format, name, base, german, read, want) => {
      const project = await client.createProject('en-US', ['de-DE']);
      expect(await client.importFile(project, name, base, format)).toMatchObject(completed);
      expect(await client.importFile(project, name, german, format, { locale: 'de-DE' })).toMatchObject(completed);
      expect(read(await exportOf(project, name, 'de-DE'))).toEqual(want);
      if (format === 'HIERARCHICAL_JSON' || format === 'YAML') {
        expect(read(await exportOf(project, name, 'en-US'))).toEqual(read(base));
      }
      expectPrototypesClean();
    },
  );

  it('a key path written by another format is a plain path, and an absurd array index is left out', async () => {
    // iOS keys that read as JSON key paths, then the same file uploaded as JSON (its format
    // changes, the iOS strings are kept): the JSON writer meets the iOS keys.
    const project = await client.createProject('en-US', ['de-DE']);
    const keys =
      '"[\\"constructor\\",\\"prototype\\",\\"accountId\\"]" = "1";\n' +
      '"[\\"__proto__\\",\\"polluted\\"]" = "yes";\n"[\\"big\\",1000000000]" = "far";\n';
    const ios = await client.importFile(project, 'app.json', keys, 'IOS_STRINGS');
    expect(ios).toMatchObject({ ...completed, string_count: 3 });
    const json = await client.importFile(project, 'app.json', '{"hello": "Hello"}', 'HIERARCHICAL_JSON');
    expect(json).toMatchObject(completed);
    const exported = JSON.parse(await exportOf(project, 'app.json', 'en-US'));
    expect(Object.keys(exported).sort()).toEqual(['__proto__', 'constructor', 'hello']);
    expect(leaves(exported).sort()).toEqual([
      ['__proto__ > polluted', 'yes'],
      ['constructor > prototype > accountId', '1'],
      ['hello', 'Hello'],
    ]);
    expectPrototypesClean();
  });

  it('a PO msgid named like an Object.prototype member imports in any layout, obsolete entries beside it', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    const obsolete = `${PO_HEADER}msgid "constructor"\nmsgstr ""\n\n#~ msgid "gone"\n#~ msgstr ""\n`;
    const task = await client.importFile(project, 'old.po', obsolete, 'GNU_PO');
    expect(task).toMatchObject({ status: 'completed', string_count: 1 });
    const twice = `${PO_HEADER}msgid "constructor"\nmsgstr ""\n\nmsgid "constructor"\nmsgstr ""\n`;
    const refused = await client.importFile(project, 'twice.po', twice, 'GNU_PO');
    expect(refused).toMatchObject({ status: 'failed', message: expect.stringContaining('line 8: duplicate message') });
  });

  it('an XML entity named like an Object.prototype member is an undeclared entity', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    const strings = '<resources><string name="a">&constructor;</string></resources>';
    const android = await client.importFile(project, 'strings.xml', strings, 'ANDROID_XML');
    const undeclared = (name: string) => ({
      status: 'failed',
      message: expect.stringContaining(`undeclared entity &${name};`),
    });
    expect(android).toMatchObject(undeclared('constructor'));
    const units =
      '<xliff version="1.2"><file original="a"><body><trans-unit id="&toString;"><source>A</source>' +
      '</trans-unit></body></file></xliff>';
    const xlf = await client.importFile(project, 'a.xlf', units, 'XLIFF');
    expect(xlf).toMatchObject(undeclared('toString'));
  });

  it('the exploit of issue 12: after a hostile export, tokens, registrations and exports work as before', async () => {
    // A first caller's account (id 1 in this fresh database) with its balance.
    const first = await info(server.url, await mint.mintToken(50));
    expect(first.status, first.text).toBe(200);
    const project = await client.createProject('en-US', ['de-DE']);
    const hostile = {
      'proto.json': '{"__proto__": {"accountId": "1"}}',
      'constructor.json': '{"constructor": {"prototype": {"accountId": "1"}}}',
    };
    for (const [name, body] of Object.entries(hostile)) {
      const task = await client.importFile(project, name, body, 'HIERARCHICAL_JSON');
      expect(task).toMatchObject({ ...completed, string_count: 1 });
      expect(JSON.parse(await exportOf(project, name, 'en-US'))).toEqual(JSON.parse(body));
    }
    expectPrototypesClean();

    // A token as the bearer opens (and funds) its own account, not account 1.
    const second = await info(server.url, await mint.mintToken(100));
    expect(second.status, second.text).toBe(200);
    expect(second.body).toMatchObject({ balance: 100_000, available: 100_000 });
    expect(second.body.api_key).not.toBe(first.body.api_key);
    expect((await info(server.url, first.body.api_key)).body).toMatchObject({ balance: 50_000 });
    // A top-up credits the account it names.
    const topup = `/v1/wallet/topup?ecash_token=${encodeURIComponent(await mint.mintToken(10))}`;
    const paid = await call(server.url, 'POST', topup, { authorization: `Bearer ${second.body.api_key}` });
    expect(paid.status, paid.text).toBe(200);
    expect((await info(server.url, second.body.api_key)).body).toMatchObject({ balance: 110_000 });
    expect((await info(server.url, first.body.api_key)).body).toMatchObject({ balance: 50_000 });

    // Registration takes its ordinary fields.
    const tag = `ada${process.pid}`;
    const person = {
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: `${tag}@example.test`,
      username: tag,
      password: `a long password ${tag}`,
    };
    const json = { 'content-type': 'application/json' };
    const registered = await call(server.url, 'POST', '/api/users/register', json, JSON.stringify(person));
    expect(registered.status, registered.text).toBe(201);

    // Later exports of ordinary files answer.
    const plain = await client.importFile(project, 'plain.json', '{"a": {"b": "B"}}', 'HIERARCHICAL_JSON');
    expect(plain).toMatchObject(completed);
    expect(JSON.parse(await exportOf(project, 'plain.json', 'en-US'))).toEqual({ a: { b: 'B' } });
    expectPrototypesClean();
  });

  it('query strings, JSON and multipart bodies with __proto__ and constructor keys change no prototype', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    await client.importFile(project, 'a.json', '{"a": "Some words"}', 'HIERARCHICAL_JSON');
    // An order's parameters merge the query string and the body: hostile names there are plain names.
    const json = { files: ['a.json'], to_locale: 'de-DE' };
    const order = await client.call('POST', `/1/projects/${project}/orders?constructor=x&__proto__=y`, { json });
    expect(order.status, order.text).toBe(201);
    const body = JSON.parse('{"files": ["a.json"], "to_locale": "de-DE", "__proto__": {"order_type": "review-only"}}');
    const poisoned = await client.call('POST', `/1/projects/${project}/orders`, { json: body });
    expect(poisoned).toMatchObject({ status: 400, body: { meta: { status: 400 } } });
    const form = new FormData();
    form.append('file_format', 'HIERARCHICAL_JSON');
    form.append('constructor', 'x');
    form.append('file', new Blob(['{"b": "B"}']), 'b.json');
    const upload = await client.call('POST', `/1/projects/${project}/files`, { form });
    expect(upload).toMatchObject({ status: 400, body: { meta: { status: 400 } } });
    // Users and tasks API: a GET body merged with the query string.
    const find = `${server.url}/api/users/find?__proto__=1`;
    const found = await getWithBody(find, client.token, '{"__proto__": {"id": 1}}');
    expect(found).toMatchObject({ status: 400, type: expect.stringMatching(/problem\+json/) });
    expectPrototypesClean();
  });
});

describe.runIf(browserTests)('the viewer with hostile descriptions', () => {
  let site: StaticServer;
  let page: Page;
  // Served as text, so the viewer parses them as it would any description (JSON.parse keeps
  // `__proto__` an own key; an object literal here would not).
  const SWAGGER_12 = `{"swaggerVersion": "1.2", "basePath": "http://127.0.0.1:9/api", "resourcePath": "/things",
    "apis": [{"path": "__proto__", "operations": [{"method": "GET", "nickname": "proto", "type": "constructor"}]},
             {"path": "/constructor", "operations": [{"method": "POST", "nickname": "make", "type": "__proto__"}]}],
    "models": {"constructor": {"id": "constructor",
                               "properties": {"__proto__": {"type": "string"}, "prototype": {"type": "string"}}},
               "__proto__": {"id": "__proto__", "properties": {"polluted": {"type": "string"}}}}}`;
  const OPENAPI_3 = `{"openapi": "3.0.3", "info": {"title": "Hostile", "version": "1"},
    "components": {"securitySchemes": {"constructor": {"type": "apiKey", "in": "header", "name": "X-C"},
                                       "key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
      "schemas": {"Thing": {"type": "object", "properties": {"__proto__": {"type": "string", "example": "p"},
        "constructor": {"type": "string", "example": "c"}, "prototype": {"type": "string", "example": "q"}}}}},
    "paths": {"/things": {"post": {"tags": ["things"], "requestBody": {"content": {"application/json":
      {"schema": {"$ref": "#/components/schemas/Thing"}}}}, "responses": {"200": {"description": "ok"}}}}}}`;

  openBrowserPage(
    [
      (req, res) => {
        const text = new Map([
          ['/hostile12.json', SWAGGER_12],
          ['/hostile3.json', OPENAPI_3],
        ]).get(req.url ?? '');
        if (text === undefined) return false;
        sendText(res, 200, text, 'application/json');
        return true;
      },
    ],
    (opened) => ({ site, page } = opened),
  );

  /** Own properties of the page's prototypes that a fresh frame's do not have. */
  const addedToPrototypes = (p: Page) =>
    p.evaluate(() => {
      const frame = document.body.appendChild(document.createElement('iframe'));
      const pristine = frame.contentWindow as unknown as typeof globalThis;
      const added = (['Object', 'Array', 'Function'] as const).flatMap((name) => {
        const builtIn = new Set(Object.getOwnPropertyNames(pristine[name].prototype));
        const own = Object.getOwnPropertyNames(globalThis[name].prototype);
        return own.filter((key) => !builtIn.has(key)).map((key) => `${name}.${key}`);
      });
      frame.remove();
      return added;
    });

  it('a Swagger 1.2 declaration with __proto__ and constructor paths and models renders them as names', async () => {
    const result = await openViewer(page, site.url, `{ url: '/hostile12.json', docExpansion: 'list' }`);
    expect(result.failure).toBeUndefined();
    expect(await addedToPrototypes(page)).toEqual([]);
    const op = await expandOperation(page, 'things', 'get', '__proto__');
    const example = JSON.parse((await op.locator('.qv-example').first().textContent())!);
    expect(Object.keys(example)).toEqual(['__proto__', 'prototype']);
    expect(await addedToPrototypes(page)).toEqual([]);
  });

  it('OpenAPI 3: property and security scheme names like __proto__ and constructor are plain names', async () => {
    const result = await openViewer(page, site.url, `{ url: '/hostile3.json', jsonEditor: true }`);
    expect(result.failure).toBeUndefined();
    const op = await expandOperation(page, 'things', 'post', '/things');
    const body = JSON.parse(await op.locator('textarea.qv-body-input').inputValue());
    expect(Object.entries(body)).toEqual([
      ['__proto__', 'p'],
      ['constructor', 'c'],
      ['prototype', 'q'],
    ]);
    // The body editor writes each of them as a field of the body.
    await op.locator('.qv-json-editor').getByLabel('__proto__', { exact: true }).fill('edited');
    const edited = JSON.parse(await op.locator('textarea.qv-body-input').inputValue());
    expect(Object.entries(edited)).toEqual([
      ['__proto__', 'edited'],
      ['constructor', 'c'],
      ['prototype', 'q'],
    ]);
    // Authorizing one scheme does not show the scheme named "constructor" as authorized.
    await page.locator('.qv-authorize').click();
    const key = page.locator('form.qv-auth-scheme[aria-label="key"]');
    await key.locator('input').fill('secret');
    await key.getByRole('button', { name: 'Authorize' }).click();
    await key.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
    const constructorStatus = page.locator('form.qv-auth-scheme[aria-label="constructor"] .qv-auth-status');
    await expect(constructorStatus.textContent()).resolves.toBe('');
    expect(await addedToPrototypes(page)).toEqual([]);
  });
});
