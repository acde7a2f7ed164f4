// The proxy's background loops outlive a PostgreSQL outage: their passes fail while the database
// is away (logged, never unhandled) and the next ones work once it is back. Here the expiry
// refunds, on the node's own timer: a key expired after the outage is paid to its address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { postgresAvailable } from '../support/databases.js';
import { bringBack, pause, takeDown, timeUntil } from '../support/outage.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startLnurlServer, type LnurlServer } from './lnurl-server.js';
import { bearer, call, info } from './wallet-helpers.js';
import { accountId, expireAccount } from './wallet-node.js';

describe.runIf(postgresAvailable)('proxy loops across a PostgreSQL outage', () => {
  let mint: DevMint;
  let lnurl: LnurlServer;
  let server: TestServer;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', port: 0 });
    lnurl = await startLnurlServer(mint);
    server = await startTestServer('postgres', {
      env: {
        SERVICES: 'proxy',
        PROXY_MINTS: mint.url,
        PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true',
        PROXY_RECOVERY_INTERVAL_MS: '200',
        PROXY_EXPIRY_REFUND_INTERVAL_MS: '200',
      },
    });
  });
  afterAll(async () => {
    if (server) await bringBack(server.database).catch(() => {});
    await server?.close();
    await lnurl?.close();
    await mint?.close();
  });

  it('refunds an expired key on the node’s own timer after the database was away', async () => {
    // Passes run (and fail) every 200 ms while the database is away.
    await takeDown(server.database);
    await pause(2000);
    await bringBack(server.database);
    await timeUntil('ready', async () => (await call(server.url, 'GET', '/readyz', {})).status === 200);

    const opened = await call(server.url, 'GET', '/v1/balance/info', {
      ...bearer(await mint.mintToken(100)),
      'key-expiry-time': String(Math.floor(Date.now() / 1000) + 3600),
      'refund-lnurl': lnurl.address,
    });
    expect(opened.status).toBe(200);
    const key = opened.body.api_key as string;
    await expireAccount(server, key);

    // The loop, not the test, pays it: 99 sats to the address, the 1-sat fee reserve left.
    await timeUntil('refunded', async () => (await info(server.url, key)).body.balance === 1_000);
    const payments = await server.db.kysely
      .selectFrom('proxy_lightning_payments')
      .select(['status', 'amount_msat'])
      .where('account_id', '=', await accountId(server, key))
      .execute();
    expect(payments).toEqual([{ status: 'paid', amount_msat: 99_000 }]);
  }, 60_000);
});
