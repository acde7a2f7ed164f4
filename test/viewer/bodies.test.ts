// Request bodies as the API expects them: every media type a description offers, in its order,
// the first chosen; JSON sent as JSON, forms as multipart or URL-encoded fields; oneOf/anyOf
// alternatives chosen in forms and bodies; Swagger 2.0 body parameters sent as JSON whatever
// `consumes` lists. A loopback echo route records what arrives. Also the Accept header: `*/*`
// by default for 3.x, the select's choice, and a declared Accept parameter's typed value.
import { describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { expandOperation, openBrowserPage, openViewer, sendText, type StaticServer } from './support.js';

let site: StaticServer;
let page: Page;

openBrowserPage(
  [
    (req, res) => {
      if (!req.url?.startsWith('/echo/')) return false;
      sendText(res, 200, '{"ok":true}', 'application/json');
      return true;
    },
  ],
  (opened) => ({ site, page } = opened),
);

/** Clicks "Try it out!" and returns the request the echo route received. */
async function tryIt(op: Locator) {
  const before = site.seen.length;
  await op.locator('.qv-submit').click();
  await expect.poll(() => op.locator('.qv-status').textContent()).toMatch(/Response Code: 200/);
  const echoed = site.seen.slice(before).filter((r) => r.url.startsWith('/echo/'));
  expect(echoed).toHaveLength(1);
  return echoed[0];
}

/** The visible control of a field (form types each have their own rows; one set is shown). */
const visible = (op: Locator, name: string) => op.locator(`[name="${name}"]:visible`);

describe('request bodies (OpenAPI 3)', () => {
  it('offers each media type in order, JSON first, and sends each as its type says', async () => {
    expect((await openViewer(page, site.url, `{ url: '/fixtures/bodies-3.0.json' }`)).failure).toBeUndefined();
    const op = await expandOperation(page, 'bodies', 'post', '/messages');
    const select = op.locator('select.qv-content-type');
    await expect(select.locator('option').allTextContents()).resolves.toEqual([
      'application/json',
      'multipart/form-data',
      'application/x-www-form-urlencoded',
      'application/xml',
    ]);
    await expect.poll(() => select.inputValue()).toBe('application/json');
    // JSON: a text box (form fields hidden), the example one click away.
    await expect.poll(() => op.locator('textarea.qv-body-input').isVisible()).toBe(true);
    await expect.poll(() => visible(op, 'text').count()).toBe(0);
    await op.locator('.qv-params .qv-example').first().click();
    const json = await tryIt(op);
    expect(json.method).toBe('POST');
    expect(json.headers['content-type']).toBe('application/json');
    expect(JSON.parse(json.body)).toEqual({ text: 'hello', count: 0 });

    // Multipart: the fields of the schema (allOf merged), the file one a file input.
    await select.selectOption('multipart/form-data');
    await expect.poll(() => op.locator('textarea.qv-body-input').isVisible()).toBe(false);
    await visible(op, 'text').fill('hi there');
    await visible(op, 'count').fill('2');
    await expect.poll(() => op.locator('input[type=file][name=attachment]:visible').count()).toBe(1);
    const multipart = await tryIt(op);
    expect(multipart.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(multipart.body).toMatch(/name="text"\r\n\r\nhi there\r\n/);
    expect(multipart.body).toMatch(/name="count"\r\n\r\n2\r\n/);

    // URL-encoded: its own fields.
    await select.selectOption('application/x-www-form-urlencoded');
    await visible(op, 'text').fill('a&b');
    const encoded = await tryIt(op);
    expect(encoded.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(encoded.body).toBe('text=a%26b');

    // XML: the text box again, the example written as XML follows the type it was written for.
    await select.selectOption('application/json');
    await expect.poll(() => op.locator('textarea.qv-body-input').inputValue()).toMatch(/"hello"/);
    await select.selectOption('application/xml');
    await expect.poll(() => op.locator('textarea.qv-body-input').inputValue()).toMatch(/<Message>/);
    const xml = await tryIt(op);
    expect(xml.headers['content-type']).toBe('application/xml');
    expect(xml.body).toContain('<text>hello</text>');
  });

  it('lets the reader choose the alternative of a oneOf, in a form and in a JSON body', async () => {
    const op = await expandOperation(page, 'bodies', 'post', '/subscriptions');
    const select = op.locator('select.qv-content-type');
    await expect.poll(() => select.inputValue()).toBe('application/x-www-form-urlencoded');
    const choice = op.locator('select.qv-alternative-select:visible');
    await expect(choice.locator('option').allTextContents()).resolves.toEqual(['ByDevice', 'ByClient']);
    await expect.poll(() => visible(op, 'deviceId').count()).toBe(1);
    await expect.poll(() => visible(op, 'clientId').count()).toBe(0);
    await choice.selectOption({ label: 'ByClient' });
    await expect.poll(() => visible(op, 'deviceId').count()).toBe(0);
    await visible(op, 'clientId').fill('c9');
    await visible(op, 'channel').fill('news');
    const form = await tryIt(op);
    expect(form.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(form.body).toBe('clientId=c9&channel=news');

    // JSON: the example of the chosen alternative replaces the one the viewer wrote.
    await select.selectOption('application/json');
    await op.locator('.qv-params .qv-example').first().click();
    await expect.poll(() => op.locator('textarea.qv-body-input').inputValue()).toMatch(/"deviceId"/);
    await op.locator('select.qv-alternative-select:visible').selectOption({ label: 'ByClient' });
    await expect.poll(() => op.locator('textarea.qv-body-input').inputValue()).toMatch(/"clientId"/);
    const json = await tryIt(op);
    expect(json.headers['content-type']).toBe('application/json');
    expect(JSON.parse(json.body)).toEqual({ clientId: 'c1', channel: 'string' });
  });

  it('sends Accept */* until the reader picks a type, and a declared Accept parameter as typed', async () => {
    const search = await expandOperation(page, 'accept', 'get', '/search');
    const accept = search.locator('select.qv-accept');
    await expect(accept.locator('option').allTextContents()).resolves.toEqual([
      '*/*',
      'application/json',
      'application/xml',
    ]);
    expect((await tryIt(search)).headers.accept).toBe('*/*');
    await accept.selectOption('application/xml');
    expect((await tryIt(search)).headers.accept).toBe('application/xml');

    const web = await expandOperation(page, 'accept', 'get', '/web');
    await web.locator('input[name=Accept]').fill('application/ld+json');
    expect((await tryIt(web)).headers.accept).toBe('application/ld+json');
    await web.locator('input[name=Accept]').fill('');
    expect((await tryIt(web)).headers.accept).toBe('*/*');
  });
});

describe('request bodies (Swagger 2.0, consumes: [application/json, multipart/form-data])', () => {
  it('sends a body parameter as JSON and formData parameters as the form types consumes lists', async () => {
    expect((await openViewer(page, site.url, `{ url: '/fixtures/bodies-2.0.json' }`)).failure).toBeUndefined();
    const account = await expandOperation(page, 'accounts', 'post', '/accounts');
    await expect(account.locator('select.qv-content-type option').allTextContents()).resolves.toEqual([
      'application/json',
    ]);
    await expect.poll(() => account.locator('.qv-params input[name=email]').count()).toBe(0);
    await account.locator('textarea.qv-body-input').fill('{"email":"x@example.com"}');
    const json = await tryIt(account);
    expect(json.headers['content-type']).toBe('application/json');
    expect(json.body).toBe('{"email":"x@example.com"}');

    // formData parameters with a global consumes listing JSON first: multipart, its form type.
    const upload = await expandOperation(page, 'accounts', 'post', '/uploads');
    await expect.poll(() => upload.locator('select.qv-content-type').count()).toBe(0);
    await visible(upload, 'title').fill('report');
    await upload.locator('input[type=file][name=file]').setInputFiles({
      name: 'a.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('file body'),
    });
    const multipart = await tryIt(upload);
    expect(multipart.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(multipart.body).toMatch(/name="title"\r\n\r\nreport\r\n/);
    expect(multipart.body).toMatch(/name="file"; filename="a.txt"\r\nContent-Type: text\/plain\r\n\r\nfile body\r\n/);

    // An operation's own consumes: URL-encoded first, multipart on choice; the same fields.
    const form = await expandOperation(page, 'accounts', 'post', '/forms');
    const select = form.locator('select.qv-content-type');
    await expect.poll(() => select.inputValue()).toBe('application/x-www-form-urlencoded');
    await expect.poll(() => form.locator('textarea.qv-body-input').isVisible()).toBe(false);
    await visible(form, 'name').fill('Ann');
    await visible(form, 'tags').fill('a\nb');
    const encoded = await tryIt(form);
    expect(encoded.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(encoded.body).toBe('name=Ann&tags=a&tags=b');
    await select.selectOption('multipart/form-data');
    const parts = await tryIt(form);
    expect(parts.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(parts.body.match(/name="tags"/g)).toHaveLength(2);
  });
});
