import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { logLines, serveInTempDir, waitForHttp } from '../support/process.js';

const LOGIN_BODY = JSON.stringify({ email: 'nobody@example.com', password: 'not the right password' });
let stop: (() => void) | undefined;
afterEach(() => stop?.());

/** The tasks service in a process of its own, logging at info. */
async function serve(env: Record<string, string> = {}) {
  const served = await serveInTempDir({ SERVICES: 'tasks', USERS_SCRYPT_N: '1024', LOG_LEVEL: 'info', ...env });
  stop = served.stop;
  await waitForHttp(`http://127.0.0.1:${served.port}/healthz`);
  return served;
}

/**
 * An in-flight request: headers and the first 10 bytes of a login's body sent, the rest when the test
 * says. It asks for `100 Continue`, which the server sends once it has the request's headers: the
 * request is then in flight, however long the machine took to get there.
 */
async function halfSentLogin(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(
    'POST /api/users/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(LOGIN_BODY)}\r\nConnection: close\r\nExpect: 100-continue\r\n\r\n`,
  );
  await expect.poll(() => answer, { timeout: 60_000 }).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
  socket.write(LOGIN_BODY.slice(0, 10));
  return { finish: () => socket.write(LOGIN_BODY.slice(10)), closed, answer: () => answer };
}

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the in-flight request, then exits 0', async () => {
    const { run, port } = await serve();
    const login = await halfSentLogin(port);
    run.child.kill('SIGTERM');
    // New connections are refused while the old request is still open: from when the process has
    // handled the signal, which a busy machine may take a while to get to.
    const healthz = () =>
      fetch(`http://127.0.0.1:${port}/healthz`).then(
        (answer) => `answered ${answer.status}`,
        () => 'refused',
      );
    await expect.poll(healthz, { timeout: 60_000, interval: 100 }).toBe('refused');
    login.finish();
    await login.closed;
    expect(login.answer()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /);
    expect(await run.exited).toBe(0);
    // The log is written in the background: its last lines reached the output before the exit.
    const lines = logLines(run) as { msg?: string; status?: number; req?: { url?: string } }[];
    expect(lines.some((line) => line.req?.url === '/api/users/login' && line.status === 401)).toBe(true);
    expect(lines.at(-1)?.msg).toBe('shut down cleanly');
  }, 120_000); // a process started and stopped: 20 s at load 20 on 2 cores

  it('a request that does not finish within SHUTDOWN_TIMEOUT_MS: exits 1, the log saying so last', async () => {
    const { run, port } = await serve({ SHUTDOWN_TIMEOUT_MS: '500' });
    await halfSentLogin(port); // the rest of its body never comes
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(1);
    expect(logLines(run).at(-1)?.msg).toBe('shutdown timed out; exiting');
  }, 120_000);
});
