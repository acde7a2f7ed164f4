// The connection to one upstream provider: one undici Pool with connect, header and idle timeouts, behind
// the operator's limit on requests in flight and its queue; the caller's connection, whose leaving
// cancels the upstream request; the headers that cross in each direction; upstream failures mapped
// to 502/504.
import { EventEmitter } from 'node:events';
import { type IncomingHttpHeaders, IncomingMessage, type ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { HttpError } from '../../http/errors.js';
import type { MetricsRegistry } from '../../http/metrics.js';
import type { ForwardConfig } from '../common/forward-config.js';
import { headerIndex, type HeaderList, setHeaderList } from '../common/header-list.js';
import type { CancelSignal } from './cancel-signal.js';
import { type Release, UpstreamSlots } from './upstream-slots.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the node sets itself. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'http2-settings',
]);
/**
 * The caller's credentials and identity never reach the upstream (this node is anonymous by design), nor
 * what Routstr's clients tell the node alone: a refund address, a key's expiry, the X-Routstr-* headers.
 */
const CALLER_ONLY = new Set([
  'authorization',
  'x-cashu',
  'x-cashu-stream',
  'refund-lnurl',
  'key-expiry-time',
  'cookie',
  'x-api-key',
  'api_key',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
  'x-request-id',
]);
/** Routstr's clients address these to the node (docs/proxy-wallet.md#routstr-clients). */
const ROUTSTR_PREFIX = 'x-routstr-';
/** The node's cost headers on billed answers (docs/proxy-billing.md). */
export const COST_HEADERS = {
  total: 'x-cashu-cost-msat',
  input: 'x-cost-input-msat',
  output: 'x-cost-output-msat',
  request: 'x-cost-request-msat',
} as const;
/** Routstr's names for the cost, sent beside quartet's own (its clients read these). */
export const ROUTSTR_COST_HEADERS = {
  total: 'x-routstr-cost-msats',
  input: 'x-routstr-input-cost-msats',
  output: 'x-routstr-output-cost-msats',
  usd: 'x-routstr-cost-usd',
} as const;
/** The request's id as Routstr's clients read it (Fastify's request id). */
export const ROUTSTR_REQUEST_ID_HEADER = 'x-routstr-request-id';
export const RESERVED_HEADER = 'x-cashu-reserved-msat';
/** Headers of the upstream's answer the node replaces with its own. */
const NODE_OWNED = new Set([
  'x-cashu',
  ...Object.values(COST_HEADERS),
  ...Object.values(ROUTSTR_COST_HEADERS),
  ROUTSTR_REQUEST_ID_HEADER,
  RESERVED_HEADER,
  'set-cookie',
  'x-request-id',
  // As nginx does: the node's own Date (Node adds it), no Server naming the provider's software.
  'date',
  'server',
]);

/** What each direction drops, as one set (one lookup a header). */
const NOT_SENT_UPSTREAM = new Set([...HOP_BY_HOP, ...CALLER_ONLY]);
const NOT_PASSED_TO_CALLER = new Set([...HOP_BY_HOP, ...NODE_OWNED]);

const NO_TOKENS: ReadonlySet<string> = new Set();
/** The caller's body headers, replaced when the node sends a body of its own. */
const BODY_HEADERS = new Set(['content-length', 'content-encoding', 'accept-encoding', 'content-type']);

