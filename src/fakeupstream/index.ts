// An OpenAI-compatible upstream for tests, the demo and the benchmark: chat completions (JSON and
// SSE), completions, embeddings, responses and the model list, with usage computed
// deterministically from the prompt and max_tokens, and faults switched on demand (slow, hang,
// errors, connection reset mid-stream, stream without usage). Development tool: no model behind it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { field, isRecord } from '../json-fields.js';

export interface FakeUpstreamFaults {
  /** Wait this long before answering any request. */
  delayMs: number;
  /** Accept requests and never answer them. */
  hang: boolean;
  /** Answer every model request with this error status (500, 429…) instead of a completion. */
  status: number | null;
  /** Destroy the connection after this many stream events. */
  resetAfterChunks: number | null;
  /** Announce a JSON answer's whole length, send its first half, then destroy the connection. */
  cutJsonAnswer: boolean;
  /**
   * Report no usage: streams without the usage chunk even when `stream_options.include_usage`
   * asks for it, JSON answers without `usage`.
   */
  omitUsage: boolean;
  /**
   * JSON text sent as the `usage` value instead of the computed one (JSON answers, the usage
   * chunk, the responses API's `response.usage`): a lying or broken upstream, e.g.
   * `{"prompt_tokens":1e15,"completion_tokens":-3}` or `"lots"`.
   */
  usage: string | null;
  /** Pause between stream events. */
  chunkDelayMs: number;
  /** Fixed completion length in tokens (still capped by max_tokens). */
  completionTokens: number | null;
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the raw text of any other body. */
  body: unknown;
  at: number;
}

/** Counters of connections' fates, for tests of a client (the proxy node) that gives up. */
export interface FakeUpstreamStats {
  /** Requests that arrived (counted before their body is read). */
  received: number;
  /** Requests being answered right now, and the most there were at once. */
  open: number;
  maxOpen: number;
  /** Requests whose connection closed before their answer was complete (the client gave up, or a reset fault). */
  closedEarly: number;
}

export interface FakeUpstream {
  url: string;
  port: number;
  faults: FakeUpstreamFaults;
  /** The most recent requests, oldest first (at most `maxRecorded`). */
  requests: RecordedRequest[];
  stats: FakeUpstreamStats;
  /** Puts every fault back to its default. */
  resetFaults(): void;
  /** Sets every counter of `stats` to zero (`open` stays: those requests are still open). */
  resetStats(): void;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  port?: number;
  host?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  maxRecorded?: number;
}

export const FAKE_MODELS = [
  'openai/gpt-4o-mini',
  'openai/gpt-4o',
  'meta-llama/llama-3.1-8b-instruct',
  'openai/text-embedding-3-small',
];

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore ' +
  'magna aliqua'
).split(' ');

/** Tokens of a text: one per started group of four UTF-8 bytes (a stable stand-in for a tokenizer). */
export function countTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

/** Prompt tokens of a chat request: each message's text plus four tokens of framing, plus three. */
export function chatPromptTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  const contentOf = (message: unknown) => (message as { content?: unknown } | null)?.content;
  return messages.reduce((sum: number, message: unknown) => sum + countTokens(textOf(contentOf(message))) + 4, 3);
}

/** Completion length: derived from the prompt so that it is stable, capped by max_tokens. */
export function completionLength(
  promptTokens: number,
  maxTokens: unknown,
  fixed: number | null,
): { n: number; finish: 'stop' | 'length' } {
  const wanted = fixed ?? 5 + (promptTokens % 11);
  if (typeof maxTokens === 'number' && maxTokens >= 0 && maxTokens < wanted) return { n: maxTokens, finish: 'length' };
  return { n: wanted, finish: 'stop' };
}

const defaultFaults = (): FakeUpstreamFaults => ({
  delayMs: 0,
  hang: false,
  status: null,
  resetAfterChunks: null,
  cutJsonAnswer: false,
  omitUsage: false,
  chunkDelayMs: 0,
  completionTokens: null,
  usage: null,
});

