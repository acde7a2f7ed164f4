// The dev mint's HTTP face: the NUT routes under /v1 and the dev-only routes under /dev.
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Socket } from 'node:net';
import { Codes, MintError } from './errors.js';
import type { FaultChange, Faults } from './faults.js';
import type { ProofInput } from './keys.js';
import type { BlindedMessage, Ledger } from './ledger.js';
import type { FakeLightning } from './lightning.js';
import type { Melts } from './melt.js';
import { MAX_AMOUNT, type MintQuotes } from './quotes.js';
import { swap } from './swap.js';

export const LABEL = 'DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE';
export const VERSION = 'quartet-devmint/0.0.1';

export interface MintCore {
  ledger: Ledger;
  mintQuotes: MintQuotes;
  melts: Melts;
  lightning: FakeLightning;
  url(): string;
  mintToken(amount: number): Promise<string>;
}

const proof = {
  type: 'object',
  required: ['amount', 'id', 'secret', 'C'],
  properties: {
    amount: { type: 'integer', minimum: 0 },
    id: { type: 'string', maxLength: 200 },
    secret: { type: 'string', maxLength: 10_000 },
    C: { type: 'string', maxLength: 200 },
    witness: {},
    dleq: {},
  },
} as const;
const blindedMessage = {
  type: 'object',
  required: ['amount', 'id', 'B_'],
  properties: { amount: { type: 'integer', minimum: 0 }, id: { type: 'string', maxLength: 200 }, B_: { type: 'string', maxLength: 200 } },
} as const;
const proofs = { type: 'array', items: proof } as const;
const outputs = { type: 'array', items: blindedMessage } as const;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 200 } } } as const;
const body = (properties: Record<string, unknown>, required: string[]) => ({ body: { type: 'object', required, properties } });

export interface AppOptions {
  logger?: boolean;
  /** Called before the answer to every request that may have changed state leaves. */
  onChange?: () => void;
}

