// application/x-www-form-urlencoded bodies with nested names, as PHP's http_build_query and the
// `qs` module (behind the `request` library's `form:` option) write them:
// `screenshots[0][tags][1][key]=a&screenshots[0][name]=b`. Names are the caller's, so every level
// is an object without a prototype (`__proto__` is a plain key), and the walk is bounded: at most
// MAX_PAIRS pairs, MAX_DEPTH bracket levels, list indexes below MAX_INDEX.
import { HttpError } from './errors.js';

export const MAX_PAIRS = 1000;
export const MAX_DEPTH = 8;
export const MAX_INDEX = 10_000;

export type FormValue = string | FormValue[] | FormObject;
export interface FormObject {
  [name: string]: FormValue;
}

const INDEX = /^(0|[1-9]\d{0,8})$/;

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    throw new HttpError(400, `The form body has malformed percent-encoding near "${text.slice(0, 40)}"`);
  }
}

/** `a[b][0][]` → ['a', 'b', '0', '']; a name with unbalanced brackets is one plain segment. */
function segmentsOf(name: string): string[] {
  const open = name.indexOf('[');
  if (open <= 0) return [name];
  const segments = [name.slice(0, open)];
  let rest = name.slice(open);
  while (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) return [name];
    segments.push(rest.slice(1, close));
    rest = rest.slice(close + 1);
  }
  if (rest !== '') return [name];
  if (segments.length - 1 > MAX_DEPTH) {
    throw new HttpError(400, `The form field "${name.slice(0, 60)}" nests deeper than ${MAX_DEPTH} levels`);
  }
  return segments;
}

const isObject = (value: FormValue | undefined): value is FormObject =>
  typeof value === 'object' && !Array.isArray(value);

/** Parses a form body into nested objects; `[]` appends, numeric keys become lists (in index order). */
export function parseForm(body: string): FormObject {
  const root: FormObject = Object.create(null);
  if (body === '') return root;
  const pairs = body.split('&');
  if (pairs.length > MAX_PAIRS) throw new HttpError(413, `The form has more than ${MAX_PAIRS} fields`);
  for (const pair of pairs) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decode(equals < 0 ? pair : pair.slice(0, equals));
    const value = equals < 0 ? '' : decode(pair.slice(equals + 1));
    const segments = segmentsOf(name);
    let node = root;
    for (let i = 0; i < segments.length - 1; i++) {
      // `a[]` appends: an appended branch (`a[][b]`) gets the next free index.
      const segment = segments[i] === '' ? String(Object.keys(node).length) : segments[i];
      const child = Object.hasOwn(node, segment) ? node[segment] : undefined;
      if (child === undefined) node = node[segment] = Object.create(null) as FormObject;
      else if (isObject(child)) node = child;
      else throw conflict(name);
    }
    const last = segments.at(-1)!;
    if (last === '' && segments.length > 1) node[String(Object.keys(node).length)] = value;
    else if (!Object.hasOwn(node, last)) node[last] = value;
    else if (typeof node[last] === 'string') node[last] = [node[last] as string, value];
    else if (Array.isArray(node[last])) (node[last] as FormValue[]).push(value);
    else throw conflict(name);
  }
  for (const key of Object.keys(root)) root[key] = listsOf(root[key]);
  return root;
}

function conflict(name: string): HttpError {
  return new HttpError(400, `The form field "${name.slice(0, 60)}" is both a value and a group of fields`);
}

/** Objects whose keys are all list indexes become lists (recursion at most MAX_DEPTH deep). */
function listsOf(value: FormValue): FormValue {
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  for (const key of keys) value[key] = listsOf(value[key]);
  if (keys.length === 0 || !keys.every((key) => INDEX.test(key) && Number(key) < MAX_INDEX)) return value;
  return keys.sort((a, b) => Number(a) - Number(b)).map((key) => value[key]);
}
