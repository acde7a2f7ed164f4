// Bundles the admin page's script and stylesheet (admin-ui/src/, with uPlot for its charts) into
// dist/admin-ui/admin.js and admin.css, which the proxy node serves at /admin/assets/ (src/proxy/admin/
// admin-assets.ts). Nothing is fetched at run time. Same sources, same bytes.
import { build } from 'esbuild';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'admin-ui');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { admin: join(root, 'admin-ui/src/main.ts') },
  outdir: out,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  charset: 'utf8',
});
