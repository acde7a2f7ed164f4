// The OneSky Platform API calls of the public clients (onesky-utils for Node, api-library-php5,
// onesky-ruby, onesky-python) that manage projects: project groups, project types, projects in
// groups, import-task lists, each sent the way its client sends it (JSON, a form, parameters in the
// query string, an empty or `[]` body), and what the client reads back. Unknown paths under /1 answer
// in OneSky's shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture, startQuotesServer } from './helpers.js';

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe.each(databaseKinds)('OneSky project management calls on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

  it('project types: a list of {code, name} with the codes clients look for', async () => {
    const answer = await client.get('/1/project-types');
    expect(answer.status).toBe(200);
    expect(answer.body.meta).toEqual({ status: 200, record_count: answer.body.data.length });
    const codes = answer.body.data.map((type: { code: string }) => type.code);
    expect(codes).toEqual(expect.arrayContaining(['ios', 'android', 'website', 'game-unity', 'itunes-metadata']));
    expect(codes.some((code: string) => code.endsWith('-others'))).toBe(true);
    expect(answer.body.data[0]).toEqual({ code: 'ios', name: 'iOS App' });
    // Signed like every route but the locales.
    expect((await client.call('GET', '/1/project-types', { auth: null })).status).toBe(401);
    // A base address ending in "/" (onesky-utils 1.4.1's) doubles the first slash: the same route.
    expect(await client.get('//1/project-types')).toMatchObject({ status: 200, body: answer.body });
  });

  it('project groups: create (JSON, form, query), list with paging links, show, languages, delete', async () => {
    // Ruby and PHP: JSON; the default base language is English.
    const created = await client.call('POST', '/1/project-groups', { json: { name: 'Travel Magazine' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      meta: { status: 201 },
      data: {
        id: expect.any(Number),
        name: 'Travel Magazine',
        base_language: {
          code: 'en-US',
          english_name: 'English (United States)',
          local_name: expect.any(String),
          locale: 'en',
          region: 'US',
        },
      },
    });
    // A form, as the request library and PHP's http_build_query send one.
    const viaForm = await client.call('POST', '/1/project-groups', {
      headers: FORM,
      body: form({ name: 'Fashion Magazine', locale: 'zh-TW' }),
    });
    expect(viaForm.status, viaForm.text).toBe(201);
    expect(viaForm.body.data.base_language.code).toBe('zh-TW');
    // Python: every parameter in the query string, no body.
    const viaQuery = await client.call('POST', '/1/project-groups?name=Blog&locale=ja');
    expect(viaQuery.status, viaQuery.text).toBe(201);
    expect(viaQuery.body.data).toMatchObject({ name: 'Blog', base_language: { code: 'ja-JP' } });

    const first = await client.get('/1/project-groups?per_page=2');
    expect(first.status).toBe(200);
    expect(first.body.meta).toEqual({
      status: 200,
      record_count: 3,
      page_count: 2,
      next_page: '/1/project-groups?page=2&per_page=2',
      prev_page: null,
      first_page: '/1/project-groups?page=1&per_page=2',
      last_page: '/1/project-groups?page=2&per_page=2',
    });
    expect(first.body.data).toEqual([
      { id: created.body.data.id, name: 'Travel Magazine' },
      { id: viaForm.body.data.id, name: 'Fashion Magazine' },
    ]);
    const second = await client.get('/1/project-groups?per_page=2&page=2');
    expect(second.body.data).toEqual([{ id: viaQuery.body.data.id, name: 'Blog' }]);
    expect(second.body.meta.prev_page).toBe('/1/project-groups?page=1&per_page=2');

    const id = created.body.data.id;
    const fresh = await client.get(`/1/project-groups/${id}`);
    expect(fresh.body).toMatchObject({
      meta: { status: 200 },
      data: { id, name: 'Travel Magazine', enabled_language_count: 1, project_count: 0 },
    });
    const languages = await client.get(`/1/project-groups/${id}/languages`);
    expect(languages.body.meta).toEqual({ status: 200, record_count: 1 });
    expect(languages.body.data).toEqual([expect.objectContaining({ code: 'en-US', is_base_language: true })]);

    // Another user sees none of it.
    const other = await Client.create(server.url);
    expect((await other.get('/1/project-groups')).body.meta.record_count).toBe(0);
    const hidden = await other.get(`/1/project-groups/${id}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ meta: { status: 404, message: `project group ${id} not found` }, data: {} });

    // Ruby deletes with a JSON content type and no body; PHP with a `[]` body.
    const ruby = await client.call('DELETE', `/1/project-groups/${viaForm.body.data.id}`, {
      headers: { 'content-type': 'application/json' },
    });
    expect(ruby.status, ruby.text).toBe(200);
    const php = await client.call('DELETE', `/1/project-groups/${viaQuery.body.data.id}`, { json: [] });
    expect(php.status, php.text).toBe(200);
    expect(php.body).toEqual({ meta: { status: 200 }, data: {} });
    expect((await client.get(`/1/project-groups/${viaQuery.body.data.id}`)).status).toBe(404);
    expect((await client.get('/1/project-groups')).body.meta.record_count).toBe(1);
  });

  it('a group refuses bad input in OneSky shape', async () => {
    const noName = await client.call('POST', '/1/project-groups', { json: {} });
    expect(noName.status).toBe(400);
    expect(noName.body.meta.message).toMatch(/name/);
    const badLocale = await client.call('POST', '/1/project-groups', { json: { name: 'x', locale: 'xx-YY' } });
    expect(badLocale.body).toEqual({
      meta: { status: 400, message: 'locale: unknown locale "xx-YY" (see GET /1/locales)' },
      data: {},
    });
    expect((await client.get('/1/project-groups/999999')).status).toBe(404);
    expect((await client.get('/1/project-groups/abc')).status).toBe(400);
  });

  it('projects in a group: create, list, show with the type, update, languages, deletion with the group', async () => {
    const group = (await client.call('POST', '/1/project-groups', { json: { name: 'Apps', locale: 'en' } })).body.data;
    // Ruby's create_project: JSON with the type, name and description.
    const created = await client.call('POST', `/1/project-groups/${group.id}/projects`, {
      json: { project_type: 'website', name: 'Company website', description: 'Words from company website' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      id: expect.any(Number),
      name: 'Company website',
      description: 'Words from company website',
      project_type: { code: 'website', name: 'Website' },
      project_group_id: group.id,
      base_language: { code: 'en-US' },
      target_languages: [],
      string_count: 0,
      word_count: 0,
    });
    // Python's project_create: the parameters in the query string; without a name the type names it.
    const unnamed = await client.call('POST', `/1/project-groups/${group.id}/projects?project_type=game-unity`);
    expect(unnamed.status, unnamed.text).toBe(201);
    expect(unnamed.body.data).toMatchObject({
      name: 'Unity Game',
      description: '',
      project_type: { code: 'game-unity' },
    });

    const list = await client.get(`/1/project-groups/${group.id}/projects`);
    expect(list.body).toEqual({
      meta: { status: 200, record_count: 2 },
      data: [
        { id: created.body.data.id, name: 'Company website' },
        { id: unnamed.body.data.id, name: 'Unity Game' },
      ],
    });

    const id = created.body.data.id;
    // PHP's update: PUT with JSON; Python's: PUT with the query string.
    const updated = await client.call('PUT', `/1/projects/${id}`, { json: { name: 'Website', description: 'New' } });
    expect(updated.status, updated.text).toBe(200);
    const viaQuery = await client.call('PUT', `/1/projects/${id}?description=From%20Python`);
    expect(viaQuery.status, viaQuery.text).toBe(200);
    const shown = await client.get(`/1/projects/${id}`);
    expect(shown.body.data).toMatchObject({
      id,
      name: 'Website',
      description: 'From Python',
      project_type: { code: 'website', name: 'Website' },
    });

    // A translation upload adds its language to the project and to the group.
    const base = await client.importFile(id, 'app.json', fixture('app.json'), 'HIERARCHICAL_JSON');
    expect(base.status).toBe('completed');
    const german = await client.importFile(id, 'app.json', fixture('app.de.json'), 'HIERARCHICAL_JSON', {
      locale: 'de',
    });
    expect(german.status).toBe('completed');
    const languages = await client.get(`/1/projects/${id}/languages`);
    expect(languages.body.data.map((l: { code: string }) => l.code)).toEqual(['en-US', 'de-DE']);
    const groupLanguages = await client.get(`/1/project-groups/${group.id}/languages`);
    expect(
      groupLanguages.body.data.map((l: { code: string; is_base_language: boolean }) => [l.code, l.is_base_language]),
    ).toEqual([
      ['en-US', true],
      ['de-DE', false],
    ]);
    expect((await client.get(`/1/project-groups/${group.id}`)).body.data).toMatchObject({
      enabled_language_count: 2,
      project_count: 2,
    });

    // Deleting the group deletes its projects.
    expect((await client.call('DELETE', `/1/project-groups/${group.id}`)).status).toBe(200);
    expect((await client.get(`/1/projects/${id}`)).status).toBe(404);
  });

  it('project creation refuses a missing or unknown type, and works outside groups with a type', async () => {
    const group = (await client.call('POST', '/1/project-groups', { json: { name: 'G' } })).body.data;
    const missing = await client.call('POST', `/1/project-groups/${group.id}/projects`, { json: { name: 'x' } });
    expect(missing.status).toBe(400);
    expect(missing.body.meta.message).toMatch(/project_type/);
    const unknown = await client.call('POST', `/1/project-groups/${group.id}/projects`, {
      json: { project_type: 'spaceship' },
    });
    expect(unknown.body).toEqual({
      meta: { status: 400, message: 'project_type: unknown project type "spaceship" (see GET /1/project-types)' },
      data: {},
    });
    expect(
      (await client.call('POST', '/1/project-groups/999999/projects', { json: { project_type: 'ios' } })).status,
    ).toBe(404);
    const loose = await client.call('POST', '/1/projects', { json: { name: 'loose', project_type: 'ios' } });
    expect(loose.body.data).toMatchObject({ project_type: { code: 'ios' }, project_group_id: null });
    const untyped = await client.call('POST', '/1/projects', { json: { name: 'untyped' } });
    expect(untyped.body.data).toMatchObject({ project_type: null, project_group_id: null });
  });

  it('import tasks: the list, newest first, paged and filtered by status; also with a trailing slash', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    const good = await client.importFile(project, 'app.json', fixture('app.json'), 'HIERARCHICAL_JSON');
    const bad = await client.importFile(project, 'broken.json', '{"a": ', 'HIERARCHICAL_JSON');
    expect([good.status, bad.status]).toEqual(['completed', 'failed']);

    const list = await client.get(`/1/projects/${project}/import-tasks`);
    expect(list.status).toBe(200);
    expect(list.body.meta).toMatchObject({ status: 200, record_count: 2, page_count: 1 });
    expect(list.body.data).toEqual([
      {
        id: bad.id,
        file: { name: 'broken.json' },
        status: 'failed',
        created_at: expect.stringMatching(TIME),
        created_at_timestamp: expect.any(Number),
      },
      {
        id: good.id,
        file: { name: 'app.json' },
        status: 'completed',
        created_at: expect.stringMatching(TIME),
        created_at_timestamp: expect.any(Number),
      },
    ]);
    const failed = await client.get(`/1/projects/${project}/import-tasks?status=failed`);
    expect(failed.body.data.map((task: { id: number }) => task.id)).toEqual([bad.id]);
    expect((await client.get(`/1/projects/${project}/import-tasks?status=in-progress`)).body.data).toEqual([]);
    const paged = await client.get(`/1/projects/${project}/import-tasks?per_page=1&page=2`);
    expect(paged.body.data.map((task: { id: number }) => task.id)).toEqual([good.id]);
    expect(paged.body.meta.prev_page).toBe(`/1/projects/${project}/import-tasks?page=1&per_page=1&status=all`);
    // PHP's client asks for `/import-tasks/`.
    const php = await client.get(`/1/projects/${project}/import-tasks/`);
    expect(php.body.data).toEqual(list.body.data);
    const badStatus = await client.get(`/1/projects/${project}/import-tasks?status=done`);
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.meta.message).toMatch(/^status: /);
  });

  it('a file is deleted by file_name in the query (Ruby, Python) or in a JSON body (PHP)', async () => {
    const project = await client.createProject('en-US', []);
    await client.importFile(project, 'a.json', '{"a": "A"}', 'HIERARCHICAL_JSON');
    await client.importFile(project, 'b.json', '{"b": "B"}', 'HIERARCHICAL_JSON');
    const byQuery = await client.call('DELETE', `/1/projects/${project}/files?file_name=a.json`);
    expect(byQuery.body).toEqual({ meta: { status: 200 }, data: { name: 'a.json' } });
    const byBody = await client.call('DELETE', `/1/projects/${project}/files`, { json: { file_name: 'b.json' } });
    expect(byBody.body).toEqual({ meta: { status: 200 }, data: { name: 'b.json' } });
    expect((await client.get(`/1/projects/${project}/files`)).body.data).toEqual([]);
    const none = await client.call('DELETE', `/1/projects/${project}/files`, { json: [] });
    expect(none.status).toBe(400);
    expect(none.body.meta.message).toMatch(/file_name/);
  });

  it('orders and quotations take a form too (booleans as 1/0, lists as files[])', async () => {
    const project = await client.createProject('en-US', ['de-DE']);
    await client.importFile(project, 'app.json', fixture('app.json'), 'HIERARCHICAL_JSON');
    const body = new URLSearchParams([
      ['files[]', 'app.json'],
      ['to_locale', 'de-DE'],
      ['is_including_outdated', '0'],
      ['order_type', 'translate-review'],
    ]).toString();
    const order = await client.call('POST', `/1/projects/${project}/orders`, { headers: FORM, body });
    expect(order.status, order.text).toBe(201);
    expect(order.body.data).toMatchObject({
      files: [{ name: 'app.json' }],
      order_type: 'translate-review',
      string_count: 5,
    });
  });

  it('every path under /1 without a route answers 404 in OneSky shape, whatever the body', async () => {
    for (const [method, path, headers, body] of [
      ['GET', '/1/projects/1/no-such-thing', {}, undefined],
      ['POST', '/1/feedbacks', FORM, 'a=1&b[c]=2'],
      ['PATCH', '/1/projects/1', { 'content-type': 'application/json' }, '{"name":"x"}'],
      ['DELETE', '/1/project-groups/1/projects/2', {}, undefined],
    ] as const) {
      const answer = await request(`${server.url}${path}`, method, { headers, body });
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(answer.body).toEqual({ meta: { status: 404, message: `No route ${method} ${path}` }, data: {} });
    }
    // An upload to an unknown path is answered without being read.
    const upload = new FormData();
    upload.append('file', new Blob(['x'.repeat(100_000)]), 'a.po');
    const unread = await request(`${server.url}/1/projects/1/uploads`, 'POST', { body: upload });
    expect(unread.body).toEqual({ meta: { status: 404, message: 'No route POST /1/projects/1/uploads' }, data: {} });
    // A form body that cannot be read is still an error in OneSky's shape.
    const bad = await request(`${server.url}/1/project-groups`, 'POST', { headers: FORM, body: 'name=%zz' });
    expect(bad.status).toBe(400);
    expect(bad.body.meta).toEqual({ status: 400, message: expect.stringMatching(/percent-encoding/) });
  });

  it('/openapi/quotes.json: no alias or catch-all of its own, and the bodies each route reads', async () => {
    // (quotations.test.ts checks that every route is described.)
    const document = (await request(`${server.url}/openapi/quotes.json`)).body;
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    // The trailing-slash alias and the 404 catch-all are not routes of their own.
    expect(operations.filter((op) => op.includes('import-tasks/') && !op.includes('{import_id}'))).toEqual([]);
    expect(operations.some((op) => op.includes('{path}'))).toBe(false);
    const screenshots = document.paths['/1/projects/{project_id}/screenshots'].post;
    expect(Object.keys(screenshots.requestBody.content)).toEqual([
      'application/json',
      'application/x-www-form-urlencoded',
    ]);
  });
});
