import { describe, expect, it } from 'vitest';
import { childPids, logLines, serveInTempDir, waitForHttp, type QuartetProcess } from '../support/process.js';

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

/** `quartet serve` with WORKERS=2 and an access log line per request (each with its process id). */
async function startCluster() {
  const served = await serveInTempDir({
    SERVICES: 'tasks',
    WORKERS: '2',
    USERS_SCRYPT_N: '1024',
    LOG_LEVEL: 'info',
    LOG_SYNC: '1',
  });
  return { ...served, primary: served.run.child.pid! };
}

/** Waits for both workers to listen; resolves with their process ids. */
async function bothListening(run: QuartetProcess, port: number, primary: number): Promise<number[]> {
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  const workers = await until(() => (workersOf(primary).length === 2 ? workersOf(primary) : undefined), run.output);
  // The primary hands connections only to workers that listen already.
  await until(() => (run.output().split('Server listening').length - 1 >= 2 ? true : undefined), run.output);
  return workers;
}

/** The process ids in the access log lines of `url`. */
const pidsServing = (run: QuartetProcess, url: string) =>
  logLines(run)
    .filter((line) => (line.req as { url?: string } | undefined)?.url === url)
    .map((line) => line.pid);

describe('WORKERS', () => {
  it('serves one port from several processes, replaces one that dies, and stops them all at SIGTERM', async () => {
    const { run, port, primary, stop } = await startCluster();
    try {
      const first = await bothListening(run, port, primary);
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
      const loginPids = pidsServing(run, '/api/users/login');
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
      stop();
    }
  }, 120_000);

  it("answers /metrics on any worker with the whole cluster's counts", async () => {
    const { run, port, stop } = await startCluster();
    try {
      await bothListening(run, port, run.child.pid!);
      const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { headers: { connection: 'close' } });
      // Each new connection goes to the next worker: each one serves three of the six.
      for (let i = 0; i < 6; i++) expect((await get('/readyz')).status).toBe(200);
      expect(new Set(pidsServing(run, '/readyz')).size).toBe(2);
      for (let i = 0; i < 4; i++) {
        const metrics = await (await get('/metrics')).text();
        expect(metrics).toMatch(/^http_requests_total\{method="GET",route="\/readyz",status="200"\} 6$/m);
        expect(metrics).toMatch(/^process_cpu_seconds_total /m);
      }
      expect(new Set(pidsServing(run, '/metrics')).size).toBe(2);
    } finally {
      stop();
    }
  }, 120_000);
});
