// Logger options: secrets never reach the log. Headers that carry credentials are censored,
// and so are credential-bearing query parameters (ecash_token, api_key, dev_hash, token…).
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import pino from 'pino';

const SECRET_QUERY_PARAMS = /^(ecash_token|cashu_token|token|api_key|api_secret|dev_hash|password|secret|reset_token|access_token|code|code_verifier)$/i;

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-cashu"]',
  'req.headers["x-api-key"]',
  'req.headers.api_key',
  'res.headers["set-cookie"]',
  'res.headers["x-cashu"]',
  '*.password',
  '*.token',
  '*.secret',
  '*.api_secret',
  '*.ecash_token',
  '*.access_token',
];

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

/**
 * Standard output as the log destination. Written synchronously, every access-log line costs a
 * system call on the request's path; in the background, lines that arrive while a write is under
 * way go out together in the next one. They are flushed when the process exits, so only a crash
 * that kills the process outright (SIGKILL, out of memory) can lose the last few lines.
 */
export function stdoutDestination(sync: boolean) {
  return pino.destination({ dest: 1, sync });
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    serializers: {
      req(request: any) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
    },
  };
}

/** The access log: one line per answered request, the URL without secrets, server errors as errors. */
export function logRequest(request: FastifyRequest, reply: FastifyReply) {
  const line = { req: request, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 };
  if (reply.statusCode >= 500) request.log.error(line, 'request failed');
  else request.log.info(line, 'request completed');
}
