// Logger options: secrets never reach the log. Headers that carry credentials are censored,
// and so are credential-bearing query parameters (ecash_token, api_key, dev_hash, token…).
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';

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
