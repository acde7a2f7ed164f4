import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { childPids, freePort, spawnQuartet, waitForHttp } from '../support/process.js';

// The primary's children that run quartet (tsx may also start an esbuild service as a child).
const workersOf = (pid: number) => childPids(pid, 'src/cli.ts');

async function until<T>(probe: () => T | undefined, explain: () => string, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out; the output so far:\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('WORKERS', () => {
  it('serves one port from several processes, replaces one that dies, and stops them all at SIGTERM', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'quartet-workers-'));
    const port = await freePort();
    const run = spawnQuartet(['serve'], {
      cwd,
      env: {
        PORT: String(port),
        HOST: '127.0.0.1',
        SERVICES: 'tasks',
        WORKERS: '2',
        USERS_SCRYPT_N: '1024',
        LOG_LEVEL: 'info',
        LOG_SYNC: '1',
      },
    });
    const primary = run.child.pid!;
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`);
      const first = await until(() => (workersOf(primary).length === 2 ? workersOf(primary) : undefined), run.output);
      // The primary hands connections only to workers that listen already.
      await until(() => (run.output().split('Server listening').length - 1 >= 2 ? true : undefined), run.output);
      // Each new connection goes to the next worker: both answer, and they share one database.
      const email = `w${Date.now()}@example.com`;
      const register = await fetch(`http://127.0.0.1:${port}/api/users/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({
          email,
          username: `w${Date.now()}`,
          password: 'a long and unusual passphrase',
          first_name: 'W',
          last_name: 'K',
        }),
      });
      expect(register.status).toBe(201);
      for (let i = 0; i < 4; i++) {
        const login = await fetch(`http://127.0.0.1:${port}/api/users/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ email, password: 'a long and unusual passphrase' }),
        });
        expect(login.status).toBe(200);
      }
      const loginPids = run
        .output()
        .split('\n')
        .filter((line) => line.includes('"url":"/api/users/login"'))
        .map((line) => JSON.parse(line).pid);
      expect(new Set(loginPids)).toEqual(new Set(first));

      process.kill(first[0], 'SIGKILL');
      const replaced = await until(() => {
        const now = workersOf(primary);
        return now.length === 2 && !now.includes(first[0]) ? now : undefined;
      }, run.output);
      expect(replaced).toContain(first[1]);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(workersOf(primary)).toEqual([]);
      for (const pid of replaced) expect(() => process.kill(pid, 0)).toThrow();
      expect(run.output()).toMatch(/worker stopped; starting another/);
    } finally {
      run.child.kill('SIGKILL');
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
