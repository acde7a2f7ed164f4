// The users and tasks API (docs/tasks.md), mounted as the `tasks` service under /api/users and /api/tasks.
import multipart from '@fastify/multipart';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../env.js';
import { errorHandlerFor, HttpError, problemStyle } from '../http/errors.js';
import { pruneRateLimits } from '../http/rate-limit.js';
import type { ServiceContext, ServiceDefinition } from '../services.js';
import { registerTaskRoutes } from '../tasks/routes.js';
import { Accounts } from './accounts.js';
import { Mailer } from './mail.js';
import { registerUserRoutes } from './routes.js';
import { loadSecretKey } from './secret-key.js';

const PRUNE_EVERY_MS = 3600_000;
const OUTBOX_KEEP_MS = 7 * 24 * 3600_000;

/** Work started after an answer (reset mails), awaited at shutdown before the database closes. */
const pending = new Set<Promise<void>>();

export const service: ServiceDefinition = {
  name: 'tasks',
  openapi: {
    title: 'quartet users and tasks API',
    version: '1.0.0',
    description:
      'Users register and log in for a bearer token; tasks belong to users. Errors are RFC 9457 problem+json.',
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'The token from POST /api/users/login' },
    },
  },
  async register(app, context) {
    app.setErrorHandler(errorHandlerFor(problemStyle));
    // A JSON API: plain-text bodies are refused (415) rather than parsed into strings.
    app.removeContentTypeParser('text/plain');
    // Only this scope parses multipart (the photo upload); limits are set per call in photos.ts.
    await app.register(multipart, { limits: { fileSize: context.config.users.photoMaxBytes } });

    const accounts = new Accounts(context.db, context.config.users);
    await accounts.prepare();
    const mailer = new Mailer(context.config.users, accounts.store, app.log);
    app.addHook('onClose', async () => mailer.close());
    reportSecretKey(context, app.log);
    await bootstrapAdmin(context, accounts, app.log);

    const later = (work: () => Promise<void>) => {
      const job = work().catch((error) => app.log.error({ err: error }, 'background work failed'));
      pending.add(job);
      void job.finally(() => pending.delete(job));
    };
    // Expiry is enforced on every read; this only keeps the tables small. Rate-limit windows
    // older than a day are over for every rule in quartet (the longest is an hour).
    const prune = () =>
      later(async () => {
        await accounts.store.pruneExpired(OUTBOX_KEEP_MS);
        await pruneRateLimits(context.db, 24 * 3600_000);
      });
    const pruner = setInterval(prune, PRUNE_EVERY_MS);
    pruner.unref();
    app.addHook('onClose', async () => clearInterval(pruner));

    await registerUserRoutes(app, { context, accounts, mailer, later });
    await registerTaskRoutes(app, context);
  },
  async close() {
    await Promise.all([...pending]);
  },
};

function reportSecretKey(context: ServiceContext, log: FastifyBaseLogger) {
  const secret = loadSecretKey(context.config);
  if (secret.source === 'generated') {
    log.warn(
      { file: secret.file },
      'generated a key for API secrets; every process sharing this database must use the same one (QUARTET_SECRET_KEY)',
    );
  } else if (secret.source === 'missing') {
    log.warn('QUARTET_SECRET_KEY is not set: API key pairs are disabled on PostgreSQL until it is');
  }
}

/** Creates the USERS_ADMIN_EMAIL admin when no account has that email (safe to race). */
async function bootstrapAdmin(context: ServiceContext, accounts: Accounts, log: FastifyBaseLogger) {
  const admin = context.config.users.admin;
  if (!admin) return;
  const existing = await accounts.store.credentialsByEmail(admin.email);
  if (existing) {
    if (existing.role !== 'admin') log.warn('USERS_ADMIN_EMAIL belongs to a regular account; it was not promoted');
    return;
  }
  try {
    await accounts.register(
      {
        email: admin.email,
        password: admin.password,
        username: admin.username,
        first_name: 'Admin',
        last_name: 'Admin',
      },
      'admin',
    );
    log.info('created the bootstrap admin from USERS_ADMIN_EMAIL');
  } catch (error) {
    if (error instanceof HttpError && error.status === 409) {
      // Either another process created it first, or the username belongs to someone else.
      if (!(await accounts.store.credentialsByEmail(admin.email))) {
        log.error('USERS_ADMIN_USERNAME is taken by another account; the bootstrap admin was not created');
      }
      return;
    }
    if (error instanceof HttpError) throw new ConfigError('USERS_ADMIN_PASSWORD', error.message);
    throw error;
  }
}
