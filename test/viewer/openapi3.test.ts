// OpenAPI 3.0/3.1 beyond paths: webhooks, callbacks, links, discriminator/oneOf, and an OpenID
// Connect token obtained through the provider's discovery document (oauth-server.ts, loopback).
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { oauthServer, openWithProvider } from './oauth-server.js';
import { expandOperation, openViewer, type StaticServer } from './support.js';

let site: StaticServer;
let auth: StaticServer;
let page: Page;
const provider = oauthServer();
openWithProvider(provider, [], (opened) => ({ site, auth, page } = opened));

const ok = { description: 'ok' };
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const schemas = {
  Cat: {
    type: 'object',
    required: ['petType'],
    properties: { petType: { type: 'string' }, purrs: { type: 'boolean' } },
  },
  Dog: {
    type: 'object',
    required: ['petType'],
    properties: { petType: { type: 'string' }, barks: { type: 'boolean' } },
  },
  Pet: {
    oneOf: [ref('Cat'), ref('Dog')],
    discriminator: { propertyName: 'petType', mapping: { cat: '#/components/schemas/Cat', dog: 'Dog' } },
  },
  Animal: { type: 'object', discriminator: { propertyName: 'kind' }, properties: { kind: { type: 'string' } } },
  Bird: { allOf: [ref('Animal'), { type: 'object', properties: { wings: { type: 'integer' } } }] },
  User: { type: 'object', properties: { id: { type: 'string' }, addressId: { type: 'string' } } },
};

function description(extra: object = {}) {
  return JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'Three One', version: '1' },
    servers: [{ url: site.url }],
    paths: {
      '/pets': {
        post: {
          tags: ['pets'],
          operationId: 'addPet',
          requestBody: json(ref('Pet')),
          responses: { 200: { description: 'the pet', ...json(ref('Pet')) } },
        },
      },
      '/birds': {
        get: { tags: ['pets'], operationId: 'getBird', responses: { 200: { ...ok, ...json(ref('Bird')) } } },
      },
      '/subscriptions': {
        post: {
          tags: ['events'],
          operationId: 'subscribe',
          requestBody: json({ type: 'object', properties: { callbackUrl: { type: 'string', format: 'uri' } } }),
          responses: { 201: ok },
          callbacks: {
            onPetAdded: {
              '{$request.body#/callbackUrl}': {
                post: { summary: 'A pet was added', requestBody: json(ref('Pet')), responses: { 204: ok } },
              },
            },
          },
        },
      },
      '/users/{id}': {
        get: {
          tags: ['users'],
          operationId: 'getUser',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            200: {
              description: 'the user',
              ...json(ref('User')),
              links: {
                address: {
                  operationId: 'getAddress',
                  parameters: { addressId: '$response.body#/addressId' },
                  description: 'The **address** of this user',
                },
                self: { operationRef: '#/paths/~1users~1{id}/get', parameters: { id: '$response.body#/id' } },
              },
            },
          },
        },
      },
      '/addresses/{addressId}': {
        get: {
          tags: ['users'],
          operationId: 'getAddress',
          parameters: [{ name: 'addressId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { 200: ok },
        },
      },
    },
    webhooks: {
      petAdopted: {
        post: {
          tags: ['pets'],
          summary: 'A pet found a home',
          operationId: 'petAdopted',
          requestBody: json(ref('Pet')),
          responses: { 200: ok },
        },
      },
    },
    components: { schemas },
    ...extra,
  });
}