/** Stands for the usage in an answer's JSON until `faults.usage` replaces it. */
const USAGE_MARKER = '\u0000fake-usage\u0000';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const faults = defaultFaults();
  const requests: RecordedRequest[] = [];
  const maxRecorded = options.maxRecorded ?? 1000;
  let counter = 0;
  const stats: FakeUpstreamStats = { received: 0, open: 0, maxOpen: 0, closedEarly: 0 };

  /** An answer's JSON text, with the usage faults applied to every usage it reports. */
  const encode = (value: unknown): string => {
    if (!faults.omitUsage && faults.usage === null) return JSON.stringify(value);
    const replaced = faults.omitUsage ? undefined : USAGE_MARKER;
    const text = JSON.stringify(value, (key, v) => (key === 'usage' && v !== null ? replaced : v));
    return faults.usage === null ? text : text.split(JSON.stringify(USAGE_MARKER)).join(faults.usage);
  };
  const sendAnswer = (res: ServerResponse, body: unknown) => {
    const text = encode(body);
    if (!faults.cutJsonAnswer) return sendJson(res, 200, body, text);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.write(text.slice(0, text.length >> 1), () => res.destroy());
  };

  const server = createServer((req, res) => {
    stats.received++;
    stats.maxOpen = Math.max(stats.maxOpen, ++stats.open);
    res.once('close', () => {
      stats.open--;
      if (!res.writableFinished) stats.closedEarly++;
    });
    handle(req, res).catch((error) => {
      if (!res.headersSent) {
        sendJson(res, 500, { error: { message: String(error?.message ?? error), type: 'server_error', code: null } });
      } else res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === '/debug/echo') return echo(req, res);
    const raw = await readBody(req);
    const body = parseBody(raw, req.headers['content-type']);
    requests.push({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: { ...req.headers },
      body,
      at: Date.now(),
    });
    if (requests.length > maxRecorded) requests.splice(0, requests.length - maxRecorded);

    if (faults.hang) return; // the socket stays open until the client or close() gives up
    if (faults.delayMs > 0) await sleep(faults.delayMs);
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendJson(res, 401, {
        error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
      });
    }
    if (url.pathname === '/debug/stream') {
      return slowStream(res, Number(url.searchParams.get('n') ?? 3), Number(url.searchParams.get('delay') ?? 20));
    }
    const modelEntry = (id: string) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake-upstream' });
    if ((req.method === 'GET' || req.method === 'HEAD') && url.pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: FAKE_MODELS.map(modelEntry) });
    }
    // One model (OpenAI's GET /v1/models/{model}): a free path the proxy node forwards.
    const modelId = url.pathname.startsWith('/v1/models/') ? url.pathname.slice('/v1/models/'.length) : null;
    if ((req.method === 'GET' || req.method === 'HEAD') && modelId !== null && FAKE_MODELS.includes(modelId)) {
      return sendJson(res, 200, modelEntry(modelId));
    }
    const route = req.method === 'POST' ? MODEL_ROUTES[url.pathname] : undefined;
    if (!route) {
      return sendJson(res, 404, {
        error: {
          message: `Unknown path ${req.method} ${url.pathname}`,
          type: 'invalid_request_error',
          code: 'not_found',
        },
      });
    }
    if (faults.status !== null) {
      const status = faults.status;
      if (status === 429) res.setHeader('retry-after', '1');
      return sendJson(res, status, {
        error: {
          message: `fake upstream answers ${status}`,
          type: status === 429 ? 'rate_limit_error' : 'server_error',
          code: null,
        },
      });
    }
    if (!isRecord(body) || typeof body.model !== 'string') {
      return sendJson(res, 400, {
        error: { message: 'you must provide a model parameter', type: 'invalid_request_error', code: null },
      });
    }
    const id = `fake-${++counter}`;
    return route(body, res, id);
  }

  const MODEL_ROUTES: Record<
    string,
    (body: Record<string, unknown>, res: ServerResponse, id: string) => Promise<void> | void
  > = {
    '/v1/chat/completions': (body, res, id) => {
      const promptTokens = chatPromptTokens(body.messages);
      const maxTokens = body.max_completion_tokens ?? body.max_tokens;
      const { n, finish } = completionLength(promptTokens, maxTokens, faults.completionTokens);
      const words = generate(n);
      const usage = chatUsage(promptTokens, n);
      const base = { id: `chatcmpl-${id}`, created: Math.floor(Date.now() / 1000), model: body.model };
      if (body.stream !== true) {
        return sendAnswer(res, {
          ...base,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: words.join(''), refusal: null },
              logprobs: null,
              finish_reason: finish,
            },
          ],
          usage,
        });
      }
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
        ...base,
        object: 'chat.completion.chunk',
        choices,
        ...extra,
      });
      const events = [
        chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
        ...words.map((word) => chunk([{ index: 0, delta: { content: word }, logprobs: null, finish_reason: null }])),
        chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]),
      ];
      return streamEvents(res, events, body, chunk([], { usage }));
    },
    '/v1/completions': (body, res, id) => {
      const prompts = Array.isArray(body.prompt) ? body.prompt : [body.prompt ?? ''];
      const promptTokens = prompts.reduce(
        (sum: number, p: unknown) => sum + countTokens(typeof p === 'string' ? p : JSON.stringify(p)),
        0,
      );
      const { n, finish } = completionLength(promptTokens, body.max_tokens ?? 16, faults.completionTokens);
      const words = generate(n);
      const usage = { prompt_tokens: promptTokens, completion_tokens: n, total_tokens: promptTokens + n };
      const base = {
        id: `cmpl-${id}`,
        object: 'text_completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
      };
      if (body.stream !== true) {
        const choices = [{ index: 0, text: words.join(''), logprobs: null, finish_reason: finish }];
        return sendAnswer(res, { ...base, choices, usage });
      }
      const events = words.map((word, i) => ({
        ...base,
        choices: [{ index: 0, text: word, logprobs: null, finish_reason: i === words.length - 1 ? finish : null }],
      }));
      return streamEvents(res, events, body, { ...base, choices: [], usage });
    },
    '/v1/embeddings': (body, res) => {
      const inputs: unknown[] =
        Array.isArray(body.input) && typeof body.input[0] !== 'number' ? body.input : [body.input ?? ''];
      const promptTokens = inputs.reduce(
        (sum: number, input) => sum + (Array.isArray(input) ? input.length : countTokens(String(input))),
        0,
      );
      const data = inputs.map((input, index) => {
        const vector = embed(typeof input === 'string' ? input : JSON.stringify(input));
        const embedding =
          body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
        return { object: 'embedding', index, embedding };
      });
      const usage = { prompt_tokens: promptTokens, total_tokens: promptTokens };
      return sendAnswer(res, { object: 'list', data, model: body.model, usage });
    },
    '/v1/responses': (body, res, id) => {
      const input = typeof body.input === 'string' ? body.input : JSON.stringify(body.input ?? '');
      const inputTokens =
        countTokens(input) + (typeof body.instructions === 'string' ? countTokens(body.instructions) : 0);
      const { n } = completionLength(inputTokens, body.max_output_tokens, faults.completionTokens);
      const text = generate(n).join('');
      const usage = {
        input_tokens: inputTokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: n,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: inputTokens + n,
      };
      const response = {
        id: `resp_${id}`,
        object: 'response',
        created_at: Math.floor(Date.now() / 1000),
        status: 'completed',
        model: body.model,
        output: [
          {
            type: 'message',
            id: `msg_${id}`,
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text, annotations: [] }],
          },
        ],
        usage,
      };
      if (body.stream !== true) return sendAnswer(res, response);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      const delta = JSON.stringify({ type: 'response.output_text.delta', delta: text });
      res.write(`event: response.output_text.delta\ndata: ${delta}\n\n`);
      const completed = faults.omitUsage ? { ...response, usage: null } : response;
      res.end(`event: response.completed\ndata: ${encode({ type: 'response.completed', response: completed })}\n\n`);
    },
    // Anthropic's Messages API: usage as input/output tokens (cache tokens apart), and in a stream
    // the input in message_start, the final output count in message_delta, then message_stop.
    '/v1/messages': async (body, res, id) => {
      const system = typeof body.system === 'string' ? body.system : JSON.stringify(body.system ?? '');
      const inputTokens = chatPromptTokens(body.messages) + (body.system ? countTokens(system) : 0);
      const { n, finish } = completionLength(inputTokens, body.max_tokens, faults.completionTokens);
      const words = generate(n);
      const stopReason = finish === 'length' ? 'max_tokens' : 'end_turn';
      const usage = { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
      const message = { id: `msg_${id}`, type: 'message', role: 'assistant', model: body.model };
      if (body.stream !== true) {
        return sendAnswer(res, {
          ...message,
          content: [{ type: 'text', text: words.join('') }],
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { ...usage, output_tokens: n },
        });
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      const send = (event: Record<string, unknown>) => res.write(`event: ${event.type}\ndata: ${encode(event)}\n\n`);
      send({
        type: 'message_start',
        message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
      });
      send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      for (const word of words) {
        if (res.destroyed) return;
        send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } });
        if (faults.chunkDelayMs > 0) await sleep(faults.chunkDelayMs);
      }
      send({ type: 'content_block_stop', index: 0 });
      send({
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: n },
      });
      res.end(`event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop' })}\n\n`);
    },
  };

  /** Writes SSE events, the usage chunk when asked for (and not faulted away), then [DONE]. */
  async function streamEvents(
    res: ServerResponse,
    events: Record<string, unknown>[],
    body: Record<string, unknown>,
    usageChunk: Record<string, unknown>,
  ) {
    const includeUsage = field(body.stream_options, 'include_usage') === true;
    // Like OpenAI: with include_usage every other chunk says `usage: null`.
    const all: Record<string, unknown>[] = includeUsage
      ? events.map((event) => ({ ...event, usage: null }))
      : [...events];
    if (includeUsage && !faults.omitUsage) all.push(usageChunk);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    let sent = 0;
    for (const event of all) {
      if (faults.resetAfterChunks !== null && sent >= faults.resetAfterChunks) {
        // Let what was written reach the client first, then break the connection.
        await new Promise<void>((resolve) => res.write('', () => resolve()));
        res.socket?.destroy();
        return;
      }
      if (res.destroyed) return;
      res.write(`data: ${encode(event)}\n\n`);
      sent++;
      if (faults.chunkDelayMs > 0) await sleep(faults.chunkDelayMs);
    }
    res.end('data: [DONE]\n\n');
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () =>
      resolve((server.address() as AddressInfo).port),
    );
  });

  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    faults,
    requests,
    stats,
    resetFaults: () => Object.assign(faults, defaultFaults()),
    resetStats: () => Object.assign(stats, { received: 0, maxOpen: stats.open, closedEarly: 0 }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function chatUsage(promptTokens: number, completionTokens: number) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** `n` tokens of text, one word each (the first without a leading space). */
function generate(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? '' : ' ') + WORDS[i % WORDS.length]);
}

