// Dev-only routes under /dev (no NUT): pay quotes, script Lightning, switch faults, hand out
// tokens. They are how a `quartet dev-mint` process is driven from outside.
import type { FastifyInstance } from 'fastify';
import { unitToMsat } from '../cashu/index.js';
import { Codes } from './errors.js';
import type { FaultChange, Faults } from './faults.js';
import { MAX_AMOUNT } from './quotes.js';
import { keysetView } from './routes.js';
import { body, idParam } from './schemas.js';
import type { MintCore } from './server.js';

export function registerDevRoutes(app: FastifyInstance, core: MintCore, faults: Faults) {
  const { ledger, mintQuotes, lightning } = core;
  app.get('/dev/faults', async () => faults.current);
  app.post<{ Body: FaultChange }>(
    '/dev/faults',
    {
      schema: body(
        {
          down: { type: 'boolean' },
          delayMs: { type: 'integer', minimum: 0 },
          failSwaps: { type: 'boolean' },
          holdSwaps: { type: 'boolean' },
          dropSwaps: { type: 'boolean' },
          loseSwapResponses: { type: 'boolean' },
          lie: { type: 'boolean' },
          noRestore: { type: 'boolean' },
          forMs: { type: 'integer', minimum: 1 },
        },
        [],
      ),
    },
    async (request, reply) => {
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
    },
  );
  app.delete('/dev/faults', async () => {
    await faults.clear();
    return faults.current;
  });
  app.get('/dev/swaps/held', async () => ({ held: faults.heldSwaps }));
  app.post<{ Body: { drop?: boolean } }>(
    '/dev/swaps/release',
    { schema: body({ drop: { type: 'boolean' } }, []) },
    async (request) => ({
      released: faults.releaseSwaps(request.body?.drop ? 'drop' : 'perform'),
    }),
  );
  app.post<{ Params: { id: string } }>('/dev/quotes/:id/pay', { schema: { params: idParam } }, async (request) =>
    mintQuotes.pay(request.params.id),
  );
  app.post<{ Body: { detail?: string } }>(
    '/dev/melts/fail-next',
    { schema: body({ detail: { type: 'string' } }, []) },
    async (request) => {
      lightning.failNextPayment(request.body?.detail);
      return { ok: true };
    },
  );
  app.post<{ Body: { amount: number } }>(
    '/dev/invoices',
    { schema: body({ amount: { type: 'integer', minimum: 1 } }, ['amount']) },
    async (request) => {
      return {
        request: lightning.createInvoice(unitToMsat(request.body.amount, ledger.unit)).request,
        amount: request.body.amount,
        unit: ledger.unit,
      };
    },
  );
  app.post<{ Body: { amount: number } }>(
    '/dev/tokens',
    { schema: body({ amount: { type: 'integer', minimum: 1, maximum: MAX_AMOUNT } }, ['amount']) },
    async (request) => ({
      token: await core.mintToken(request.body.amount),
      amount: request.body.amount,
      unit: ledger.unit,
    }),
  );
  app.post<{ Body: { input_fee_ppk?: number } }>(
    '/dev/keysets/rotate',
    { schema: body({ input_fee_ppk: { type: 'integer', minimum: 0 } }, []) },
    async (request) => keysetView(core, ledger.rotateKeyset(request.body?.input_fee_ppk).id),
  );
}
