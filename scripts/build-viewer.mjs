// Bundles the viewer (viewer/) into static files under dist/viewer/.
import { mkdirSync, writeFileSync } from 'node:fs';

mkdirSync('dist/viewer', { recursive: true });
writeFileSync('dist/viewer/index.html', '<!doctype html><title>quartet docs</title><p>The viewer is not built yet.</p>\n');
