// "Try it out!": turns the values typed for an operation into a real HTTP request, sends it with
// fetch, and describes the outcome (curl, URL, headers, body, status) for the renderer.
import type { Operation, Parameter } from './normalize/model.js';
import type { PendingRequest } from './auth.js';
import { withQuery } from './load.js';
import { t } from './i18n.js';
import { ownValue, table } from './own.js';

/** A value typed for a parameter: text, several texts (arrays, multi-selects) or a file. */
export type Value = string | string[] | File | undefined;

export interface RequestInput {
  op: Operation;
  server: string;
  values: Map<Parameter, Value>;
  /** Raw body text and its content type, or form fields (2.0 formData / 3.x form bodies). */
  body?: { contentType: string; text?: string; fields?: [string, Value][] };
  accept?: string;
}

export interface BuiltRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Set as page cookies before sending; shown in curl. */
  cookies: [string, string][];
  body?: BodyInit;
  /** What curl would send as body (files shown as @name). */
  curlBody?:
    { kind: 'raw'; text: string } | { kind: 'form'; fields: [string, string][] } | { kind: 'urlencoded'; text: string };
}

const SEPARATORS: Record<string, string> = { csv: ',', ssv: ' ', tsv: '\t', pipes: '|' };

function joined(value: Value, format: string | undefined): string[] {
  if (Array.isArray(value)) {
    return format === 'multi' ? value : [value.join(ownValue(SEPARATORS, String(format ?? 'csv')) ?? ',')];
  }
  return typeof value === 'string' ? [value] : [];
}

export function isEmpty(value: Value) {
  return value === undefined || value === '' || (Array.isArray(value) && value.every((v) => v === ''));
}

export function buildRequest(input: RequestInput, authorize: (pending: PendingRequest) => void): BuiltRequest {
  const { op } = input;
  // Header names are the description's and the authorizations': a table without a prototype.
  const pending: PendingRequest = { headers: table(), query: [], cookies: [] };
  let path = op.path;
  for (const [param, value] of input.values) {
    if (isEmpty(value)) continue;
    const texts = joined(Array.isArray(value) ? value.filter((v) => v !== '') : value, param.collectionFormat);
    if (param.in === 'path') path = path.split(`{${param.name}}`).join(encodeURIComponent(texts.join(',')));
    else if (param.in === 'query') for (const text of texts) pending.query.push([param.name, text]);
    else if (param.in === 'header') pending.headers[param.name] = texts.join(',');
    else if (param.in === 'cookie') pending.cookies!.push([param.name, texts.join(',')]);
  }
  authorize(pending);
  // A declared Accept header parameter with a value typed is sent as typed; else the select's choice.
  const declared = Object.keys(pending.headers).some((name) => name.toLowerCase() === 'accept');
  if (input.accept && !declared) pending.headers.Accept = input.accept;

  const built: BuiltRequest = {
    method: op.method.toUpperCase(),
    url: withQuery(input.server.replace(/\/$/, '') + path, pending.query),
    headers: pending.headers,
    cookies: pending.cookies!,
  };
  const body = input.body;
  if (body && body.fields) {
    const fields = body.fields.filter(([, v]) => !isEmpty(v));
    if (/multipart/.test(body.contentType)) {
      const form = new FormData();
      const shown: [string, string][] = [];
      for (const [name, value] of fields) {
        for (const item of Array.isArray(value) ? value : [value]) {
          if (item instanceof File) {
            form.append(name, item, item.name);
            shown.push([name, `@${item.name}`]);
          } else if (item !== undefined) {
            form.append(name, item);
            shown.push([name, item]);
          }
        }
      }
      built.body = form; // fetch sets the multipart boundary itself
      built.curlBody = { kind: 'form', fields: shown };
    } else {
      const params = new URLSearchParams();
      for (const [name, value] of fields) {
        for (const item of Array.isArray(value) ? value : [value]) {
          if (typeof item === 'string') params.append(name, item);
        }
      }
      built.headers['Content-Type'] = body.contentType || 'application/x-www-form-urlencoded';
      built.body = params.toString();
      built.curlBody = { kind: 'urlencoded', text: params.toString() };
    }
  } else if (body && body.text !== undefined && body.text !== '' && !['GET', 'HEAD'].includes(built.method)) {
    built.headers['Content-Type'] = body.contentType;
    built.body = body.text;
    built.curlBody = { kind: 'raw', text: body.text };
  }
  return built;
}

