// Logger options: secrets never reach the log. Fields that carry credentials (headers, tokens,
// passwords) are censored at any depth, and so are credential-bearing query parameters
// (ecash_token, api_key, dev_hash, token…).
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import pino from 'pino';
import { LineBuffer } from '../logs/line-buffer.js';
import { RequestLogger } from './request-logger.js';

const SECRET_QUERY_PARAMS = new RegExp(
  '^(ecash_token|cashu_token|token|api_key|api_secret|dev_hash|password|secret|reset_token|access_token|' +
    'code|code_verifier)$',
  'i',
);

/** Keys whose values never reach the log, at any depth of a logged object (compared lowercased). */
const SECRET_KEYS = new Set([
  'authorization',
  'cookie',
  'set-cookie',
  'x-cashu',
  'x-api-key',
  'api_key',
  'password',
  'token',
  'secret',
  'api_secret',
  'ecash_token',
  'access_token',
  'refresh_token',
]);
const MAX_DEPTH = 6;

/**
 * The value with every secret-keyed field replaced, copying only what changes (the logged object
 * itself is never modified). Kept over pino's path-based redaction, which measured slower
 * (bench/README.md, Measurements behind the code) and covers only a fixed list of paths.
 */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    value.forEach((item, i) => {
      const clean = redactSecrets(item, depth + 1);
      if (clean !== item) (copy ??= [...value])[i] = clean;
    });
    return copy ?? value;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value; // errors, requests: their serializers
  let copy: Record<string, unknown> | null = null;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    const clean = SECRET_KEYS.has(key.toLowerCase()) ? '[REDACTED]' : redactSecrets(item, depth + 1);
    if (clean !== item) (copy ??= { ...(value as Record<string, unknown>) })[key] = clean;
  }
  return copy ?? value;
}

/** The URL with the values of secret-bearing query parameters replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = decodeSafe(eq < 0 ? pair : pair.slice(0, eq));
      return eq >= 0 && SECRET_QUERY_PARAMS.test(name) ? `${pair.slice(0, eq)}=[REDACTED]` : pair;
    });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

function decodeSafe(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** Lines gathered into one write in the background, and the longest a line waits for others. */
const LOG_BUFFER_BYTES = 64 * 1024;
const LOG_FLUSH_MS = 100;

let gatheredStdout: GatheredLines | undefined;

/**
 * Standard output as the log destination. Written synchronously, every access-log line costs a
 * system call on the request's path. In the background, lines are gathered up to 64 KB (or 100 ms)
 * and written together by the thread pool: one write per line cost 3-5% of a billed request's CPU
 * (bench/README.md, "Where a billed request's CPU goes"), one per 4 KB still 1.5% (each hand-over
 * to the thread pool costs tens of µs here; "Issue 33"). They are flushed when the process exits;
 * `process.exit()` while a write is under way can lose that write, so every exit of the server and the
 * primary waits for it first (exitAfterLog, logWritten), and only a crash can lose the last lines.
 */
export function stdoutDestination(sync: boolean): pino.DestinationStream {
  if (sync) return surviving(pino.destination({ dest: 1, sync }));
  // One for the process: every server built in it (tests build many) shares standard output.
  // minLength 1, not 0: SonicBoom's flush(cb) then waits for the writes under way.
  // In buffer mode SonicBoom takes the chunks as they are (its types say strings only).
  gatheredStdout ??= new GatheredLines(
    surviving(
      pino.destination({ dest: 1, sync: false, minLength: 1, contentMode: 'buffer' }),
    ) as unknown as ByteDestination,
  );
  return gatheredStdout;
}

/**
 * A log that cannot be written (standard output a file on a full disk: ENOSPC, a closed pipe)
 * loses those lines, not the process: SonicBoom's 'error' without a listener ended it. Writing
 * resumes by itself once the destination takes lines again.
 */
function surviving<T extends ReturnType<typeof pino.destination>>(destination: T): T {
  destination.on('error', () => {});
  return destination;
}

/** SonicBoom in buffer mode. */
interface ByteDestination {
  write(chunk: Buffer): unknown;
  flush(cb?: (error?: Error) => void): void;
}

/**
 * Lines gathered as bytes (../logs/line-buffer.ts) and handed to SonicBoom (which writes them,
 * retries and flushes at exit) 64 KB at a time. SonicBoom's own gathering (`minLength`) measures its
 * growing buffer again at every line, which flattens it: 2% of a billed request's CPU (bench/README.md,
 * "The access log").
 */
