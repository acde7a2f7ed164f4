// Calls to the operator API (/admin/api/…, Routstr's paths and shapes) with the page's session
// cookie, sent by the browser; every change also carries the session's CSRF token, which the page
// hands over in its csrf-token meta tag.
import { field } from './data.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function csrfToken(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? '';
}

/** The message of an error answer: Routstr's `detail` (a string or FastAPI's list), else OpenAI's `error`. */
function messageOf(status: number, body: unknown): string {
  const detail = field(body, 'detail');
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .slice(0, 5)
      .map((item) => `${String(field(item, 'loc') ?? '')}: ${String(field(item, 'msg') ?? '')}`)
      .join('; ');
  }
  const message = field(field(body, 'error'), 'message');
  if (typeof message === 'string') return message;
  return status === 404 ? 'this node does not offer it (404)' : `the node answered ${status}`;
}

export async function api(method: string, path: string, body?: unknown): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken();
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'the node cannot be reached');
  }
  const type = response.headers.get('content-type') ?? '';
  const data: unknown = type.includes('application/json') ? await response.json().catch(() => null) : null;
  if (!response.ok) throw new ApiError(response.status, messageOf(response.status, data));
  if (!type.includes('application/json')) throw new ApiError(response.status, 'the answer is not JSON');
  return data;
}

export const get = (path: string) => api('GET', path);

/** A query string of the set parameters. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** The error's message for a panel. */
export function reason(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