/** The header names a Connection header lists (RFC 9110 §7.6.1): not forwarded either. */
function connectionTokens(headers: IncomingHttpHeaders | Record<string, unknown>): ReadonlySet<string> {
  const value = headers.connection;
  // What nearly every client and server sends: nothing to list.
  if (value === undefined || value === 'keep-alive' || value === 'close') return NO_TOKENS;
  const list = Array.isArray(value) ? value.join(',') : typeof value === 'string' ? value : '';
  return new Set(
    list
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
}

/**
 * The caller's headers as sent upstream (as a list, see HeaderList); the provider's key is added
 * per attempt (../common/providers.ts).
 */
export function upstreamRequestHeaders(incoming: IncomingHttpHeaders, replaceBody?: { length: number }): HeaderList {
  const named = connectionTokens(incoming);
  const list: HeaderList = [];
  // Names, then each value: Object.entries makes an array a header.
  for (const name of Object.keys(incoming)) {
    const value = incoming[name];
    if (value === undefined || NOT_SENT_UPSTREAM.has(name) || (named !== NO_TOKENS && named.has(name))) continue;
    if (name.startsWith(ROUTSTR_PREFIX)) continue;
    if (replaceBody && BODY_HEADERS.has(name)) continue;
    list.push(name, value);
  }
  // The node reads billed answers (usage), so it asks for them uncompressed.
  if (replaceBody) {
    list.push('content-type', 'application/json', 'content-length', String(replaceBody.length));
    list.push('accept-encoding', 'identity');
  }
  return list;
}

/** The upstream's response headers as passed to the caller, as a list. */
export function callerResponseHeaderList(
  upstream: Record<string, string | string[] | undefined>,
  options: { dropLength?: boolean } = {},
): HeaderList {
  const named = connectionTokens(upstream);
  const list: HeaderList = [];
  for (const name of Object.keys(upstream)) {
    const value = upstream[name];
    if (value === undefined || NOT_PASSED_TO_CALLER.has(name) || (named !== NO_TOKENS && named.has(name))) continue;
    if (options.dropLength && (name === 'content-length' || name === 'content-encoding' || name === 'etag')) continue;
    list.push(name, value);
  }
  return list;
}

/** The upstream's response headers as passed to the caller, for reply.headers(). */
export function callerResponseHeaders(
  upstream: Record<string, string | string[] | undefined>,
  options: { dropLength?: boolean } = {},
): Record<string, string | string[]> {
  const list = callerResponseHeaderList(upstream, options);
  // Names come from the upstream: a null-prototype object, never a plain one.
  const headers: Record<string, string | string[]> = Object.create(null);
  for (let i = 0; i < list.length; i += 2) headers[list[i] as string] = list[i + 1];
  return headers;
}

/**
 * Sends a whole answer with one writeHead, past Fastify's reply.send: the headers the reply holds
 * (the request id, CORS, the node's own), then `headers` (lower-case names; a name in both is sent
 * with the value in `headers`, as reply.headers() would leave it), then the body's own length. A
 * text body leaves in one write with the head (Node joins them), a Buffer in a second one.
 * Through the reply, each header was lower-cased, stored and walked again: the nine cost headers
 * alone were 3.5% of a billed answer's instructions (bench/README.md, "Run S"). The onResponse hooks
 * (access log, metrics) run as for any answer; onSend hooks do not, so a request with a Refund-LNURL
 * address, which the proxy's onSend hook keeps before its answer goes (a refund asked right after
 * the answer finds it: lightning-routes.ts), is answered through reply.send.
 */
export function sendWhole(reply: FastifyReply, status: number, headers: HeaderList, body: Buffer | string): void {
  const length = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  if (reply.request.headers['refund-lnurl'] !== undefined) {
    setHeaderList(reply, headers);
    return void reply.code(status).header('content-length', length).send(body);
  }
  reply.hijack();
  const held = reply.getHeaders();
  const all: HeaderList = [];
  for (const name of Object.keys(held)) {
    const value = held[name];
    if (value !== undefined && headerIndex(headers, name) < 0) {
      all.push(name, typeof value === 'number' ? String(value) : value);
    }
  }
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== 'content-length') all.push(headers[i], headers[i + 1]);
  }
  all.push('content-length', length);
  const res = reply.raw;
  try {
    res.writeHead(status, all);
  } catch (error) {
    // A header value Node refuses (undici let it through from the upstream): the caller gets a cut answer.
    reply.log.error({ err: error }, 'the answer could not be written');
    return void res.destroy();
  }
  res.end(body);
}

/** What decides which providers may serve a request (upstreams.ts). */
export interface ProviderRoute {
  /** The normalized path, without its query. */
  path: string;
  /** The model of a billed request; null for paths without one. */
  model: string | null;
  /** The caller sent its key as `x-api-key` (an Anthropic-style client): the provider's key goes there too. */
  keyInXApiKey: boolean;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query of the caller's request (normalized), appended to the upstream URL's path. */
  pathAndQuery: string;
  headers: HeaderList;
  body?: Readable | Buffer | null;
  signal?: CancelSignal;
}

/**
 * The upstream's one origin, as a pool of kept-alive connections (an Agent's per-origin lookup is
 * not needed). The pool has no connection limit of its own, so no request ever waits in it for a
 * free connection (HTTP/1.1: one connection per live stream); the operator's limit
 * (PROXY_UPSTREAM_CONNECTIONS) and its queue are kept by `slots` (upstream-slots.ts).
 */
/** What one provider's connection is built from: its URL, the timeouts and the operator's limits. */
export type UpstreamTarget = Pick<
  ForwardConfig,
  | 'upstreamUrl'
  | 'connectTimeoutMs'
  | 'upstreamTimeoutMs'
  | 'upstreamConnections'
  | 'upstreamQueue'
  | 'upstreamQueueTimeoutMs'
>;

export class Upstream {
  private pool: Pool;
  private basePath: string;
  readonly slots: UpstreamSlots;

