// Odd but legal HTTP framing never drops a connection (issue 27): HEAD answered without a body
// whatever the status, GET with a body, Expect: 100-continue, pipelined requests; and a slowloris
// gets a 408 in its service's shape. Raw sockets, as no HTTP client sends all of these.
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Reads answers from a socket, one per request method in `methods` (a HEAD answer has no body, an
 * interim 1xx neither), until the count is read; resolves when the server closed or went silent.
 */
class AnswerReader {
  private buffer = Buffer.alloc(0);
  readonly answers: Answer[] = [];
  readonly closed: Promise<void>;
  private wake = () => {};

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    this.closed = once(socket, 'close').then(() => this.wake());
    socket.on('error', () => {});
  }

  /** The next answer to a request of `method`; null when the connection closed before it. */
  async next(method: string): Promise<Answer | null> {
    for (;;) {
      const answer = this.parse(method);
      if (answer) return answer;
      if (this.socket.destroyed) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private parse(method: string): Answer | null {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = method === 'HEAD' || status < 200 ? 0 : Number(headers['content-length'] ?? 0);
    if (this.buffer.length < end + 4 + length) return null;
    const body = this.buffer.subarray(end + 4, end + 4 + length).toString();
    this.buffer = this.buffer.subarray(end + 4 + length);
    const answer = { status, headers, body };
    if (status >= 200) this.answers.push(answer);
    return answer;
  }

  /** Whatever came after the answers read (nothing, when each answer had the framing it announced). */
  rest(): string {
    return this.buffer.toString();
  }
}

async function open(server: TestServer): Promise<{ socket: Socket; reader: AnswerReader }> {
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
  await once(socket, 'connect');
  return { socket, reader: new AnswerReader(socket) };
}

const head = (method: string, path: string, extra = '') => `${method} ${path} HTTP/1.1\r\nHost: test\r\n${extra}\r\n`;

describe('odd but legal framing', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers HEAD without a body whatever the status, routed or refused by a hook, on one connection', async () => {
    const requests: [string, string, number][] = [
      ['HEAD', '/healthz', 200],
      ['HEAD', '/api/users/all', 401],
      ['HEAD', '/api/nothing', 404],
      ['HEAD', '/1/projects', 401],
      ['HEAD', '/v1/wallet/', 422],
      ['GET', '/healthz', 200],
    ];
    const { socket, reader } = await open(server);
    // Pipelined, so that a body after any HEAD answer would be read as the next answer.
    socket.write(requests.map(([method, path]) => head(method, path)).join(''));
    for (const [method, path, status] of requests) {
      expect({ path, status: (await reader.next(method))?.status }).toEqual({ path, status });
    }
    expect(reader.answers.at(-1)!.body).toBe('{"status":"ok"}');
    expect(reader.rest()).toBe('');
    socket.destroy();
  });

  it("answers HEAD with headers too large by a 431 without a body, which Node's client reads", async () => {
    for (const path of ['/v1/models', '/api/users/login', '/1/projects/1/image']) {
      const request = httpRequest(`${server.url}${path}`, { method: 'HEAD', headers: { 'x-big': 'a'.repeat(17_000) } });
      request.end();
      const [response] = await once(request, 'response');
      expect(response.statusCode).toBe(431);
      response.resume();
      await once(response, 'end');
    }
    const { socket, reader } = await open(server);
    socket.write(head('HEAD', '/api/users/login', `X-Big: ${'a'.repeat(17_000)}\r\n`));
    expect((await reader.next('HEAD'))?.status).toBe(431);
    await reader.closed;
    expect(reader.rest()).toBe('');
  });

  it('answers pipelined requests in order, a GET with a body and an early-answered POST among them', async () => {
    const { socket, reader } = await open(server);
    socket.write(
      head('GET', '/healthz') +
        head('GET', '/readyz', 'Content-Length: 11\r\n') +
        'hello world' +
        head('POST', '/api/nothing', 'Content-Type: application/json\r\nContent-Length: 2\r\n') +
        '{}' +
        head('PROPFIND', '/1/projects', 'Content-Length: 5\r\n') +
        'abcde' +
        head('GET', '/healthz'),
    );
    const statuses = [];
    for (const method of ['GET', 'GET', 'POST', 'PROPFIND', 'GET']) statuses.push((await reader.next(method))?.status);
    expect(statuses).toEqual([200, 200, 404, 405, 200]);
    expect(JSON.parse(reader.answers[3].body)).toMatchObject({ meta: { status: 405 } });
    socket.destroy();
  });

  it('answers Expect: 100-continue with 100, then the answer; and a body too large with 413 after it', async () => {
    const { socket, reader } = await open(server);
    const body = '{"email":"x"}';
    socket.write(
      head(
        'POST',
        '/api/users/login',
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n`,
      ),
    );
    expect((await reader.next('POST'))?.status).toBe(100);
    socket.write(body);
    expect((await reader.next('POST'))?.status).toBe(400);

    const size = server.config.bodyLimit * 2;
    socket.write(
      head(
        'POST',
        '/api/users/register',
        `Content-Type: application/json\r\nContent-Length: ${size}\r\nExpect: 100-continue\r\n`,
      ),
    );
    const first = await reader.next('POST');
    if (first?.status === 100) socket.write(Buffer.alloc(size, 'x'));
    const refused = first?.status === 100 ? await reader.next('POST') : first;
    expect(refused?.status).toBe(413);
    expect(JSON.parse(refused!.body)).toMatchObject({ status: 413 });
    // The server closes after a 413 (it said so), once it has read the body: no reset.
    expect(refused!.headers.connection).toBe('close');
    await reader.closed;
  });

  // Node's timeout error carries none of the bytes read, so the proxy node's shape, as for any path
  // outside the local prefixes.
  it("answers a slowloris with 408 in the proxy node's shape once HEADERS_TIMEOUT_MS is over", async () => {
    const { socket, reader } = await open(server);
    socket.write('GET /v1/models HTTP/1.1\r\nHost: test\r\n');
    const dribble = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 100);
    try {
      const answer = await reader.next('GET');
      expect(answer?.status).toBe(408);
      const error = { message: 'The request took too long to arrive', type: 'invalid_request_error', code: null };
      expect(JSON.parse(answer!.body)).toEqual({ error, detail: { error } });
    } finally {
      clearInterval(dribble);
      socket.destroy();
    }
  });
});
