// Deeply nested input: a body of a few KB nested thousands of levels once overflowed the stack
// (a 500). Every area refuses JSON nested deeper than 128 levels in its own error shape, before
// anything is charged or stored. An upstream answer nested that deep gets its cost inserted into its
// text, or, where it must be serialized again (a usage.cost of its own to replace), is passed on as it came.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonTextDeeperThan, nestedDeeperThan } from '../../src/http/json-depth.js';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { Client, QUOTES_ENV } from '../quotes/helpers.js';
import { chatBody, startNode, testCost, TEST_MODEL, type Node } from '../proxy/forward-helpers.js';

/** JSON text of `levels` nested arrays (2 bytes a level). */
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
/** A chat body whose whole nesting is `depth` levels (the body object is the first). */
const chatText = (depth: number) => JSON.stringify(chatBody()).slice(0, -1) + `,"metadata":${nested(depth - 1)}}`;
const DEEP = 6000; // 12 KB

function expectNoStackTrace(text: string) {
  expect(text).not.toMatch(/\n\s+at |RangeError|Maximum call stack/);
}

/** A GET with a JSON body (fetch cannot send one): the users and tasks API reads GET parameters from a body too. */
function getWithBody(url: string, text: string, headers: Record<string, string>) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const length = Buffer.byteLength(text);
    const options = {
      method: 'GET',
      headers: { 'content-type': 'application/json', 'content-length': length, ...headers },
    };
    const sent = request(url, options, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, text: body }));
    });
    sent.on('error', reject);
    sent.end(text);
  });
}

async function post(url: string, text: string, headers: Record<string, string> = {}) {
  const init = { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text };
  const response = await fetch(url, init);
  const body = await response.text();
  expectNoStackTrace(body);
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, type, headers: response.headers, text: body, json: JSON.parse(body) };
}

const TOO_DEEP = { loc: ['body'], msg: 'JSON nested deeper than 128 levels', type: 'json_too_deep' };

