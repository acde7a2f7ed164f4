import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError, loadEnv } from '../../src/env.js';
import { freePort, spawnQuartet, waitForHttp, type QuartetProcess } from '../support/process.js';

describe('configuration', () => {
  const dirs: string[] = [];
  const children: QuartetProcess[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'quartet-cfg-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.child.kill('SIGKILL');
      await c.exited;
    }
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it.each([
    ['PORT', 'abc', /PORT: expected an integer/],
    ['PORT', '70000', /PORT: must be between 0 and 65535/],
    ['SERVICES', 'proxy,bogus', /SERVICES: unknown service "bogus"/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL: unsupported database/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: must be one of/],
    ['CORS_ORIGINS', 'not an origin', /CORS_ORIGINS:/],
    ['TRUST_PROXY', 'maybe', /TRUST_PROXY: expected true or false/],
    ['WORKERS', '0', /WORKERS: must be between 1 and 256/],
    ['LOG_SYNC', 'sometimes', /LOG_SYNC: expected true or false/],
  ])('an invalid %s=%s stops the start with exit code 2 and one line naming it', async (name, value, message) => {
    const cwd = tempDir();
    const run = spawnQuartet(['serve'], { cwd, env: { [name]: value } });
    children.push(run);
    expect(await run.exited).toBe(2);
    const lines = run.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
  });

  it('reads PORT from .env in the working directory and keeps its data under ./data/', async () => {
    const cwd = tempDir();
    const port = await freePort();
    writeFileSync(join(cwd, '.env'), `# test\nPORT=${port}\nHOST=127.0.0.1\n`);
    const run = spawnQuartet(['serve'], { cwd });
    children.push(run);
    await waitForHttp(`http://127.0.0.1:${port}/healthz`);
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(await response.json()).toEqual({ status: 'ok' });
    expect(existsSync(join(cwd, 'data', 'quartet.db'))).toBe(true);
  });

  it('lets the environment win over .env', () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, '.env'), 'PORT=4123\nSERVICES="tasks, docs"\n');
    expect(loadConfig(loadEnv(cwd, {})).port).toBe(4123);
    expect(loadConfig(loadEnv(cwd, {})).services).toEqual(['tasks', 'docs']);
    expect(loadConfig(loadEnv(cwd, { PORT: '5000' })).port).toBe(5000);
  });

  it('keeps names from .env as plain keys: no prototype, nothing polluted', () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, '.env'), '__proto__=x\nconstructor=y\nhasOwnProperty=z\nPORT=4124\n');
    const env = loadEnv(cwd, {});
    expect(Object.getPrototypeOf(env)).toBeNull();
    expect(env.constructor).toBe('y');
    expect(env.hasOwnProperty).toBe('z');
    expect(loadConfig(env).port).toBe(4124);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('defaults to every service on an embedded database at port 3000', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.services).toEqual(['proxy', 'tasks', 'quotes', 'docs']);
    expect(config.database).toEqual({ kind: 'sqlite', file: './data/quartet.db' });
    expect(() => loadConfig({ BODY_LIMIT: '-1' })).toThrow(ConfigError);
  });

  it('reads the timeouts of receiving a request, a headers timeout no longer than the request timeout', () => {
    const config = loadConfig({});
    expect([config.keepAliveTimeoutMs, config.headersTimeoutMs, config.requestTimeoutMs]).toEqual([
      72_000, 30_000, 300_000,
    ]);
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '0', HEADERS_TIMEOUT_MS: '90000' }).requestTimeoutMs).toBe(0);
    expect(() => loadConfig({ REQUEST_TIMEOUT_MS: '10000', HEADERS_TIMEOUT_MS: '20000' })).toThrow(
      /HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS/,
    );
    expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
  });

  it('an unknown command exits with 2', async () => {
    const run = spawnQuartet(['frobnicate'], { cwd: tempDir() });
    children.push(run);
    expect(await run.exited).toBe(2);
    expect(run.output()).toMatch(/unknown command "frobnicate"/);
  });
});
