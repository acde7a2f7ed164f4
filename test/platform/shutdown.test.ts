import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, spawnQuartet, waitForHttp } from '../support/process.js';

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the in-flight request, then exits 0', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'quartet-shutdown-'));
    const port = await freePort();
    const run = spawnQuartet(['serve'], {
      cwd,
      env: { PORT: String(port), HOST: '127.0.0.1', SERVICES: 'tasks', USERS_SCRYPT_N: '1024', LOG_LEVEL: 'info' },
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`);
      // An in-flight request: headers and half the body sent, the rest after the signal.
      const body = JSON.stringify({ email: 'nobody@example.com', password: 'not the right password' });
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(
        'POST /api/users/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      run.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 500));
      // New connections are refused while the old request is still open.
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
      socket.write(body.slice(10));
      await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      expect(await run.exited).toBe(0);
      // The log is written in the background: its last lines reached the output before the exit.
      const logged = run
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; status?: number; req?: { url?: string } });
      expect(logged.some((line) => line.req?.url === '/api/users/login' && line.status === 401)).toBe(true);
      expect(logged.at(-1)?.msg).toBe('shut down cleanly');
    } finally {
      run.child.kill('SIGKILL');
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
