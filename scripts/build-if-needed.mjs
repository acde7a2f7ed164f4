// `npm start` and `npm run migrate` run the compiled CLI (dist/cli.js). This builds dist/ first
// (`npm run build`: TypeScript and the viewer bundle) when it is missing or older than its
// sources, found by a hash of them; an up-to-date dist/ starts at once, also without dev tools.
import { execSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stampFile = join(dist, '.sources-hash');
const inputs = [
  'src',
  'viewer',
  'admin-ui/src',
  'scripts/build-viewer.mjs',
  'scripts/build-admin-ui.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'package-lock.json',
];
const outputs = ['cli.js', 'viewer/index.html', 'admin-ui/admin.js'];

function filesOf(path) {
  if (!statSync(path).isDirectory()) return [path];
  const entries = readdirSync(path, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

function sourcesHash() {
  const hash = createHash('sha256');
  for (const input of inputs) {
    const path = join(root, input);
    if (!existsSync(path)) continue;
    for (const file of filesOf(path).sort()) {
      hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex');
}

const wanted = sourcesHash();
const built = existsSync(stampFile) ? readFileSync(stampFile, 'utf8').trim() : '';
const complete = outputs.every((file) => existsSync(join(dist, file)));
if (built !== wanted || !complete) {
  console.log('quartet: building dist/ (npm run build)');
  // A fresh tree: no compiled file of a source that is gone stays behind.
  rmSync(dist, { recursive: true, force: true });
  execSync('npm run build --silent', { cwd: root, stdio: 'inherit' });
  writeFileSync(stampFile, `${wanted}\n`);
}
