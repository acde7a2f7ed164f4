// Helpers of the tests of callers who leave and of the upstream limit (disconnect.test.ts,
// many-streams.test.ts): an OpenAI-compatible upstream that holds every request until the test
// answers it, so that what is in flight at a given moment is the test's choice, not a timer's;
// callers on connections of their own that can leave at any point; the node's upstream gauges.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatBody, type Node } from './forward-helpers.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** One request the upstream received (with its whole body) and holds until it is answered. */
export interface HeldRequest {
  method: string;
  url: string;
  /** The parsed JSON body (undefined for none or not JSON). */
  body: any;
  /** Answers with this status and JSON (or nothing, for HEAD). */
  answer(status: number, json?: unknown): void;
  /** Answers a chat completion as JSON, with this usage. */
  answerChat(usage: Usage): void;
  /** Sends the headers and the first event of a streamed chat completion. */
  startStream(): void;
  /** Sends the last content event, the usage event and `[DONE]`, and ends the stream. */
  endStream(usage: Usage): void;
  /** Resolves when the connection closed; `true` when that was before the answer was complete. */
  closed: Promise<boolean>;
}

export interface HoldingUpstream {
  url: string;
  /** Every request received, in order of arrival. */
  held: HeldRequest[];
  /** Requests whose answer is not complete and whose connection is open; and the most at once. */
  open: number;
  maxOpen: number;
  /** Resolves once `count` requests have been received. */
  received(count: number): Promise<HeldRequest[]>;
  close(): Promise<void>;
}

const chunk = (fields: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-held', object: 'chat.completion.chunk', model: 'held', ...fields })}\n\n`;
const withTotal = (usage: Usage) => ({ ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens });

export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const waiting: { count: number; resolve: (held: HeldRequest[]) => void }[] = [];
  const upstream: HoldingUpstream = {
    url: '',
    held: [],
    open: 0,
    maxOpen: 0,
    received(count) {
      if (upstream.held.length >= count) return Promise.resolve(upstream.held);
      return new Promise((resolve) => waiting.push({ count, resolve }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const part of req) chunks.push(part as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    upstream.open++;
    upstream.maxOpen = Math.max(upstream.maxOpen, upstream.open);
    const closed = new Promise<boolean>((resolve) =>
      res.once('close', () => {
        upstream.open--;
        resolve(!res.writableFinished);
      }),
    );
    upstream.held.push(held(req, res, body, closed));
    for (const wait of [...waiting]) {
      if (upstream.held.length < wait.count) continue;
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve(upstream.held);
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

function held(req: IncomingMessage, res: ServerResponse, body: any, closed: Promise<boolean>): HeldRequest {
  const json = (status: number, value?: unknown) => {
    const out = value === undefined ? '' : JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(req.method === 'HEAD' ? undefined : out);
  };
  return {
    method: req.method!,
    url: req.url!,
    body,
    closed,
    answer: json,
    answerChat(usage) {
      json(200, {
        id: 'chatcmpl-held',
        object: 'chat.completion',
        model: 'held',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Held, then answered.' }, finish_reason: 'stop' }],
        usage: withTotal(usage),
      });
    },
    startStream() {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Held, ' } }] }));
    },
    endStream(usage) {
      res.write(chunk({ choices: [{ index: 0, delta: { content: 'then answered.' }, finish_reason: 'stop' }] }));
      res.write(chunk({ choices: [], usage: withTotal(usage) }));
      res.end('data: [DONE]\n\n');
    },
  };
}

/**
 * A chat completion, paid by an API key or an X-Cashu token (`live`: a stream passed on live), on a
 * connection of its own, which
 * `leave()` closes as a caller who gives up does (fetch's abort may keep the connection and read
 * on); `done()` reads the answer whole and resolves with it, or with the error of a connection
 * that was closed.
 */
export function sendChat(
  node: Node,
  credential: string | { xCashu: string; live?: boolean },
  extra: Record<string, unknown> = {},
) {
  const payload = Buffer.from(JSON.stringify(chatBody(extra)));
  const paying =
    typeof credential === 'string'
      ? { authorization: `Bearer ${credential}` }
      : { 'x-cashu': credential.xCashu, ...(credential.live ? { 'x-cashu-stream': 'live' } : {}) };
  const request = httpRequest(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...paying, 'content-type': 'application/json', 'content-length': payload.length },
    agent: false,
  });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    request.on('response', resolve).on('error', reject);
  });
  response.catch(() => {}); // a test that leaves may never look at it
  request.end(payload);
  const done = () =>
    response
      .then(async (answer) => {
        const chunks: Buffer[] = [];
        for await (const part of answer) chunks.push(part as Buffer);
        return { status: answer.statusCode!, headers: answer.headers, text: Buffer.concat(chunks).toString('utf8') };
      })
      .catch((error: Error) => error);
  /** Resolves once the first bytes of the answer's body have arrived (and leaves them to `done()`). */
  const firstByte = () =>
    response.then(
      (answer) =>
        new Promise<void>((resolve) =>
          answer.once('data', (part: Buffer) => {
            answer.pause();
            answer.unshift(part);
            resolve();
          }),
        ),
    );
  return { done, firstByte, leave: () => request.destroy() };
}

/** A gauge or counter of the node's /metrics (the sum of its series matching `labels`, e.g. `reason="full"`). */
export async function metric(node: Node, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const [series, value] = line.split(' ');
    if (series === name || series.startsWith(`${name}{`)) sum += Number(value);
  }
  return sum;
}