describe.each(databaseKinds)('deeply nested JSON on %s', (kind) => {
  let node: Node;
  openForSuite(
    () => startNode(kind, { env: { ...QUOTES_ENV, SERVICES: 'proxy,tasks,quotes' } }),
    (opened) => (node = opened),
  );

  it("proxy node: a billed body nested too deep is a 422 in FastAPI's shape, credential or not", async () => {
    const key = await node.account(1_000_000);
    const seen = node.upstream.requests.length;
    for (const path of ['/v1/chat/completions', '/v1/embeddings']) {
      for (const headers of [{}, { authorization: `Bearer ${key}` }] as Record<string, string>[]) {
        const answer = await post(`${node.url}${path}`, chatText(DEEP), headers);
        expect(answer.status).toBe(422);
        expect(answer.json).toEqual({ detail: [TOO_DEEP] });
      }
    }
    expect(node.upstream.requests.length).toBe(seen);
    expect(await node.balance(key)).toEqual({ balance: 1_000_000, reserved: 0, spent: 0, requests: 0 });
    expect(await node.ledger()).toEqual([]);
  });

  it('proxy node: 128 levels are forwarded and billed, 129 are refused', async () => {
    const key = await node.account(1_000_000);
    const auth = { authorization: `Bearer ${key}` };
    const ok = await post(`${node.url}/v1/chat/completions`, chatText(128), auth);
    expect(ok.status).toBe(200);
    expect((node.upstream.requests.at(-1)!.body as any).metadata).toEqual(JSON.parse(nested(127)));
    expect(Number(ok.json.cost.total_msat)).toBe(testCost(ok.json.usage));
    const refused = await post(`${node.url}/v1/chat/completions`, chatText(129), auth);
    expect(refused.status).toBe(422);
    expect(refused.json).toEqual({ detail: [TOO_DEEP] });
  });

  it('users and tasks API: POST /api/users/register answers 400 problem+json', async () => {
    const person = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test', username: 'ada' };
    const text = JSON.stringify(person).slice(0, -1) + `,"password":"a long password 123","extra":${nested(DEEP)}}`;
    const answer = await post(`${node.url}/api/users/register`, text);
    expect(answer.status).toBe(400);
    expect(answer.type).toContain('application/problem+json');
    const field = { field: 'body', in: 'body', message: TOO_DEEP.msg, type: TOO_DEEP.type };
    expect(answer.json).toMatchObject({ status: 400, errors: [field] });

    // GET parameters may come in a body, read by hand: the same limit.
    const { token } = await Client.create(node.url);
    const image = await getWithBody(`${node.url}/api/users/getimage`, `{"email":${nested(DEEP)}}`, {
      authorization: `Bearer ${token}`,
    });
    expectNoStackTrace(image.text);
    expect(image.status).toBe(400);
    expect(JSON.parse(image.text)).toMatchObject({ errors: [{ field: 'body', type: TOO_DEEP.type }] });
  });

  it("quotation API: POST /1/projects answers 400 in OneSky's shape", async () => {
    const client = await Client.create(node.url);
    const text = `{"name":"deep","base_locale":"en-US","target_locales":${nested(DEEP)}}`;
    const answer = await post(`${node.url}${client.signed('/1/projects')}`, text);
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ meta: { status: 400, message: `body: ${TOO_DEEP.msg}` }, data: {} });
  });

  it('quotation API: a YAML upload nested deeper than its tree may be fails its import, clearly', async () => {
    const client = await Client.create(node.url);
    const project = await client.createProject();
    const blocks = Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i + 1)}k:`).join('\n');
    for (const yaml of [`en: ${nested(DEEP)}`, `en:\n${blocks} x\n`]) {
      const task = await client.importFile(project, 'deep.yml', yaml, 'YAML');
      expect(task).toMatchObject({ status: 'failed', message: 'YAML nesting deeper than 64 levels' });
    }
  });
});

describe.each(databaseKinds)('an upstream answer nested too deep on %s', (kind) => {
  let node: Node;
  let upstream: Server;
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
  const shallow = { id: 'deep', object: 'chat.completion', model: TEST_MODEL, choices: [], usage };
  // With an integer JSON.parse cannot hold exactly: the caller gets the upstream's digits.
  const deepText = (value: object) =>
    JSON.stringify(value).slice(0, -1) + `,"seed":123456789012345678901234567890,"x":${nested(DEEP)}}`;
  const answer = deepText(shallow);
  // OpenRouter's usage carries a cost of its own (USD), which the node's replaces.
  const withUpstreamCost = deepText({ ...shallow, usage: { ...usage, cost: 0.0001 } });
  beforeAll(async () => {
    upstream = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const { stream, user } = JSON.parse(body);
        const text = user === 'openrouter' ? withUpstreamCost : answer;
        response.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        response.end(stream ? `data: ${text}\n\ndata: [DONE]\n\n` : text);
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as AddressInfo;
    node = await startNode(kind, { env: { PROXY_UPSTREAM_URL: `http://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await node?.close();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  it('gets its cost in its text or is passed on unchanged, billed from its usage, JSON and streamed', async () => {
    const key = await node.account(1_000_000);
    const headers = { authorization: `Bearer ${key}` };
    const chat = (body: Record<string, unknown>) =>
      fetch(`${node.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
    const cost = testCost(usage);

    const json = await chat(chatBody());
    expect(json.status).toBe(200);
    const text = await json.text();
    const costJson = JSON.stringify(JSON.parse(text).cost);
    expect(JSON.parse(costJson)).toMatchObject({ total_msat: cost, total_msats: cost });
    const usageText = JSON.stringify(usage).slice(0, -1);
    expect(text).toBe(
      answer.replace(usageText, `${usageText},"cost":${costJson}`).slice(0, -1) + `,"cost":${costJson}}`,
    );
    expect(Number(json.headers.get('x-cashu-cost-msat'))).toBe(cost);

    const replaced = await chat(chatBody({ user: 'openrouter' }));
    expect(await replaced.text()).toBe(withUpstreamCost);
    expect(Number(replaced.headers.get('x-cashu-cost-msat'))).toBe(cost);

    const stream = await chat(chatBody({ stream: true }));
    expect(stream.status).toBe(200);
    expect(await stream.text()).toBe(`data: ${answer}\n\ndata: [DONE]\n\n`);
    const spent = 3 * cost;
    expect(await node.balance(key)).toEqual({ balance: 1_000_000 - spent, reserved: 0, spent, requests: 3 });
  });
});

describe('the depth of JSON text read from its bytes', () => {
  it('agrees with the walk of the parsed value, brackets inside strings and escapes included', () => {
    const texts = [
      nested(128),
      nested(129),
      `{"a":"${'['.repeat(300)}","b":${nested(100)}}`,
      `{"a":"\\"${'{'.repeat(300)}\\\\","b":${nested(129)}}`,
      `["\\\\",${nested(128)}]`,
      `["\\\\\\"[[[",${nested(127)}]`,
      `{"é${'x'.repeat(300)}":{"k":[{"v":${nested(126)}}]}}`,
      JSON.stringify({ messages: [{ role: 'user', content: '}]'.repeat(200) }], n: 1 }),
      `{"s":"😀\\"[[{${'x'.repeat(300)}","n":${nested(127)}}`,
      // Long, with few brackets: answered without the byte-by-byte walk.
      JSON.stringify({ content: 'x'.repeat(600), n: [1, [2, { deep: [[]] }]] }),
    ];
    for (const text of texts) {
      for (const max of [1, 2, 100, 128, 129]) {
        expect(jsonTextDeeperThan(text, max), `${text.slice(0, 40)}… at ${max}`).toBe(
          nestedDeeperThan(JSON.parse(text), max),
        );
      }
    }
  });
});
