// What every route file of the quotation API shares: the parts built in service.ts, the
// OpenAPI security of the signed routes, and the caller's principal and project.
import type { FastifyRequest } from 'fastify';
import type { Database } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import type { QuotesConfig } from '../config.js';
import type { FilePool } from '../jobs/file-worker.js';
import type { ImportQueue } from '../jobs/import-queue.js';
import { requireProject, type Project } from '../projects/projects.js';

export interface QuotesDeps {
  db: Database;
  config: QuotesConfig;
  /** Checks a request's OneSky signature or bearer token. */
  authenticate(request: FastifyRequest): Promise<Principal>;
  queue: ImportQueue;
  pool: FilePool;
}

/** OneSky's three signature fields, or a bearer token of the users and tasks API. */
export const security: Record<string, string[]>[] = [
  { oneSkyKey: [], oneSkyTimestamp: [], oneSkyHash: [] },
  { bearer: [] },
];

/** The caller, authenticated by the hooks of routes/index.ts before any signed route's handler. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.quotesPrincipal) throw new HttpError(401, 'Authentication required');
  return request.quotesPrincipal;
}

/** The project of the path, if the caller may see it (else 404). */
export function projectOf(
  db: Database,
  request: FastifyRequest & { params: { project_id: number } },
): Promise<Project> {
  return requireProject(db.kysely, request.params.project_id, principalOf(request));
}
