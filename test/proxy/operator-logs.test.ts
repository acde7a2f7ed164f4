// The searchable log of the operator API (docs/proxy-operator.md, "Logs"): the node's JSON lines,
// redacted as on standard output, kept in a rotating store under LOG_DIR and searched through
// GET /admin/api/logs by request id, level, time and text; the store stays within its bounds, and
// a directory that cannot be written loses lines (counted), never the node.
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { chatBody, postJson, startNode, type Node } from './forward-helpers.js';

const PASSWORD = 'operator-password-123';
const today = () => new Date().toISOString().slice(0, 10);

async function login(node: Node): Promise<string> {
  const answer = await postJson(`${node.url}/admin/api/login`, { password: PASSWORD });
  expect(answer.status).toBe(200);
  return answer.json.token;
}

describe.each(databaseKinds)('operator logs (%s)', (kind) => {
  let node: Node;
  let token: string;
  let dir: string;
  let key: string;
  let okId: string;
  let failedId: string;
  let between: number;

  const logs = async (query: string) => {
    const answer = await request(`${node.url}/admin/api/logs?${query}`, 'GET', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    return answer.json;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'quartet-logs-'));
    node = await startNode(kind, { env: { LOG_LEVEL: 'info', LOG_DIR: dir, PROXY_ADMIN_PASSWORD: PASSWORD } });
    token = await login(node);
    key = await node.account(10_000_000);
    const ok = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` });
    expect(ok.status).toBe(200);
    okId = ok.headers.get('x-request-id')!;
    await new Promise((resolve) => setTimeout(resolve, 20));
    between = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    node.upstream.faults.status = 500;
    const failed = await postJson(`${node.url}/v1/chat/completions?token=sekrit-query-value`, chatBody(), {
      authorization: `Bearer ${key}`,
    });
    node.upstream.faults.status = null;
    expect(failed.status).toBe(500);
    failedId = failed.headers.get('x-request-id')!;
  }, 60_000);

  afterAll(async () => {
    await node?.close();
  });

  it('refuses callers without a credential and unknown levels', async () => {
    expect((await request(`${node.url}/admin/api/logs`)).status).toBe(401);
    expect((await request(`${node.url}/admin/api/logs/dates`)).status).toBe(401);
    const answer = await request(`${node.url}/admin/api/logs?level=loud`, 'GET', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(422);
    expect(answer.json.detail).toMatch(/level/);
  });

  it('finds a request by its id, in Routstr’s shape', async () => {
    const found = await logs(`request_id=${failedId}`);
    expect(found.request_id).toBe(failedId);
    expect(found.logs.length).toBeGreaterThanOrEqual(1);
    for (const entry of found.logs) expect(entry.request_id).toBe(failedId);
    const access = found.logs.find((entry: any) => entry.message === 'request failed');
    expect(access).toMatchObject({
      levelname: 'ERROR',
      name: 'quartet',
      status_code: 500,
      method: 'POST',
      pathname: '',
      lineno: 0,
    });
    expect(access.asctime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    // Today's redaction: the secret query value never reached the store.
    expect(access.path).toBe('/v1/chat/completions?token=[REDACTED]');
    expect(found.total).toBe(found.logs.length);
  });

  it('filters by level, time, text, status and method', async () => {
    const errors = await logs('level=ERROR&limit=1000');
    expect(errors.logs.every((entry: any) => entry.levelname === 'ERROR')).toBe(true);
    expect(errors.logs.some((entry: any) => entry.request_id === failedId)).toBe(true);
    const infos = await logs('level=info&limit=1000');
    expect(infos.logs.every((entry: any) => entry.levelname === 'INFO')).toBe(true);
    expect(infos.logs.some((entry: any) => entry.request_id === okId)).toBe(true);
    expect(infos.logs.some((entry: any) => entry.request_id === failedId && entry.status_code === 500)).toBe(false);

    const later = await logs(`from=${between}&limit=1000`);
    expect(later.logs.some((entry: any) => entry.request_id === failedId)).toBe(true);
    expect(later.logs.some((entry: any) => entry.request_id === okId)).toBe(false);
    const earlier = await logs(`to=${new Date(between).toISOString()}&limit=1000`);
    expect(earlier.logs.some((entry: any) => entry.request_id === okId)).toBe(true);
    expect(earlier.logs.some((entry: any) => entry.request_id === failedId)).toBe(false);

    const text = await logs('search=CHAT/COMPLETIONS&status_codes=200&methods=post');
    expect(text.logs.map((entry: any) => entry.request_id)).toEqual([okId]);

    // Newest first, at most `limit`.
    const two = await logs('limit=2');
    expect(two.logs).toHaveLength(2);
    expect(two.logs[0].time).toBeGreaterThanOrEqual(two.logs[1].time);
    expect((await logs(`date=${today()}&request_id=${okId}`)).logs.length).toBeGreaterThanOrEqual(1);
    expect((await logs(`date=2001-01-01&request_id=${okId}`)).logs).toHaveLength(0);
  });

  it('keeps no secret: the key and the query secret are in no stored file', async () => {
    const stored = readdirSync(dir)
      .map((name) => readFileSync(join(dir, name), 'utf8'))
      .join('');
    expect(stored).toContain(okId);
    expect(stored).not.toContain(key);
    expect(stored).not.toContain('sekrit-query-value');
  });

  it("merges another process's file by time, and lists the dates", async () => {
    const line = { level: 50, time: Date.now() + 60_000, pid: 999_999, reqId: 'other-process', msg: 'from a worker' };
    writeFileSync(join(dir, `app_${today()}.p999999.0.log`), `${JSON.stringify(line)}\n`);
    const found = await logs('level=ERROR');
    expect(found.logs[0]).toMatchObject({ request_id: 'other-process', message: 'from a worker' });
    const dates = await request(`${node.url}/admin/api/logs/dates`, 'GET', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(dates.json.dates).toEqual([today()]);
  });
});

describe('the log store stays within its bounds', () => {
  it('rotates parts of at most LOG_FILE_MAX_BYTES and deletes the oldest beyond LOG_MAX_BYTES', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quartet-logs-'));
    const fileMax = 8192;
    const totalMax = 32768;
    const node = await startNode('sqlite', {
      env: {
        LOG_LEVEL: 'info',
        LOG_DIR: dir,
        LOG_FILE_MAX_BYTES: String(fileMax),
        LOG_MAX_BYTES: String(totalMax),
        PROXY_ADMIN_PASSWORD: PASSWORD,
      },
    });
    try {
      const first = await request(`${node.url}/healthz`);
      const firstId = first.headers.get('x-request-id')!;
      let lastId = '';
      for (let i = 0; i < 400; i++) lastId = (await request(`${node.url}/healthz`)).headers.get('x-request-id')!;
      const token = await login(node);
      const search = async (id: string) =>
        (
          await request(`${node.url}/admin/api/logs?request_id=${id}`, 'GET', {
            headers: { authorization: `Bearer ${token}` },
          })
        ).json;
      expect((await search(lastId)).logs).toHaveLength(1);
      expect((await search(firstId)).logs).toHaveLength(0); // its part was deleted
      const files = readdirSync(dir);
      expect(files.length).toBeGreaterThan(1);
      const sizes = files.map((name) => statSync(join(dir, name)).size);
      for (const size of sizes) expect(size).toBeLessThanOrEqual(fileMax);
      expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(totalMax + fileMax);
      for (const name of files) expect(name).toMatch(new RegExp(`^app_${today()}\\.p${process.pid}\\.\\d+\\.log$`));
    } finally {
      await node.close();
    }
  }, 60_000);

  it('a directory that cannot be written loses lines, counted, never the node', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'quartet-logs-'));
    const blocker = join(parent, 'not-a-directory');
    writeFileSync(blocker, 'x');
    const node = await startNode('sqlite', {
      env: { LOG_LEVEL: 'info', LOG_DIR: join(blocker, 'logs'), PROXY_ADMIN_PASSWORD: PASSWORD },
    });
    try {
      for (let i = 0; i < 5; i++) expect((await request(`${node.url}/healthz`)).status).toBe(200);
      const token = await login(node);
      const answer = await request(`${node.url}/admin/api/logs`, 'GET', {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(200);
      expect(answer.json.logs).toEqual([]);
      expect(answer.json.dropped_lines).toBeGreaterThanOrEqual(5);
    } finally {
      await node.close();
    }
  }, 60_000);
});
