// Each description version renders: Swagger 1.2 (listing + fetched declarations), 2.0, OpenAPI
// 3.0 (YAML, remote $ref, oneOf/allOf, recursion) and 3.1.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expandOperation, openBrowserPage, openViewer, type StaticServer } from './support.js';

let site: StaticServer;
let page: Page;

openBrowserPage([], (opened) => ({ site, page } = opened));

describe('description versions', () => {
  it('renders a Swagger 2.0 description with tags, operations, models and examples', async () => {
    const result = await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json' }`);
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-title').textContent()).resolves.toContain('Petstore Two');
    await expect(page.locator('.qv-spec-version').textContent()).resolves.toContain('2.0');
    expect(await page.locator('.qv-tag-toggle').allTextContents()).toEqual(['pet', 'store', 'user']);
    const op = await expandOperation(page, 'pet', 'post', '/pet');
    await expect(op.locator('.qv-example').first().textContent()).resolves.toContain('"name": "doggie"');
    await op
      .locator('.qv-tab', { hasText: /^Model$/ })
      .first()
      .click();
    const model = await op.locator('.qv-model').first().textContent();
    expect(model).toContain('Pet {');
    expect(model).toContain('photoUrls');
    // Deprecated operations are struck through and warn.
    const deprecated = await expandOperation(page, 'pet', 'get', '/pet/findByTags');
    await expect(deprecated.locator('.qv-warning').first().textContent()).resolves.toContain('Deprecated');
    // A recursive model terminates.
    const tree = await expandOperation(page, 'user', 'get', '/user/tree');
    await tree
      .locator('.qv-tab', { hasText: /^Model$/ })
      .first()
      .click();
    await tree.locator('.qv-nested summary').first().click();
    await tree.locator('.qv-model', { hasText: '(recursive)' }).first().waitFor({ timeout: 60_000 });
  });

  it('renders OpenAPI 3.0 YAML with a remote $ref, oneOf and allOf', async () => {
    const result = await openViewer(page, site.url, `{ url: '/fixtures/openapi-3.0.yaml' }`);
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-title').textContent()).resolves.toContain('Zoo Three');
    const op = await expandOperation(page, 'animals', 'post', '/animals');
    const example = await op.locator('.qv-example').first().textContent();
    expect(JSON.parse(example!)).toEqual({
      name: 'Tom',
      habitat: { continent: 'string' },
      details: { born: '2024-01-01', legs: 4 },
    });
    await op
      .locator('.qv-tab', { hasText: /^Model$/ })
      .first()
      .click();
    await expect(op.locator('.qv-model').first().textContent()).resolves.toContain('Animal {');
    // The server URL's variable gets its default, relative to the description.
    await expect(page.locator('.qv-footer').textContent()).resolves.toContain(`${site.url}/zoo/v1`);
    // A multipart body becomes one row per field, the binary one a file input.
    const upload = await expandOperation(page, 'animals', 'put', '/animals/{id}/photo');
    await expect(upload.locator('input[type=file][name=photo]').count()).resolves.toBe(1);
  });

  it('renders OpenAPI 3.1 (type arrays, const, examples, $ref with siblings)', async () => {
    const result = await openViewer(
      page,
      site.url,
      `{ url: '/fixtures/openapi-3.1.json', defaultModelRendering: 'model' }`,
    );
    expect(result.failure).toBeUndefined();
    const op = await expandOperation(page, 'books', 'get', '/books/{isbn}');
    const model = await op.locator('.qv-model').first().textContent();
    expect(model).toContain('subtitle');
    expect(model).toContain('string | null');
    await op
      .locator('.qv-tab', { hasText: /^Model Schema$/ })
      .first()
      .click();
    const example = JSON.parse((await op.locator('.qv-example').first().textContent())!);
    expect(example).toMatchObject({ title: 'Dune', kind: 'book' });
  });

  it('renders a Swagger 1.2 resource listing by fetching its declarations', async () => {
    const result = await openViewer(page, site.url, `{ url: '/v12/api-docs' }`);
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-title').textContent()).resolves.toContain('Swagger Sample App 1.2');
    await expect(page.locator('.qv-spec-version').textContent()).resolves.toContain('1.2');
    expect(await page.locator('.qv-tag-toggle').allTextContents()).toEqual(['pet', 'store']);
    const op = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await expect(op.locator('.qv-example').first().textContent()).resolves.toContain('"name"');
    await expect(op.locator('.qv-messages').textContent()).resolves.toContain('Pet not found');
    const find = await expandOperation(page, 'pet', 'get', '/pet/findByStatus');
    await expect(find.locator('select[multiple][name=status] option').allTextContents()).resolves.toEqual([
      'available',
      'pending',
      'sold',
    ]);
    await expect(page.locator('.qv-footer').textContent()).resolves.toContain(`${site.url}/api12`);
  });

  it('reports an unreadable description through onFailure and a red message bar', async () => {
    const result = await openViewer(page, site.url, `{ url: '/fixtures/missing.json' }`);
    expect(result.failure).toContain('missing.json');
    await expect(page.locator('.qv-message.qv-failure').textContent()).resolves.toContain('404');
  });

  it('renders a Swagger 1.1 API declaration (best effort: httpMethod, responseClass, errorResponses)', async () => {
    const declaration = {
      apiVersion: '0.1',
      swaggerVersion: '1.1',
      basePath: 'http://127.0.0.1:9/api',
      resourcePath: '/pets',
      apis: [
        {
          path: '/pets.{format}',
          operations: [
            {
              httpMethod: 'GET',
              nickname: 'listPets',
              summary: 'List pets',
              responseClass: 'List[Pet]',
              parameters: [
                {
                  paramType: 'query',
                  name: 'limit',
                  dataType: 'int',
                  required: false,
                  allowableValues: { valueType: 'LIST', values: ['10', '20'] },
                },
              ],
              errorResponses: [{ code: 404, reason: 'No pets' }],
            },
          ],
        },
      ],
      models: { Pet: { id: 'Pet', properties: { name: { type: 'string' }, age: { type: 'int' } } } },
    };
    const result = await openViewer(page, site.url, `{ spec: ${JSON.stringify(declaration)} }`);
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-spec-version').textContent()).resolves.toContain('1.1');
    const op = await expandOperation(page, 'pets', 'get', '/pets.json');
    expect(JSON.parse((await op.locator('.qv-example').first().textContent())!)).toEqual([{ name: 'string', age: 0 }]);
    await expect(op.locator('select[name=limit] option').allTextContents()).resolves.toEqual(['', '10', '20']);
    await expect(op.locator('.qv-messages').textContent()).resolves.toContain('No pets');
  });
});
