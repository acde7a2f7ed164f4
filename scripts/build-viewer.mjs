// Bundles the viewer (viewer/) into static files under dist/viewer/: index.html, viewer.js,
// viewer.css, lang/translator.js + one lang/<code>.js per viewer/lang/<code>.json, and the OAuth
// redirect page (oauth2-redirect.html, plus o2c.html as 2.x named it). Fast (esbuild) and
// deterministic: same sources, same bytes.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'viewer');
const out = join(root, 'dist', 'viewer');

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'lang'), { recursive: true });

const common = {
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  charset: 'utf8',
  define: { 'process.env.NODE_ENV': '"production"' },
};

await Promise.all([
  build({ ...common, entryPoints: { viewer: join(src, 'src/main.ts') }, outdir: out }),
  build({ ...common, entryPoints: [join(src, 'src/translator-entry.ts')], outfile: join(out, 'lang/translator.js') }),
  build({ ...common, entryPoints: [join(src, 'src/redirect-entry.ts')], outfile: join(out, 'oauth2-redirect.js') }),
]);

for (const file of ['index.html', 'oauth2-redirect.html']) copyFileSync(join(src, file), join(out, file));
copyFileSync(join(src, 'oauth2-redirect.html'), join(out, 'o2c.html'));

// Language files in the 2.x form: a script that teaches the global translator its phrases.
for (const file of readdirSync(join(src, 'lang'))
  .filter((f) => f.endsWith('.json'))
  .sort()) {
  const words = JSON.parse(readFileSync(join(src, 'lang', file), 'utf8'));
  const code = file.replace(/\.json$/, '');
  writeFileSync(
    join(out, 'lang', `${code}.js`),
    `'use strict';\n/* ${code} */\nwindow.SwaggerTranslator.learn(${JSON.stringify(words, null, 1)});\n`,
  );
}
