// The connection to the upstream: one undici Pool with connect, header and idle timeouts;
// the headers that cross in each direction; and upstream failures mapped to 502/504.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { HttpError } from '../http/errors.js';
import type { ForwardConfig } from './forward-config.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the node sets itself. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'http2-settings']);
/** The caller's credentials and identity never reach the upstream (this node is anonymous by design). */
const CALLER_ONLY = new Set(['authorization', 'x-cashu', 'cookie', 'x-api-key', 'api_key', 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'x-request-id']);
/** The node's cost headers on billed answers (docs/proxy-billing.md). */
export const COST_HEADERS = { total: 'x-cashu-cost-msat', input: 'x-cost-input-msat', output: 'x-cost-output-msat', request: 'x-cost-request-msat' } as const;
export const RESERVED_HEADER = 'x-cashu-reserved-msat';
/** Headers of the upstream's answer the node replaces with its own. */
const NODE_OWNED = new Set(['x-cashu', ...Object.values(COST_HEADERS), RESERVED_HEADER, 'set-cookie', 'x-request-id']);

function connectionTokens(headers: IncomingHttpHeaders | Record<string, unknown>): Set<string> {
  const value = headers.connection;
  const list = Array.isArray(value) ? value.join(',') : typeof value === 'string' ? value : '';
  return new Set(list.split(',').map((token) => token.trim().toLowerCase()).filter(Boolean));
}

/** The caller's headers as sent upstream, with the operator's key when one is configured. */
export function upstreamRequestHeaders(incoming: IncomingHttpHeaders, config: ForwardConfig, replaceBody?: { length: number }): Record<string, string | string[]> {
  const named = connectionTokens(incoming);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || HOP_BY_HOP.has(name) || CALLER_ONLY.has(name) || named.has(name)) continue;
    if (replaceBody && (name === 'content-length' || name === 'content-encoding' || name === 'accept-encoding')) continue;
    headers[name] = value;
  }
  if (replaceBody) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(replaceBody.length);
    // The node reads billed answers (usage), so it asks for them uncompressed.
    headers['accept-encoding'] = 'identity';
  }
  if (config.upstreamKey) headers.authorization = `Bearer ${config.upstreamKey}`;
  return headers;
}

/** The upstream's response headers as passed to the caller. */
export function callerResponseHeaders(upstream: Record<string, string | string[] | undefined>, options: { dropLength?: boolean } = {}): Record<string, string | string[]> {
  const named = connectionTokens(upstream);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || HOP_BY_HOP.has(name) || NODE_OWNED.has(name) || named.has(name)) continue;
    if (options.dropLength && (name === 'content-length' || name === 'content-encoding' || name === 'etag')) continue;
    headers[name] = value;
  }
  return headers;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query of the caller's request (normalized), appended to the upstream URL's path. */
  pathAndQuery: string;
  headers: Record<string, string | string[]>;
  body?: Readable | Buffer | null;
  signal?: AbortSignal;
}

/** The upstream's one origin, as a pool of kept-alive connections (an Agent's per-origin lookup is not needed). */
export class Upstream {
  private pool: Pool;
  private basePath: string;

  constructor(private config: ForwardConfig) {
    const url = new URL(config.upstreamUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connect: { timeout: config.connectTimeoutMs },
      headersTimeout: config.upstreamTimeoutMs,
      bodyTimeout: config.upstreamTimeoutMs,
      connections: config.upstreamConnections,
      keepAliveTimeout: 30_000,
    });
  }

  /** Sends a request; failures to connect or to hear back become 502/504 HttpErrors. */
  async request(request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    try {
      return await this.pool.request({
        path: this.basePath + request.pathAndQuery,
        method: request.method as Dispatcher.HttpMethod,
        headers: request.headers,
        body: request.body ?? undefined,
        signal: request.signal,
      });
    } catch (error) {
      throw upstreamFailure(error);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** 504 for an upstream that timed out, 502 for one that cannot be reached or broke the exchange. */
export function upstreamFailure(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const code = (error as { code?: string })?.code;
  if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError || error instanceof undiciErrors.ConnectTimeoutError || code === 'ETIMEDOUT') {
    return new HttpError(504, 'The upstream did not answer in time', { code: 'upstream_timeout', type: 'upstream_error' });
  }
  if (error instanceof undiciErrors.RequestAbortedError || (error as Error)?.name === 'AbortError') {
    return new HttpError(499, 'The request was cancelled by the caller', { code: 'client_closed', type: 'upstream_error' });
  }
  const detail = code ? ` (${code})` : '';
  return new HttpError(502, `The upstream could not be reached or broke the connection${detail}`, { code: 'upstream_unreachable', type: 'upstream_error' });
}
