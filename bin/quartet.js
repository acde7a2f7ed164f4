#!/usr/bin/env node
// Runs the compiled CLI; `npm start` (or `npm run build`) compiles it to dist/. The tests run the
// TypeScript sources instead (test/support/process.ts).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('quartet: dist/cli.js is missing; run `npm run build` (or `npm start`) first');
  process.exit(1);
}
await import(cli.href);