/** A small deterministic unit vector for a text. */
function embed(text: string): number[] {
  const vector = Array.from({ length: 8 }, (_, i) => {
    let h = 2166136261 ^ i;
    for (let j = 0; j < text.length; j++) h = Math.imul(h ^ text.charCodeAt(j), 16777619);
    return ((h >>> 0) % 2000) / 1000 - 1;
  });
  const norm = Math.hypot(...vector) || 1;
  return vector.map((v) => Math.round((v / norm) * 1e6) / 1e6);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseBody(raw: string, contentType: string | undefined): unknown {
  if (!raw) return undefined;
  if (contentType?.includes('json')) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}

function sendJson(res: ServerResponse, status: number, body: unknown, text = JSON.stringify(body)) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Streams the request body straight back, so a test can see bodies flow both ways. */
function echo(req: IncomingMessage, res: ServerResponse) {
  res.writeHead(200, {
    'content-type': req.headers['content-type'] ?? 'application/octet-stream',
    'x-echo-method': req.method ?? '',
    'x-echo-url': req.url ?? '',
    'x-echo-headers': Buffer.from(JSON.stringify(req.headers)).toString('base64'),
  });
  req.pipe(res);
}

/** `n` lines, `delay` ms apart: a response a client sees arriving piece by piece. */
async function slowStream(res: ServerResponse, n: number, delay: number) {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  for (let i = 0; i < n && !res.destroyed; i++) {
    res.write(`line ${i} ${Date.now()}\n`);
    await sleep(delay);
  }
  res.end();
}
