// `npm run demo` walks through every step and ends cleanly.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('npm run demo', () => {
  it('mints, tops up, completes (JSON and stream), shows the balance, pays per request and refunds', async () => {
    const script = fileURLToPath(new URL('../../scripts/demo.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code, output).toBe(0);
    for (const step of [
      'Mint:',
      'Open an account',
      'Top-up:',
      'Chat completion',
      'Streamed completion',
      'Balance',
      'Per-request payment',
      'Refund:',
      'Done.',
    ]) {
      expect(output).toContain(step);
    }
    expect(output).toMatch(/"x-cashu-cost-msat": "\d+"/);
  }, 60_000);
});
