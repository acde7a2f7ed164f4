import { describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';

describe.each(databaseKinds)('health and readiness on %s', (kind) => {
  let server: TestServer;
  openForSuite(
    () => startTestServer(kind),
    (opened) => (server = opened),
  );

  it('answers /healthz and /readyz', async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', database: kind });
  });
});
