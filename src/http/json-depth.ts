// A depth limit for JSON from outside (request bodies, upstream answers). JSON.parse is iterative,
// but JSON.stringify and most walkers recurse: a 12 KB body of 5,000 nested brackets overflowed
// the stack (a 500). JSON is checked here once, without recursion, before anything walks it; a
// request body too deep is refused in its service's shape.
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

/** Deepest nesting of objects and arrays accepted (`{}` is 1); far beyond any real request. */
export const MAX_JSON_DEPTH = 128;

/** Whether a parsed JSON value nests objects and arrays deeper than `max`; iterative, stops at the first too deep. */
export function nestedDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max < 1) return true;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (child === null || typeof child !== 'object') continue;
      if (depth === max) return true;
      nodes.push(child);
      depths.push(depth + 1);
    }
  }
  return false;
}

/** Character codes of JSON's structure (also read by src/proxy/forward/json-members.ts). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACE = 0x7d;
export const CLOSE_BRACKET = 0x5d;

/**
 * nestedDeeperThan for the text of a value JSON.parse accepted, read from its characters: brackets
 * outside strings. No object is visited or allocated (the walk showed in profiles of billed
 * requests, which check the body and the answer: bench/README.md). The decoded text, not its
 * bytes: a Buffer's indexOf crosses into C++ on every call, a string's does not (run T).
 */
export function jsonTextDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  // Each level takes two characters at least, and one opening bracket: most texts have too few of
  // them, which indexOf tells without the walk below.
  if (text.length <= 2 * max || openingBracketsAtMost(text, max)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === BACKSLASH) i++;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) {
      inString = true;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** Whether the text has at most `max` characters `{` and `[` in all (in strings too): it cannot nest deeper. */
function openingBracketsAtMost(text: string, max: number): boolean {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      if (++count > max) return false;
    }
  }
  return true;
}

/**
 * The input error for a too deep body: FastAPI's 422 on the proxy node, 400 with the field in the users
 * and quotation APIs (each error handler renders `fields` its way).
 */
export function tooDeepError(): HttpError {
  const msg = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
  return new HttpError(422, msg, { fields: [{ loc: ['body'], msg, type: 'json_too_deep' }] });
}

/**
 * Fastify's own JSON body parser (prototype poisoning refused), plus the depth limit. With
 * `emptyIsNoBody`, an empty body is no body (Fastify refuses it: "Body cannot be empty").
 */
export function installJsonParser(app: FastifyInstance, options: { emptyIsNoBody?: boolean } = {}) {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (options.emptyIsNoBody && body === '') return done(null, undefined);
    parse(request, body as string, (error, value) => {
      if (error) return done(error, undefined);
      if (nestedDeeperThan(value)) return done(tooDeepError(), undefined);
      done(null, value);
    });
  });
}
