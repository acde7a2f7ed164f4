// The viewer (docs/viewer.md): serves the built viewer (dist/viewer, made by scripts/build-viewer.mjs) at /docs/.
// Files are read once at start-up and answered from memory with their content type, an ETag,
// `X-Content-Type-Options: nosniff`, and on HTML pages a strict Content-Security-Policy that
// still lets try-it reach any API (`connect-src *`). The index lists every mounted service's
// description (context.descriptions) in its viewer-config meta tag.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, problemStyle, sendError } from '../http/errors.js';
import type { ServiceDefinition } from '../services.js';

export const VIEWER_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'viewer');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export const VIEWER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  'img-src * data: blob:',
  "media-src 'self' blob:",
  'connect-src *',
  "font-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'self'",
  "base-uri 'none'",
].join('; ');

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

function file(body: Buffer, name: string): StaticFile {
  return {
    body,
    type: TYPES[extname(name)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

function escapeAttribute(text: string) {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The viewer's files keyed by their path under /docs/ ('' is the index). */
export function loadViewerFiles(
  descriptions: { name: string; title: string; url: string }[],
  dir = VIEWER_DIR,
): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(join(dir, 'index.html'))) return files;
  for (const full of walk(dir)) {
    const path = relative(dir, full).split(sep).join('/');
    let body = readFileSync(full);
    if (path === 'index.html') {
      const config = escapeAttribute(JSON.stringify({ descriptions }));
      body = Buffer.from(
        body
          .toString('utf8')
          .replace('<meta name="viewer-config" content="{}">', `<meta name="viewer-config" content="${config}">`),
      );
    }
    files.set(path, file(body, path));
  }
  files.set('', files.get('index.html')!);
  return files;
}

function send(request: FastifyRequest, reply: FastifyReply, found: StaticFile) {
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Referrer-Policy', 'no-referrer');
  reply.header('ETag', found.etag);
  // HTML is revalidated on every visit; assets keep their names across builds, so they are
  // cached briefly and revalidated by ETag.
  reply.header('Cache-Control', found.type.startsWith('text/html') ? 'no-cache' : 'public, max-age=300');
  if (found.type.startsWith('text/html')) reply.header('Content-Security-Policy', VIEWER_CSP);
  if (request.headers['if-none-match'] === found.etag) return reply.code(304).send();
  return reply.type(found.type).send(request.method === 'HEAD' ? undefined : found.body);
}

export const service: ServiceDefinition = {
  name: 'docs',
  async register(app, context) {
    const files = loadViewerFiles(context.descriptions);
    app.get('/docs', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/docs/'));
    app.get('/docs/*', { schema: { hide: true } }, async (request, reply) => {
      const path = (request.params as { '*': string })['*'].split('?')[0];
      // Errors under /docs/ are problem+json, as for every local prefix but /1 (services.ts).
      if (!files.size) {
        const message = 'The viewer is not built: run `npm run build:viewer`.';
        return sendError(reply, problemStyle, new HttpError(503, message));
      }
      const found = files.get(path);
      if (!found) {
        reply.header('X-Content-Type-Options', 'nosniff');
        return sendError(reply, problemStyle, new HttpError(404, `No file /docs/${path.slice(0, 200)}`));
      }
      return send(request, reply, found);
    });
  },
};
