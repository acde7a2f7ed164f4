// The NUT routes under /v1 (NUT-01 … 09, 12, 23), with the swap faults.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { KeysetEntry } from '../cashu/index.js';
import { Codes } from './errors.js';
import type { Faults } from './faults.js';
import { MAX_AMOUNT } from './quotes.js';
import {
  CheckStateBody,
  IdParams,
  MeltBody,
  MeltQuoteBody,
  MintBody,
  MintQuoteBody,
  RestoreBody,
  SwapBody,
} from './schemas.js';
import type { MintCore } from './server.js';
import { swap } from './swap.js';

export const LABEL = 'DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE';
export const VERSION = 'quartet-devmint/0.0.1';

export function keysetView(core: MintCore, id: string): KeysetEntry {
  const keyset = core.ledger.keyset(id);
  return {
    id: keyset.id,
    unit: keyset.unit,
    active: keyset.active,
    input_fee_ppk: keyset.inputFeePpk,
    final_expiry: null,
  };
}

export function registerNutRoutes(server: FastifyInstance, core: MintCore, faults: Faults, changed: () => void) {
  const app = server.withTypeProvider<TypeBoxTypeProvider>();
  const { ledger, mintQuotes, melts } = core;
  const method = { method: 'bolt11', unit: ledger.unit, min_amount: 1, max_amount: MAX_AMOUNT };

  app.get('/v1/info', async () => ({
    name: `quartet dev mint (${LABEL})`,
    version: VERSION,
    description:
      'A Cashu mint for development and tests with a fake Lightning backend. ' +
      `${LABEL}: its ecash is worth nothing.`,
    description_long:
      'Invoices are fake and settle on demand (POST /dev/quotes/{id}/pay); melts "pay" nothing. ' +
      'Never send real funds here.',
    motd: LABEL,
    urls: [core.url()],
    time: Math.floor(Date.now() / 1000),
    nuts: {
      '4': { methods: [{ ...method, options: { description: false } }], disabled: false },
      '5': { methods: [{ ...method, options: { amountless: false } }], disabled: false },
      '7': { supported: true },
      '8': { supported: true },
      '9': { supported: !faults.current.noRestore },
      '12': { supported: true },
    },
  }));

  app.get('/v1/keys', async () => ({
    keysets: [...ledger.keysets.values()]
      .filter((k) => k.active)
      .map((k) => ({ ...keysetView(core, k.id), keys: k.keys })),
  }));
  app.get('/v1/keys/:id', { schema: { params: IdParams } }, async (request) => {
    const keyset = ledger.keyset(request.params.id);
    return { keysets: [{ ...keysetView(core, keyset.id), keys: keyset.keys }] };
  });
  app.get('/v1/keysets', async () => ({ keysets: [...ledger.keysets.keys()].map((id) => keysetView(core, id)) }));

  app.post('/v1/swap', { schema: { body: SwapBody } }, async (request, reply) => {
    if (faults.current.holdSwaps && (await faults.holdSwap()) === 'drop') return hangUp(reply);
    const { failSwaps, dropSwaps, loseSwapResponses } = faults.current;
    if (failSwaps) return reply.code(500).send({ detail: 'dev mint fault: failSwaps', code: Codes.generic });
    if (dropSwaps) return hangUp(reply);
    const answer = swap(ledger, request.body);
    if (loseSwapResponses) {
      changed();
      return hangUp(reply);
    }
    return answer;
  });

  app.post('/v1/mint/quote/bolt11', { schema: { body: MintQuoteBody } }, async (request) =>
    mintQuotes.create(request.body),
  );
  app.get('/v1/mint/quote/bolt11/:id', { schema: { params: IdParams } }, async (request) =>
    mintQuotes.view(mintQuotes.get(request.params.id)),
  );
  app.post('/v1/mint/bolt11', { schema: { body: MintBody } }, async (request, reply) => {
    const signatures = mintQuotes.mint(request.body.quote, request.body.outputs);
    if (faults.current.loseMintResponses) {
      changed();
      return hangUp(reply);
    }
    return { signatures };
  });

  app.post('/v1/melt/quote/bolt11', { schema: { body: MeltQuoteBody } }, async (request) =>
    meltView(melts.create(request.body)),
  );
  app.get('/v1/melt/quote/bolt11/:id', { schema: { params: IdParams } }, async (request) =>
    meltView(melts.get(request.params.id)),
  );
  app.post('/v1/melt/bolt11', { schema: { body: MeltBody } }, async (request, reply) => {
    if (faults.takeMeltRefusal()) {
      const quote = melts.get(request.body.quote);
      const provided = request.body.inputs.reduce((sum, p) => sum + p.amount, 0);
      const needed = quote.amount + quote.fee_reserve + 1;
      const wanted = Math.max(needed, provided + 1);
      const detail = `not enough inputs provided for melt. Provided: ${provided}, needed: ${wanted}`;
      return reply.code(400).send({ detail, code: 11000 });
    }
    const answer = meltView(await melts.melt(request.body.quote, request.body.inputs, request.body.outputs ?? []));
    if (faults.current.loseMeltResponses) {
      changed();
      return hangUp(reply);
    }
    return answer;
  });

  app.post(
    '/v1/restore',
    {
      schema: { body: RestoreBody },
      // A mint without NUT-09 has no such route: the 404 of any unknown path, whatever the body.
      onRequest: async (request, reply) => {
        if (faults.current.noRestore) {
          return reply.code(404).send({ detail: `no route ${request.method} ${request.url}`, code: Codes.generic });
        }
      },
    },
    async (request) => ledger.restore(request.body.outputs),
  );

  app.post('/v1/checkstate', { schema: { body: CheckStateBody } }, async (request) => ({
    states: ledger.states(request.body.Ys),
  }));
}

/** The melt quote as NUT-05/23 show it (change only when there is some). */
function meltView(quote: { change?: unknown[] }) {
  const { change, ...rest } = quote;
  return change && change.length ? { ...rest, change } : rest;
}

/** Destroys the connection without an answer. */
function hangUp(reply: FastifyReply) {
  reply.hijack();
  reply.raw.socket?.destroy();
  return reply;
}
