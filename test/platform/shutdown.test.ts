import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, spawnQuartet, waitForHttp, type QuartetProcess } from '../support/process.js';

const LOGIN_BODY = JSON.stringify({ email: 'nobody@example.com', password: 'not the right password' });
let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

/** The tasks service in a process of its own, logging at info. */
async function serve(env: Record<string, string> = {}) {
  const cwd = mkdtempSync(join(tmpdir(), 'quartet-shutdown-'));
  const port = await freePort();
  const run = spawnQuartet(['serve'], {
    cwd,
    env: {
      PORT: String(port),
      HOST: '127.0.0.1',
      SERVICES: 'tasks',
      USERS_SCRYPT_N: '1024',
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  cleanup = () => {
    run.child.kill('SIGKILL');
    rmSync(cwd, { recursive: true, force: true });
  };
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return { run, port };
}

/** An in-flight request: headers and the first 10 bytes of a login's body sent, the rest when the test says. */
async function halfSentLogin(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(
    'POST /api/users/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(LOGIN_BODY)}\r\nConnection: close\r\n\r\n${LOGIN_BODY.slice(0, 10)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { finish: () => socket.write(LOGIN_BODY.slice(10)), closed, answer: () => answer };
}

/** The JSON lines of the process's log. */
const logged = (run: QuartetProcess) =>
  run
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; status?: number; req?: { url?: string } });

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the in-flight request, then exits 0', async () => {
    const { run, port } = await serve();
    const login = await halfSentLogin(port);
    run.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));
    // New connections are refused while the old request is still open.
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    login.finish();
    await login.closed;
    expect(login.answer()).toMatch(/^HTTP\/1\.1 401 /);
    expect(await run.exited).toBe(0);
    // The log is written in the background: its last lines reached the output before the exit.
    const lines = logged(run);
    expect(lines.some((line) => line.req?.url === '/api/users/login' && line.status === 401)).toBe(true);
    expect(lines.at(-1)?.msg).toBe('shut down cleanly');
  });

  it('a request that does not finish within SHUTDOWN_TIMEOUT_MS: exits 1, the log saying so last', async () => {
    const { run, port } = await serve({ SHUTDOWN_TIMEOUT_MS: '500' });
    await halfSentLogin(port); // the rest of its body never comes
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(1);
    expect(logged(run).at(-1)?.msg).toBe('shutdown timed out; exiting');
  });
});
