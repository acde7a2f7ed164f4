// Query-string conventions of the OneSky API that Fastify's parser does not know:
// lists in five encodings and booleans as true/false/1/0. `normalizeQuery` rewrites the parsed
// query in a preValidation hook, so the route schemas validate plain arrays and booleans.
import { HttpError } from '../../http/errors.js';

type Query = Record<string, unknown>;

const QUOTE_BOOLEANS = ['is_including_not_translated', 'is_including_not_approved', 'is_including_outdated'];

/** An object of named values (a parsed query string or body). */
export const isRecord = (value: unknown): value is Query => typeof value === 'object' && value !== null;

/** preValidation of the quotation route: its lists and booleans in the form its schema validates. */
export async function normalizeQuotationQuery(request: { query: unknown }): Promise<void> {
  if (isRecord(request.query)) normalizeQuery(request.query, ['files'], QUOTE_BOOLEANS);
}

/**
 * A preValidation hook for routes whose parameters come in the body (JSON or a form) or in the query string (as
 * the Python client sends every parameter), the body winning; `lists` and `booleans` are read as normalizeQuery
 * does. The route's schema validates them all as its body, or as its query string when `into` says so (a DELETE
 * documented with query parameters). No prototype: the names are the caller's, and Object.assign would run the
 * `__proto__` setter of a plain object. A JSON body that is no object (PHP's client sends `[]` for "no
 * parameters") adds nothing.
 */
export function mergeParameters(lists: string[] = [], booleans: string[] = [], into: 'body' | 'query' = 'body') {
  return async function merge(request: { query: unknown; body: unknown }): Promise<void> {
    const merged: Query = Object.assign(Object.create(null), request.query);
    if (isRecord(request.body) && !Array.isArray(request.body)) Object.assign(merged, request.body);
    normalizeQuery(merged, lists, booleans);
    request[into] = merged;
  };
}

/** preValidation of the order route: the quotation's parameters and the order's. */
export const mergeOrderParameters = mergeParameters(['files'], QUOTE_BOOLEANS);

/**
 * Collects list parameter `name` from any of: name=a&name=b, name[]=a, name[0]=a&name[1]=b,
 * name=["a","b"] (JSON) and name=['a', 'b'] (a Python list literal).
 */
export function readList(query: Query, name: string): string[] | undefined {
  const values: string[] = [];
  let found = false;
  const push = (value: unknown) => {
    found = true;
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string') continue;
      values.push(...expandLiteral(name, item));
    }
  };
  if (Object.hasOwn(query, name)) push(query[name]);
  if (Object.hasOwn(query, `${name}[]`)) push(query[`${name}[]`]);
  const indexed = Object.keys(query)
    .map((key) => ({ key, match: new RegExp(`^${name}\\[(\\d+)\\]$`).exec(key) }))
    .filter((entry) => entry.match)
    .sort((a, b) => Number(a.match![1]) - Number(b.match![1]));
  for (const { key } of indexed) push(query[key]);
  return found ? values : undefined;
}

/** A single value that looks like a JSON or Python list is that list; anything else is itself. */
function expandLiteral(name: string, value: string): string[] {
  const text = value.trim();
  if (!text.startsWith('[')) return [value];
  try {
    const parsed = JSON.parse(text);
    if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
  } catch {
    // not JSON: try the Python literal below
  }
  const python = parsePythonList(text);
  if (python) return python;
  throw new HttpError(400, `${name}: "${value.slice(0, 80)}" is not a list of strings`);
}

/** ['a', "b\'s"] → ["a", "b's"]; null when the text is not such a literal. */
export function parsePythonList(text: string): string[] | null {
  const items: string[] = [];
  let i = 1;
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  skipSpace();
  if (text[i] === ']') return i === text.length - 1 ? [] : null;
  for (;;) {
    skipSpace();
    const quote = text[i];
    if (quote !== "'" && quote !== '"') return null;
    i++;
    let item = '';
    while (i < text.length && text[i] !== quote) {
      if (text[i] === '\\' && i + 1 < text.length) {
        const next = text[i + 1];
        item += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        i += 2;
      } else item += text[i++];
    }
    if (i >= text.length) return null;
    i++;
    items.push(item);
    skipSpace();
    if (text[i] === ',') {
      i++;
      skipSpace();
      if (text[i] === ']') break; // trailing comma
      continue;
    }
    if (text[i] === ']') break;
    return null;
  }
  return i === text.length - 1 ? items : null;
}

const TRUE = new Set(['true', '1']);
const FALSE = new Set(['false', '0']);

/** Reads a boolean written true/false/1/0 (any case); throws 400 naming the parameter. */
export function readBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number' && (value === 0 || value === 1)) return value === 1;
  const text = String(value).trim().toLowerCase();
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  throw new HttpError(400, `${name}: expected true, false, 1 or 0, got "${String(value).slice(0, 40)}"`);
}

/**
 * Rewrites list parameters to arrays (dropping their bracketed keys) and booleans to
 * true/false, in place; used as a preValidation hook argument.
 */
export function normalizeQuery(query: Query, lists: string[], booleans: string[]): void {
  for (const name of lists) {
    const values = readList(query, name);
    for (const key of Object.keys(query)) {
      if (key === `${name}[]` || new RegExp(`^${name}\\[\\d+\\]$`).test(key)) delete query[key];
    }
    if (values !== undefined) query[name] = values;
  }
  for (const name of booleans) {
    if (query[name] !== undefined) {
      query[name] = readBoolean(name, Array.isArray(query[name]) ? (query[name] as unknown[])[0] : query[name], false);
    }
  }
}
