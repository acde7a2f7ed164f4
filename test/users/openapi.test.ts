// /openapi/tasks.json describes every route, parameter and error of the service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksServer, type TestServer } from './helpers.js';

const ROUTES: [method: string, path: string, params: string[]][] = [
  ['post', '/api/users/register', ['first_name', 'last_name', 'email', 'password', 'username']],
  ['post', '/api/users/login', ['email', 'password']],
  ['post', '/api/users/logout', []],
  ['delete', '/api/users/delete', ['id']],
  ['post', '/api/users/forgotpassword/request', ['email']],
  ['put', '/api/users/forgotpassword', ['email', 'password', 'token', 'current_password']],
  ['put', '/api/users/update', ['email', 'password', 'photo']],
  ['get', '/api/users/all', ['page', 'limit']],
  ['get', '/api/users/find', ['id']],
  ['get', '/api/users/getimage', ['email']],
  ['post', '/api/users/apikeys', ['name']],
  ['get', '/api/users/apikeys', []],
  ['delete', '/api/users/apikeys', ['api_key']],
  ['post', '/api/tasks/create', ['title', 'description', 'user']],
  ['get', '/api/tasks', ['page', 'limit', 'done', 'user']],
  ['get', '/api/tasks/{id}', ['id']],
  ['patch', '/api/tasks/{id}', ['id', 'title', 'description', 'done']],
  ['delete', '/api/tasks/delete', ['id']],
];

describe('the OpenAPI description', () => {
  let server: TestServer;
  let doc: any;
  beforeAll(async () => {
    server = await startTasksServer('sqlite');
    doc = await (await fetch(`${server.url}/openapi/tasks.json`)).json();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is OpenAPI 3.1 with a bearer scheme and exactly the service routes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const listed = Object.entries(doc.paths).flatMap(([path, ops]: [string, any]) =>
      Object.keys(ops).map((method) => `${method} ${path}`),
    );
    expect(listed.sort()).toEqual(ROUTES.map(([method, path]) => `${method} ${path}`).sort());
  });

  it.each(ROUTES)('%s %s: summary, parameters and problem+json errors', (method, path, params) => {
    const op = doc.paths[path][method];
    expect(op.summary).toBeTruthy();
    expect(op.tags?.length).toBeGreaterThan(0);
    const named = new Set<string>((op.parameters ?? []).map((p: any) => p.name));
    for (const content of Object.values<any>(op.requestBody?.content ?? {})) {
      for (const name of Object.keys(content.schema.properties ?? {})) named.add(name);
    }
    for (const param of params) expect([...named], param).toContain(param);
    const errorStatuses = Object.keys(op.responses).filter((status) => status >= '400');
    expect(errorStatuses.length).toBeGreaterThan(0);
    for (const status of errorStatuses) {
      expect(op.responses[status].description).toBeTruthy();
      expect(op.responses[status].content['application/problem+json'].schema.properties).toHaveProperty('detail');
    }
    const success = Object.keys(op.responses).filter((status) => status < '300');
    expect(success).toHaveLength(1);
    if (op.security) expect(errorStatuses).toContain('401');
  });
});
