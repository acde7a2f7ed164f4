// The dev mint's HTTP server: error shape (NUT-00), the fault hooks, the NUT and dev routes, and
// a listener the `down` fault can switch off and on.
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import { registerDevRoutes } from './dev-routes.js';
import { Codes, MintError } from './errors.js';
import type { Faults } from './faults.js';
import type { Ledger } from './ledger.js';
import type { FakeLightning } from './lightning.js';
import type { Melts } from './melt.js';
import type { MintQuotes } from './quotes.js';
import { registerNutRoutes } from './routes.js';

export { LABEL, VERSION } from './routes.js';

export interface MintCore {
  ledger: Ledger;
  mintQuotes: MintQuotes;
  melts: Melts;
  lightning: FakeLightning;
  url(): string;
  mintToken(amount: number): Promise<string>;
}

export interface AppOptions {
  logger?: boolean;
  /** Called before the answer to every request that may have changed state leaves. */
  onChange?: () => void;
}

export function buildApp(core: MintCore, faults: Faults, options: AppOptions = {}): FastifyInstance {
  const changed = options.onChange ?? (() => {});
  const app = Fastify({
    logger: options.logger ?? false,
    // Amounts must be JSON integers, not strings that happen to look like them.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });

  app.setErrorHandler((error: FastifyError | MintError, _request, reply) => {
    if (error instanceof MintError) return reply.code(error.status).send(error.body());
    if ((error as FastifyError).validation) {
      return reply.code(400).send({ detail: `invalid request: ${error.message}`, code: Codes.generic });
    }
    const status = (error as FastifyError).statusCode ?? 500;
    if (status < 500) return reply.code(status).send({ detail: error.message, code: Codes.generic });
    app.log.error({ err: error }, 'dev mint error');
    return reply.code(500).send({ detail: 'internal error', code: Codes.generic });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ detail: `no route ${request.method} ${request.url}`, code: Codes.generic }),
  );

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

  registerNutRoutes(app, core, faults, changed);
  registerDevRoutes(app, core, faults);
  return app;
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
