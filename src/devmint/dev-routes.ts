// Dev-only routes under /dev (no NUT): pay quotes, script Lightning, switch faults, hand out
// tokens. They are how a `quartet dev-mint` process is driven from outside.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { unitToMsat } from '../cashu/index.js';
import { Codes } from './errors.js';
import type { Faults } from './faults.js';
import { keysetView } from './routes.js';
import { FailNextBody, FaultsBody, IdParams, InvoiceBody, ReleaseBody, RotateBody, TokenBody } from './schemas.js';
import type { MintCore } from './server.js';

export function registerDevRoutes(server: FastifyInstance, core: MintCore, faults: Faults) {
  const app = server.withTypeProvider<TypeBoxTypeProvider>();
  const { ledger, mintQuotes, lightning } = core;
  app.get('/dev/faults', async () => faults.current);
  app.post('/dev/faults', { schema: { body: FaultsBody } }, async (request, reply) => {
    if (request.body.down && !request.body.forMs) {
      return reply
        .code(400)
        .send({ detail: 'down needs forMs over HTTP, or nothing could switch it off again', code: Codes.generic });
    }
    // Answer first: going down closes this very connection.
    reply.send(faults.current);
    await reply;
    await faults.set(request.body);
    return reply;
  });
  app.delete('/dev/faults', async () => {
    await faults.clear();
    return faults.current;
  });
  app.get('/dev/swaps/held', async () => ({ held: faults.heldSwaps }));
  app.post('/dev/swaps/release', { schema: { body: ReleaseBody } }, async (request) => ({
    released: faults.releaseSwaps(request.body?.drop ? 'drop' : 'perform'),
  }));
  app.post('/dev/quotes/:id/pay', { schema: { params: IdParams } }, async (request) =>
    mintQuotes.pay(request.params.id),
  );
  app.post('/dev/melts/fail-next', { schema: { body: FailNextBody } }, async (request) => {
    lightning.failNextPayment(request.body?.detail);
    return { ok: true };
  });
  app.post('/dev/invoices', { schema: { body: InvoiceBody } }, async (request) => ({
    request: lightning.createInvoice(unitToMsat(request.body.amount, ledger.unit)).request,
    amount: request.body.amount,
    unit: ledger.unit,
  }));
  app.post('/dev/tokens', { schema: { body: TokenBody } }, async (request) => ({
    token: await core.mintToken(request.body.amount),
    amount: request.body.amount,
    unit: ledger.unit,
  }));
  app.post('/dev/keysets/rotate', { schema: { body: RotateBody } }, async (request) =>
    keysetView(core, ledger.rotateKeyset(request.body?.input_fee_ppk).id),
  );
}
