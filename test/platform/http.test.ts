import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../src/http/logging.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** A browser's preflight for a POST from `origin` that will send `headers`. */
const preflight = (url: string, origin: string, headers: string) =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': headers },
  });

describe('HTTP plumbing', () => {
  let server: TestServer;
  let restricted: TestServer;
  const logLines: string[] = [];
  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    server = await startTestServer('sqlite', { logger: { ...(loggerOptions('info') as object), stream } });
    restricted = await startTestServer('sqlite', {
      env: { CORS_ORIGINS: 'https://allowed.example', SERVICES: 'tasks,docs' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await restricted?.close();
  });

  it('answers a CORS preflight with the methods and every requested header, custom api-key ones too', async () => {
    const response = await preflight(
      `${server.url}/api/tasks/create`,
      'https://viewer.example',
      'content-type, authorization, x-my-api-key',
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    for (const method of ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS']) {
      expect(response.headers.get('access-control-allow-methods')).toContain(method);
    }
    const allowed = response.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const header of ['content-type', 'authorization', 'x-my-api-key']) expect(allowed).toContain(header);
    expect(response.headers.get('access-control-max-age')).toBe('600');
    expect(response.headers.get('vary')).toBe('Origin, Access-Control-Request-Headers');
    expect(response.headers.get('content-length')).toBe('0');
  });

  it('answers a preflight to the proxy node before it asks for a key', async () => {
    const response = await preflight(
      `${server.url}/v1/chat/completions`,
      'https://chat.example',
      'authorization, x-cashu',
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization, x-cashu');
    expect(response.headers.get('access-control-expose-headers')).toContain('X-Cashu');
  });

  it('says that answers vary by Origin even to a request without one, and adds no CORS headers to it', async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.headers.get('vary')).toBe('Origin');
    expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('puts the three CORS headers on simple responses too', async () => {
    const response = await fetch(`${server.url}/healthz`, { headers: { Origin: 'https://viewer.example' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toBeTruthy();
    expect(response.headers.get('access-control-allow-headers')).toBeTruthy();
    expect(response.headers.get('access-control-expose-headers')).toBe(
      '*, X-Request-Id, X-Cashu, Retry-After, Content-Disposition',
    );
  });

  it('allows only configured origins when CORS_ORIGINS lists them', async () => {
    const good = await fetch(`${restricted.url}/healthz`, { headers: { Origin: 'https://allowed.example' } });
    expect(good.headers.get('access-control-allow-origin')).toBe('https://allowed.example');
    expect(good.headers.get('vary')).toMatch(/Origin/);
    const bad = await fetch(`${restricted.url}/healthz`, { headers: { Origin: 'https://evil.example' } });
    expect(bad.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${restricted.url}/healthz`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("answers unknown local paths with 404 in each area's error shape, never forwarding them", async () => {
    const api = await fetch(`${server.url}/api/nothing/here`);
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await api.json()).toMatchObject({ status: 404, title: 'Not Found' });
    const onesky = await fetch(`${server.url}/1/nothing`, { method: 'POST' });
    expect(onesky.status).toBe(404);
    expect(await onesky.json()).toEqual({ meta: { status: 404, message: 'No route POST /1/nothing' }, data: {} });
    for (const path of ['/openapi/nothing.json', '/docs/no/such/file.js', '/api']) {
      expect((await fetch(`${server.url}${path}`)).status).toBe(404);
    }
  });

  it("refuses a body over BODY_LIMIT with 413, and malformed JSON with 400, in the area's shape", async () => {
    const huge = JSON.stringify({ first_name: 'x'.repeat(server.config.bodyLimit + 10) });
    const tooLarge = await fetch(`${server.url}/api/users/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: huge,
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await tooLarge.json()).toMatchObject({ status: 413, detail: 'Request body is too large' });
    const malformed = await fetch(`${server.url}/api/users/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email": ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ status: 400, title: 'Bad Request' });
  });

  it('mounts only the services SERVICES names', async () => {
    expect((await fetch(`${restricted.url}/openapi/proxy.json`)).status).toBe(404);
    expect((await fetch(`${restricted.url}/v1/wallet/`)).status).toBe(404);
    expect((await fetch(`${restricted.url}/openapi/tasks.json`)).status).toBe(200);
    const index = await (await fetch(`${restricted.url}/openapi/`)).json();
    expect(index.descriptions.map((d: { name: string }) => d.name)).toEqual(['tasks']);
  });

  it("publishes an OpenAPI 3.1.0 document per mounted service; the proxy node's is version 0.0.1", async () => {
    const index = await (await fetch(`${server.url}/openapi/`)).json();
    expect(index.descriptions.map((d: { name: string }) => d.name).sort()).toEqual(['proxy', 'quotes', 'tasks']);
    for (const { url } of index.descriptions) {
      const doc = await (await fetch(`${server.url}${url}`)).json();
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.title).toBeTruthy();
      expect(doc.paths).toBeTypeOf('object');
    }
    const proxy = await (await fetch(`${server.url}/openapi/proxy.json`)).json();
    expect(proxy.info.version).toBe('0.0.1');
  });

  it('gives every response a request id, keeping a sane incoming one', async () => {
    const fresh = await fetch(`${server.url}/healthz`);
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const refused = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'bad id <script>' } });
    expect(refused.headers.get('x-request-id')).not.toContain('<');
  });

  it('serves Prometheus metrics that count requests by route pattern', async () => {
    await fetch(`${server.url}/healthz`);
    const response = await fetch(`${server.url}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toMatch(/# TYPE http_requests_total counter/);
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(text).toMatch(/http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/healthz"\} \d+/);
  });

  it('counts each answer once: by status, and in a cumulative duration histogram whose count is theirs', async () => {
    const value = (text: string, line: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(line + ' '))
          ?.split(' ')[1] ?? 0,
      );
    const scrape = async () => (await fetch(`${server.url}/metrics`)).text();
    const before = await scrape();
    for (let i = 0; i < 5; i++) await fetch(`${server.url}/healthz`);
    const after = await scrape();
    const ok = 'http_requests_total{method="GET",route="/healthz",status="200"}';
    expect(value(after, ok) - value(before, ok)).toBe(5);
    const series = 'method="GET",route="/healthz"';
    const count = value(after, `http_request_duration_seconds_count{${series}}`);
    expect(count).toBe(value(after, ok));
    expect(value(after, `http_request_duration_seconds_bucket{le="+Inf",${series}}`)).toBe(count);
    const buckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30].map((le) =>
      value(after, `http_request_duration_seconds_bucket{le="${le}",${series}}`),
    );
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
    expect(buckets[8]).toBeLessThanOrEqual(count);
    expect(value(after, `http_request_duration_seconds_sum{${series}}`)).toBeGreaterThan(0);
  });

  it('keeps credentials out of the logs', async () => {
    const secrets = ['sk-topsecretkey0000', 'cashuBsecrettoken1111', 'devhashsecret2222', 'hunter2-password-3333'];
    await fetch(`${server.url}/healthz?ecash_token=${secrets[1]}&dev_hash=${secrets[2]}&page=1`, {
      headers: { Authorization: `Bearer ${secrets[0]}`, 'X-Cashu': secrets[1], Cookie: `session=${secrets[3]}` },
    });
    await fetch(`${server.url}/api/nothing?password=${secrets[3]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: secrets[3] }),
    });
    const log = logLines.join('');
    expect(log).toContain('/healthz?ecash_token=[REDACTED]&dev_hash=[REDACTED]&page=1');
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