  constructor(config: UpstreamTarget, metrics?: MetricsRegistry) {
    const url = new URL(config.upstreamUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connect: { timeout: config.connectTimeoutMs },
      headersTimeout: config.upstreamTimeoutMs,
      bodyTimeout: config.upstreamTimeoutMs,
      connections: null,
      keepAliveTimeout: 30_000,
    });
    const { upstreamConnections: limit, upstreamQueue: queue, upstreamQueueTimeoutMs: queueTimeoutMs } = config;
    this.slots = new UpstreamSlots({ limit, queue, queueTimeoutMs }, metrics);
  }

  /** 503 with Retry-After when the operator's limit and its queue are both full. */
  checkCapacity(): void {
    this.slots.checkCapacity();
  }

  /**
   * Sends a request once it has a place under the operator's limit; failures to connect or to hear
   * back become 502/504 HttpErrors, no place 503, an aborted `signal` a 499 (a request whose
   * `signal` is aborted before it is sent, while queued say, is never sent).
   */
  async request(request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    let release: Release;
    try {
      const place = this.slots.acquire(request.signal);
      release = typeof place === 'function' ? place : await place;
    } catch (error) {
      throw upstreamFailure(error);
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({
        path: this.basePath + request.pathAndQuery,
        method: request.method as Dispatcher.HttpMethod,
        // undici takes array values in a flat list (a repeated header), though its types say strings.
        headers: request.headers as string[],
        body: request.body ?? undefined,
        signal: request.signal,
      });
    } catch (error) {
      release();
      throw upstreamFailure(error);
    }
    // Read to its end, destroyed or aborted, the body closes (undici's bodies auto-destroy).
    response.body.once('close', release);
    return response;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * The caller's side of one forwarded request. Until the node starts writing the answer
 * (`answering()`), the caller leaving aborts `signal`: the upstream request is never sent, or is
 * cancelled, and nothing is billed. Once the answer is on its way, a stream is still read to its
 * usage and billed (what was delivered was delivered). It is its own signal: an AbortController
 * per request (its AbortSignal and their event listeners) cost 2% of a billed request's CPU.
 */
export class CallerConnection extends EventEmitter implements CancelSignal {
  readonly signal: CancelSignal = this;
  aborted = false;
  reason: unknown = undefined;
  /** The caller left before its answer was complete. */
  gone = false;
  private answered = false;

  constructor(response: ServerResponse) {
    super();
    // The response's 'close': the request's own 'close' fires as soon as its body has been read.
    if (response.destroyed) this.closed(response);
    else response.once('close', () => this.closed(response));
  }

  /** The connection closed; a normal end also closes it, which `writableFinished` tells apart. */
  private closed(response: ServerResponse) {
    if (response.writableFinished) return;
    this.gone = true;
    if (this.answered || this.aborted) return;
    this.aborted = true;
    this.reason = Object.assign(new Error('The caller left'), { name: 'AbortError' });
    this.emit('abort');
  }

  /** The caller left before the first byte of its answer was written (the request is cancelled). */
  get cancelled(): boolean {
    return this.aborted;
  }

  /** The first byte of the answer is being written: from now on the caller leaving cancels nothing. */
  answering(): void {
    this.answered = true;
  }
}

/** 504 for an upstream that timed out, 502 for one that cannot be reached or broke the exchange. */
export function upstreamFailure(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const code = (error as { code?: string })?.code;
  if (
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError ||
    code === 'ETIMEDOUT'
  ) {
    return new HttpError(504, 'The upstream did not answer in time', {
      code: 'upstream_timeout',
      type: 'upstream_error',
    });
  }
  if (error instanceof undiciErrors.RequestAbortedError || (error as Error)?.name === 'AbortError') {
    return new HttpError(499, 'The request was cancelled by the caller', {
      code: 'client_closed',
      type: 'upstream_error',
    });
  }
  const detail = code ? ` (${code})` : '';
  return new HttpError(502, `The upstream could not be reached or broke the connection${detail}`, {
    code: 'upstream_unreachable',
    type: 'upstream_error',
  });
}

/**
 * Reads a body up to `limit` bytes; 413 beyond. A declared length above it is refused before
 * anything is read (the body is drained so the answer can be sent); a body found too long while
 * read is not read further (the stream is destroyed). Events rather than `for await`: an async
 * iterator, its promises and its end-of-stream watcher per body showed in profiles of billed
 * requests (bench/README.md, "Where a billed request's CPU goes").
 */
export function readBody(stream: Readable, limit: number): Promise<Buffer> {
  const declared = stream instanceof IncomingMessage ? Number(stream.headers['content-length']) : Number.NaN;
  if (Number.isFinite(declared) && declared > limit) {
    stream.resume();
    return Promise.reject(bodyTooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    if (stream.readableEnded) return resolve(Buffer.alloc(0));
    if (stream.destroyed) return reject(stream.errored ?? prematureClose());
    const chunks: Buffer[] = [];
    let size = 0;
    // The listeners stay: once the promise is settled, what they report changes nothing.
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      reject(bodyTooLarge(limit));
      stream.destroy();
    });
    stream.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    stream.on('error', reject);
    // Closed before its end (a caller or an upstream gone mid-body), as `for await` reports it. Every
    // stream closes after its end too: no error made then (its stack trace costs 5% of a request).
    stream.once('close', () => stream.readableEnded || reject(prematureClose()));
  });
}

function bodyTooLarge(limit: number): HttpError {
  return new HttpError(413, `The body is larger than ${limit} bytes`, { code: 'body_too_large' });
}

function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/** Drops an answer's body unread (closing it frees its connection); undici's abort error is expected. */
export function discardBody(body: Readable): void {
  body.on('error', () => {}).destroy();
}

/** Whether a request has a body to forward (a length above 0, or chunked). */
export function hasRequestBody(raw: IncomingMessage): boolean {
  return (
    raw.headers['transfer-encoding'] !== undefined ||
    (raw.headers['content-length'] !== undefined && raw.headers['content-length'] !== '0')
  );
}
