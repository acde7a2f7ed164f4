// Answers given before the request body was read reach a client that is still sending it (issue
// 27): Node's fetch (undici) writes the whole body and read the answer only after, so a server that
// closed with the body unread reset the connection and the client saw EPIPE instead of the 413.
// The server runs in its own process: in the test's process, client and server share one event
// loop and the race does not show.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveInTempDir, waitForHttp } from '../support/process.js';

const TRIES = 100;
/** The other early answers take the same path out; fewer tries keep the suite short. */
const FEW_TRIES = 20;
/** Tries in flight at once (each on its own connection). */
const PARALLEL = 4;
const FIVE_MB = 'x'.repeat(5 * 1024 * 1024);

/** How `tries` tries ended: by status, or by the error code fetch failed with. */
async function outcomes(url: string, init: RequestInit, tries: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const one = async () => {
    let outcome: string;
    try {
      const response = await fetch(url, init);
      await response.arrayBuffer();
      outcome = String(response.status);
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      outcome = cause?.code ?? String(error);
    }
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  };
  for (let done = 0; done < tries; done += PARALLEL) {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, tries - done) }, one));
  }
  return counts;
}

describe('early answers to a 5 MB body', { timeout: 180_000 }, () => {
  let served: Awaited<ReturnType<typeof serveInTempDir>>;
  let base: string;
  beforeAll(async () => {
    served = await serveInTempDir({ CORS_ORIGINS: 'https://allowed.example' });
    base = `http://127.0.0.1:${served.port}`;
    await waitForHttp(`${base}/healthz`);
  });
  afterAll(() => served?.stop());

  const json = { 'content-type': 'application/json' };
  it.each([
    ['the proxy node', '/v1/wallet/topup'],
    ['the users and tasks API', '/api/users/register'],
    ['the quotation API', '/1/projects'],
    ['the OpenAPI documents', '/openapi/proxy.json'],
  ])(`%s: POST %s is read as 413 in ${TRIES} tries of ${TRIES}`, async (_service, path) => {
    const init = { method: 'POST', headers: json, body: FIVE_MB };
    expect(await outcomes(`${base}${path}`, init, TRIES)).toEqual({ 413: TRIES });
  });

  it.each([
    ['401, a bad bearer token', 'POST', '/1/projects', { ...json, authorization: 'Bearer nonsense' }, 401],
    ['404, an upload to no route', 'POST', '/1/nothing', { 'content-type': 'multipart/form-data; boundary=x' }, 404],
    ['405, an unknown method', 'PROPFIND', '/api/users/register', json, 405],
    ['415, an unknown content type', 'POST', '/api/users/register', { 'content-type': 'text/x-unknown' }, 415],
    [
      '403, a refused preflight',
      'OPTIONS',
      '/api/tasks/create',
      { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      403,
    ],
  ])('%s, is read every time', async (_what, method, path, headers, status) => {
    const init = { method, headers, body: FIVE_MB };
    expect(await outcomes(`${base}${path}`, init, FEW_TRIES)).toEqual({ [status]: FEW_TRIES });
  });
});