export function buildApp(core: MintCore, faults: Faults, options: AppOptions = {}): FastifyInstance {
  const changed = options.onChange ?? (() => {});
  const { ledger, mintQuotes, melts, lightning } = core;
  const app = Fastify({
    logger: options.logger ?? false,
    // Amounts must be JSON integers, not strings that happen to look like them.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });

  app.setErrorHandler((error: FastifyError | MintError, _request, reply) => {
    if (error instanceof MintError) return reply.code(error.status).send(error.body());
    if ((error as FastifyError).validation) return reply.code(400).send({ detail: `invalid request: ${error.message}`, code: Codes.generic });
    const status = (error as FastifyError).statusCode ?? 500;
    if (status < 500) return reply.code(status).send({ detail: error.message, code: Codes.generic });
    app.log.error({ err: error }, 'dev mint error');
    return reply.code(500).send({ detail: 'internal error', code: Codes.generic });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ detail: `no route ${request.method} ${request.url}`, code: Codes.generic }));

  // Faults: on /v1 only, so that the dev routes can always switch them off again.
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) {
      // No keep-alive on dev routes: a connection pooled from /dev/faults must not outlive `down`.
      reply.header('connection', 'close');
      return;
    }
    const { delayMs, lie } = faults.current;
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (lie) return reply.code(200).type('application/json').send(faults.nextLie());
  });

  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.method !== 'GET') changed();
    return payload;
  });

  const keysetView = (id: string) => {
    const keyset = ledger.keyset(id);
    return { id: keyset.id, unit: keyset.unit, active: keyset.active, input_fee_ppk: keyset.inputFeePpk, final_expiry: null };
  };
  const method = { method: 'bolt11', unit: ledger.unit, min_amount: 1, max_amount: MAX_AMOUNT };

  app.get('/v1/info', async () => ({
    name: `quartet dev mint (${LABEL})`,
    version: VERSION,
    description: `A Cashu mint for development and tests with a fake Lightning backend. ${LABEL}: its ecash is worth nothing.`,
    description_long: 'Invoices are fake and settle on demand (POST /dev/quotes/{id}/pay); melts "pay" nothing. Never send real funds here.',
    motd: LABEL,
    urls: [core.url()],
    time: Math.floor(Date.now() / 1000),
    nuts: {
      '4': { methods: [{ ...method, options: { description: false } }], disabled: false },
      '5': { methods: [{ ...method, options: { amountless: false } }], disabled: false },
      '7': { supported: true },
      '8': { supported: true },
      '9': { supported: true },
      '12': { supported: true },
    },
  }));

  app.get('/v1/keys', async () => ({
    keysets: [...ledger.keysets.values()].filter((k) => k.active).map((k) => ({ ...keysetView(k.id), keys: k.keys })),
  }));
  app.get<{ Params: { id: string } }>('/v1/keys/:id', { schema: { params: idParam } }, async (request) => {
    const keyset = ledger.keyset(request.params.id);
    return { keysets: [{ ...keysetView(keyset.id), keys: keyset.keys }] };
  });
  app.get('/v1/keysets', async () => ({ keysets: [...ledger.keysets.keys()].map(keysetView) }));

  app.post<{ Body: { inputs: ProofInput[]; outputs: BlindedMessage[] } }>(
    '/v1/swap',
    { schema: body({ inputs: proofs, outputs }, ['inputs', 'outputs']) },
    async (request, reply) => {
      if (faults.current.failSwaps) return reply.code(500).send({ detail: 'dev mint fault: failSwaps', code: Codes.generic });
      const signatures = swap(ledger, request.body.inputs, request.body.outputs);
      if (faults.current.loseSwapResponses) {
        changed();
        return loseResponse(reply);
      }
      return { signatures };
    },
  );

  app.post<{ Body: { amount: number; unit: string } }>(
    '/v1/mint/quote/bolt11',
    { schema: body({ amount: { type: 'integer' }, unit: { type: 'string' }, description: { type: 'string' }, pubkey: { type: 'string' } }, ['amount', 'unit']) },
    async (request) => mintQuotes.create(request.body),
  );
  app.get<{ Params: { id: string } }>('/v1/mint/quote/bolt11/:id', { schema: { params: idParam } }, async (request) =>
    mintQuotes.view(mintQuotes.get(request.params.id)),
  );
  app.post<{ Body: { quote: string; outputs: BlindedMessage[] } }>(
    '/v1/mint/bolt11',
    { schema: body({ quote: { type: 'string' }, outputs }, ['quote', 'outputs']) },
    async (request) => ({ signatures: mintQuotes.mint(request.body.quote, request.body.outputs) }),
  );

  app.post<{ Body: { request: string; unit: string; options?: { amountless?: unknown } } }>(
    '/v1/melt/quote/bolt11',
    { schema: body({ request: { type: 'string', maxLength: 10_000 }, unit: { type: 'string' }, options: { type: 'object' } }, ['request', 'unit']) },
    async (request) => meltView(melts.create(request.body)),
  );
  app.get<{ Params: { id: string } }>('/v1/melt/quote/bolt11/:id', { schema: { params: idParam } }, async (request) =>
    meltView(melts.get(request.params.id)),
  );
  app.post<{ Body: { quote: string; inputs: ProofInput[]; outputs?: BlindedMessage[] } }>(
    '/v1/melt/bolt11',
    { schema: body({ quote: { type: 'string' }, inputs: proofs, outputs, prefer_async: { type: 'boolean' } }, ['quote', 'inputs']) },
    async (request) => meltView(await melts.melt(request.body.quote, request.body.inputs, request.body.outputs ?? [])),
  );

  app.post<{ Body: { outputs: BlindedMessage[] } }>('/v1/restore', { schema: body({ outputs }, ['outputs']) }, async (request) =>
    ledger.restore(request.body.outputs),
  );

  app.post<{ Body: { Ys: string[] } }>(
    '/v1/checkstate',
    { schema: body({ Ys: { type: 'array', maxItems: 10_000, items: { type: 'string', pattern: '^0[23][0-9a-fA-F]{64}$' } } }, ['Ys']) },
    async (request) => ({ states: ledger.states(request.body.Ys) }),
  );

  // Dev-only routes (not part of any NUT).
  app.get('/dev/faults', async () => faults.current);
  app.post<{ Body: FaultChange }>(
    '/dev/faults',
    {
      schema: body(
        {
          down: { type: 'boolean' },
          delayMs: { type: 'integer', minimum: 0 },
          failSwaps: { type: 'boolean' },
          loseSwapResponses: { type: 'boolean' },
          lie: { type: 'boolean' },
          forMs: { type: 'integer', minimum: 1 },
        },
        [],
      ),
    },
    async (request, reply) => {
      if (request.body.down && !request.body.forMs) return reply.code(400).send({ detail: 'down needs forMs over HTTP, or nothing could switch it off again', code: Codes.generic });
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
  app.post<{ Params: { id: string } }>('/dev/quotes/:id/pay', { schema: { params: idParam } }, async (request) => mintQuotes.pay(request.params.id));
  app.post<{ Body: { detail?: string } }>('/dev/melts/fail-next', { schema: body({ detail: { type: 'string' } }, []) }, async (request) => {
    lightning.failNextPayment(request.body?.detail);
    return { ok: true };
  });
  app.post<{ Body: { amount: number } }>('/dev/invoices', { schema: body({ amount: { type: 'integer', minimum: 1 } }, ['amount']) }, async (request) => {
    const msat = ledger.unit === 'sat' ? request.body.amount * 1000 : request.body.amount;
    return { request: lightning.createInvoice(msat).request, amount: request.body.amount, unit: ledger.unit };
  });
  app.post<{ Body: { amount: number } }>('/dev/tokens', { schema: body({ amount: { type: 'integer', minimum: 1, maximum: MAX_AMOUNT } }, ['amount']) }, async (request) => ({
    token: await core.mintToken(request.body.amount),
    amount: request.body.amount,
    unit: ledger.unit,
  }));
  app.post<{ Body: { input_fee_ppk?: number } }>('/dev/keysets/rotate', { schema: body({ input_fee_ppk: { type: 'integer', minimum: 0 } }, []) }, async (request) =>
    keysetView(ledger.rotateKeyset(request.body?.input_fee_ppk).id),
  );

  return app;
}

/** The melt quote as NUT-05/23 show it (change only when there is some). */
function meltView(quote: { change?: unknown[] }) {
  const { change, ...rest } = quote;
  return change && change.length ? { ...rest, change } : rest;
}

function loseResponse(reply: FastifyReply) {
  reply.hijack();
  reply.raw.socket?.destroy();
  return reply;
}

/** Listening that can be switched off and on at the same address (the `down` fault). */
export function listener(app: FastifyInstance, address: { port: number; host: string }) {
  const sockets = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  let listening = true;
  return {
    isListening: () => listening,
    async stop() {
      listening = false;
      app.server.close();
      for (const socket of sockets) socket.destroy();
      // Let clients in this process see their pooled connections close before the next request.
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
    start() {
      listening = true;
      return new Promise<void>((resolve, reject) => {
        app.server.once('error', reject);
        app.server.listen(address.port, address.host, () => {
          app.server.off('error', reject);
          resolve();
        });
      });
    },
  };
}