describe('OpenAPI 3.x completeness', () => {
  it('webhooks: listed in their own section by tag, shown with their body, without "Try it out!"', async () => {
    await openViewer(page, site.url, `{ spec: ${description()} }`);
    const section = page.locator('.qv-webhooks');
    await expect(section.locator('> h2').textContent()).resolves.toBe('Webhooks');
    await section.locator('.qv-tag-toggle', { hasText: /^pets$/ }).click();
    const op = section.locator('.qv-op.qv-post');
    await expect(op.locator('.qv-path').textContent()).resolves.toBe('petAdopted');
    await op.locator('.qv-op-head').click();
    await expect(op.locator('.qv-op-body').textContent()).resolves.toContain('Requests the API sends');
    await expect(op.locator('.qv-submit').count()).resolves.toBe(0);
    await expect(op.locator('textarea.qv-body-input').getAttribute('readonly')).resolves.toBe('');
    // The resources list is unchanged: the webhook is not a path of the "pets" tag.
    await page.locator('#resource_pets .qv-tag-toggle').click();
    await expect(page.locator('#resource_pets .qv-path').allTextContents()).resolves.toEqual(['/pets', '/birds']);
    // Search and deep links reach it.
    await page.locator('.qv-search').fill('adopted');
    await expect
      .poll(() => page.locator('.qv-op:visible .qv-path').allTextContents(), { timeout: 60_000 })
      .toEqual(['petAdopted']);
  });

  it('callbacks: shown inside the operation that registers them, read-only', async () => {
    await openViewer(page, site.url, `{ spec: ${description()} }`);
    const op = await expandOperation(page, 'events', 'post', '/subscriptions');
    await expect(op.locator('h4', { hasText: 'Callbacks' }).count()).resolves.toBe(1);
    const callback = op.locator('.qv-callback');
    await expect(callback.locator('h5').textContent()).resolves.toBe('onPetAdded');
    const inner = callback.locator('.qv-op.qv-post');
    await expect(inner.locator('.qv-path').textContent()).resolves.toBe('{$request.body#/callbackUrl}');
    await expect(inner.locator('.qv-summary').textContent()).resolves.toBe('A pet was added');
    await inner.locator('.qv-op-head').click();
    await expect(inner.locator('.qv-op-body').textContent()).resolves.toContain('Requests the API sends');
    await expect(inner.locator('.qv-submit').count()).resolves.toBe(0);
    await expect(op.locator('.qv-submit').count()).resolves.toBe(1); // the operation itself can be tried
    const ids = await page.locator('[id]').evaluateAll((els) => els.map((el) => el.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('links: each response link names its target operation and parameters; the target opens from it', async () => {
    await openViewer(page, site.url, `{ spec: ${description()} }`);
    const op = await expandOperation(page, 'users', 'get', '/users/{id}');
    const rows = op.locator('table.qv-links tbody tr');
    await expect(rows.count()).resolves.toBe(2);
    const address = rows.filter({ hasText: 'address' });
    await expect(address.locator('td').allTextContents()).resolves.toEqual([
      '200',
      'address',
      'GET /addresses/{addressId}',
      'addressId: $response.body#/addressId',
      'The address of this user',
    ]);
    await expect(address.locator('strong').textContent()).resolves.toBe('address'); // markdown
    await expect(rows.filter({ hasText: 'self' }).locator('a').textContent()).resolves.toBe('GET /users/{id}');
    await address.locator('a.qv-link-target').click();
    const target = page.locator('#operation-users-getAddress');
    // Opened as the click's handler renders it, not at once.
    await expect
      .poll(() => target.locator('.qv-op-head').getAttribute('aria-expanded'), { timeout: 60_000 })
      .toBe('true');
  });

  it('discriminator and oneOf: the property, which value selects which schema, and a matching example', async () => {
    await openViewer(page, site.url, `{ spec: ${description()}, defaultModelRendering: 'model' }`);
    const op = await expandOperation(page, 'pets', 'post', '/pets');
    const model = op.locator('.qv-schema-tabs').first();
    await expect(model.locator('.qv-discriminator').textContent()).resolves.toBe(
      'Discriminator: petType (cat → Cat, dog → Dog)',
    );
    await expect(model.locator('.qv-alternatives > li > .qv-selector').allTextContents()).resolves.toEqual([
      'petType: "cat"',
      'petType: "dog"',
    ]);
    await model.getByRole('tab', { name: 'Model Schema' }).click();
    const example = JSON.parse((await model.locator('.qv-example').textContent()) ?? '');
    expect(example).toEqual({ petType: 'cat', purrs: true });
    // allOf polymorphism: the subtype names itself in the base's discriminator property.
    const bird = await expandOperation(page, 'pets', 'get', '/birds');
    const birdModel = bird.locator('.qv-schema-tabs').first();
    await expect(birdModel.locator('.qv-props').textContent()).resolves.toContain(
      'kind (string, optional, Discriminator)',
    );
    await birdModel.getByRole('tab', { name: 'Model Schema' }).click();
    expect(JSON.parse((await birdModel.locator('.qv-example').textContent()) ?? '')).toEqual({
      kind: 'Bird',
      wings: 0,
    });
  });

  it('OpenID Connect: discovery document → authorize (code + PKCE) → token, then try-it sends it', async () => {
    const spec = JSON.stringify({
      openapi: '3.0.3',
      info: { title: 'oidc', version: '1' },
      servers: [{ url: auth.url }],
      paths: {
        '/api/me': {
          get: { tags: ['me'], security: [{ oidc: ['profile'] }], responses: { 200: { description: 'me' } } },
        },
      },
      components: {
        securitySchemes: {
          oidc: { type: 'openIdConnect', openIdConnectUrl: `${auth.url}/.well-known/openid-configuration` },
          broken: { type: 'openIdConnect', openIdConnectUrl: `${auth.url}/nowhere/openid-configuration` },
        },
      },
    });
    await openViewer(page, site.url, `{ spec: ${spec}, oauth2RedirectUrl: '${site.url}/viewer/o2c.html' }`);
    await page.locator('.qv-authorize').click();
    const form = page.locator('form.qv-auth-scheme[aria-label=oidc]');
    await expect(form.locator('.qv-scopes label').allTextContents()).resolves.toEqual(['openid', 'profile']);
    await form.getByLabel('Client ID').fill('oidc-client');
    const popup = page.waitForEvent('popup');
    await form.getByRole('button', { name: 'Authorize' }).click();
    await popup;
    await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
    const sent = provider.authorizations.at(-1)!;
    expect(sent.get('response_type')).toBe('code');
    expect(sent.get('scope')).toBe('openid profile');
    expect(sent.get('client_id')).toBe('oidc-client');
    expect(provider.exchanges.at(-1)).toMatchObject({ grant_type: 'authorization_code', client_id: 'oidc-client' });
    const op = await expandOperation(page, 'me', 'get', '/api/me');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
    expect(provider.apiCalls.at(-1)).toMatch(/^Bearer code-/);
    // A discovery document that cannot be read says so.
    const broken = page.locator('form.qv-auth-scheme[aria-label=broken]');
    await broken.getByRole('button', { name: 'Authorize' }).click();
    await broken
      .locator('.qv-auth-status', { hasText: 'The OpenID Connect configuration could not be read:' })
      .waitFor();
  });
});