/**
 * Cookie parameters and cookie api keys: scripts may not send a Cookie header, so they are set on
 * the page; the browser then sends them to same-site APIs only.
 */
function setCookies(cookies: [string, string][]) {
  for (const [name, value] of cookies) {
    document.cookie = `${encodeURIComponent(name)}=${encodeURIComponent(value)}; path=/; SameSite=Lax`;
  }
}

function shellQuote(text: string) {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function curlOf(request: BuiltRequest): string {
  const parts = [`curl -X ${request.method}`];
  for (const [name, value] of Object.entries(request.headers)) {
    parts.push(`--header ${shellQuote(`${name}: ${value}`)}`);
  }
  if (request.cookies.length) {
    const cookies = request.cookies.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    parts.push(`--cookie ${shellQuote(cookies.join('; '))}`);
  }
  const body = request.curlBody;
  if (body?.kind === 'form') {
    for (const [name, value] of body.fields) parts.push(`-F ${shellQuote(`${name}=${value}`)}`);
  } else if (body) parts.push(`-d ${shellQuote(body.text)}`);
  parts.push(shellQuote(request.url));
  return parts.join(' ');
}

export interface Outcome {
  ok: boolean;
  status: number;
  statusText: string;
  headers: [string, string][];
  contentType: string;
  blob?: Blob;
  text?: string;
  /** Set when the browser refused to read the answer (network error or missing CORS headers). */
  networkError?: string;
  durationMs: number;
}

export async function send(request: BuiltRequest): Promise<Outcome> {
  const start = performance.now();
  setCookies(request.cookies);
  let response: globalThis.Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      mode: 'cors',
      redirect: 'follow',
    });
  } catch {
    return {
      ok: false,
      status: 0,
      statusText: '',
      headers: [],
      contentType: '',
      networkError: corsMessage(request),
      durationMs: performance.now() - start,
    };
  }
  const contentType = response.headers.get('content-type') ?? '';
  const headers = [...response.headers.entries()];
  const textual = !contentType || /json|xml|text\/|javascript|yaml|x-www-form-urlencoded/i.test(contentType);
  const outcome: Outcome = {
    ok: response.ok,
    status: response.status,
    statusText: response.statusText,
    headers,
    contentType,
    durationMs: 0,
  };
  if (textual) outcome.text = await response.text();
  else outcome.blob = await response.blob();
  outcome.durationMs = performance.now() - start;
  return outcome;
}

function corsMessage(request: BuiltRequest): string {
  let target = request.url;
  try {
    target = new URL(request.url, document.baseURI).origin;
  } catch {
    // keep the raw address
  }
  const sent = Object.keys(request.headers);
  // Each phrase stays whole inside t(): the language files are keyed by it.
  const unreachable = t(
    'failed before an answer could be read: the server is unreachable, or it does not send cross-origin headers.',
  );
  const allowHeaders = `Access-Control-Allow-Headers${sent.length ? ` (${sent.join(', ')})` : ''}`;
  const allowMethods = `Access-Control-Allow-Methods (${request.method})`;
  return [
    t("Can't read from server. It may not have the appropriate access-control-origin settings."),
    `${t('The request to')} ${target} ${unreachable}`,
    `${t('It must answer with')} Access-Control-Allow-Origin, ${allowMethods} ${t('and')} ${allowHeaders}.`,
  ].join('\n');
}
