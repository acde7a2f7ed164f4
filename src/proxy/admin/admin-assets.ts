// The admin page's script and stylesheet, bundled at build time (scripts/build-admin-ui.mjs, from
// admin-ui/src/) into dist/admin-ui/ and served at /admin/assets/ from memory: read once at start,
// with an ETag. The page works without them (its forms are plain HTML); the panels need the script.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors.js';

/** From src/proxy/admin/ and from dist/proxy/admin/ alike: the repository's dist/admin-ui. */
const ASSETS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'admin-ui');

export const ADMIN_SCRIPT = '/admin/assets/admin.js';
export const ADMIN_STYLES = '/admin/assets/admin.css';

const FILES = new Map([
  ['admin.js', 'text/javascript; charset=utf-8'],
  ['admin.css', 'text/css; charset=utf-8'],
]);

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, type] of FILES) {
    const path = join(dir, name);
    if (!existsSync(path)) continue;
    const body = readFileSync(path);
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return assets;
}

export function registerAdminAssets(scope: FastifyInstance, dir = ASSETS_DIR) {
  const assets = loadAssets(dir);
  scope.get<{ Params: { file: string } }>('/admin/assets/:file', { schema: { hide: true } }, async (request, reply) => {
    const asset = assets.get(request.params.file);
    if (!asset) {
      throw new HttpError(404, assets.size ? 'No such file' : 'The admin page is not built: run `npm run build:admin`');
    }
    reply.header('x-content-type-options', 'nosniff').header('etag', asset.etag).header('cache-control', 'no-cache');
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  });
}