class GatheredLines implements pino.DestinationStream {
  private readonly pending = new LineBuffer(LOG_BUFFER_BYTES);
  private readonly handOnChunk = (chunk: Buffer) => this.out.write(chunk);

  constructor(private readonly out: ByteDestination) {
    setInterval(() => this.handOn(), LOG_FLUSH_MS).unref();
    // Before pino's handlers for SonicBoom: at 'beforeExit' it flushes and closes standard output, at
    // 'exit' it writes what it holds; lines still here then would be lost.
    process.prependListener('beforeExit', () => this.handOn());
    process.prependListener('exit', () => this.handOn());
  }

  write(line: string): void {
    this.pending.add(line, this.handOnChunk);
  }

  /** `logger.flush(cb)`: everything written so far, then `cb`. */
  flush(cb?: (error?: Error) => void): void {
    this.handOn();
    this.out.flush(cb);
  }

  /** Hands the gathered lines to SonicBoom, which writes them in the background. */
  private handOn(): void {
    if (this.pending.bytes > 0) this.handOnChunk(this.pending.take());
  }
}

/** How long an exit waits for the log's last lines (standard output may be a stuck pipe). */
const EXIT_LOG_WAIT_MS = 2000;

/**
 * Resolves once what `log` was given is written (pino's `flush`), at most EXIT_LOG_WAIT_MS later:
 * `process.exit()` while a write is under way could lose it, and with it the line saying why.
 */
export function logWritten(log: FastifyBaseLogger | pino.Logger): Promise<void> {
  const { flush } = log as { flush?: (callback: () => void) => void };
  return new Promise((resolve) => {
    setTimeout(resolve, EXIT_LOG_WAIT_MS).unref();
    if (typeof flush === 'function') flush.call(log, () => resolve());
    else resolve();
  });
}

/** Exits with `code` once the log's last lines are written (see logWritten). */
export function exitAfterLog(log: FastifyBaseLogger | pino.Logger, code: number): void {
  setTimeout(() => process.exit(code), EXIT_LOG_WAIT_MS);
  void logWritten(log).then(() => process.exit(code));
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    // Before the serializers: the object as logged. The error serializer's output is redacted
    // too (an error may carry headers); the request serializer writes nothing secret.
    formatters: { log: (object: Record<string, unknown>) => redactSecrets(object) as Record<string, unknown> },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
      // A message logged as `err` (a string) stays a string: spread, it became one field per character.
      err: (error: Error) =>
        (typeof error === 'object' && error !== null
          ? redactSecrets({ ...pino.stdSerializers.err(error) })
          : error) as ReturnType<typeof pino.stdSerializers.err>,
    },
  };
}

/**
 * The access log: one line per answered request, the URL without secrets, server errors as errors.
 * `ownFormat`: the logger was made from loggerOptions() (no mixin, hook or custom time), so a line
 * of a request answered below 500 can be written straight to its destination, byte for byte what
 * pino would write: pino's serializers and stringifiers cost 2% of a billed request's CPU
 * (bench/README.md, "Issue 33"). Any other logger, and every error line, goes through pino.
 */
export function accessLog(
  log: FastifyBaseLogger,
  ownFormat: boolean,
): (request: FastifyRequest, reply: FastifyReply) => void {
  const destination = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    (pino.DestinationStream & Record<symbol, unknown>) | undefined;
  const direct = ownFormat && destination !== undefined && destination[pino.symbols.needsMetadataGsym] !== true;
  return (request, reply) => {
    const status = reply.statusCode;
    const ms = Math.round(reply.elapsedTime * 100) / 100;
    if (!direct || status >= 500) return logThroughPino(request, status, ms);
    if (!(request.log as pino.Logger).isLevelEnabled('info')) return;
    // The request logger's bindings as pino writes them (",\"pid\":…,\"reqId\":…").
    const bindings =
      request.log instanceof RequestLogger
        ? request.log.chindings
        : (request.log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
    const address = request.ip === undefined ? '' : `,"remoteAddress":${JSON.stringify(request.ip)}`;
    destination!.write(
      `{"level":30,"time":${Date.now()}${bindings},"req":{"method":${JSON.stringify(request.method)},` +
        `"url":${JSON.stringify(redactUrl(request.url))}${address}},"status":${status},"ms":${ms},` +
        '"msg":"request completed"}\n',
    );
  };
}

function logThroughPino(request: FastifyRequest, status: number, ms: number) {
  const line = { req: request, status, ms };
  if (status >= 500) request.log.error(line, 'request failed');
  else request.log.info(line, 'request completed');
}
