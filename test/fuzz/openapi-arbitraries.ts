// Request generators built from an OpenAPI 3.1 description: for each operation, a request from
// its parameters and request body schema (with known-good values for some names, so requests
// get past lookups and authentication), then mutated the ways a broken or hostile client would.
import fc from 'fast-check';

type Schema = Record<string, any>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
}

export interface Operation {
  /** Upper case, as sent. */
  method: string;
  /** The description's template, e.g. /1/projects/{project_id}. */
  path: string;
  parameters: Parameter[];
  bodies: { type: string; schema: Schema }[];
  bodyRequired: boolean;
  /** The names of the security schemes any of its requirements uses. */
  security: string[];
  /** How often it comes up relative to the others (default: 2 with a body, 1 without). */
  weight?: number;
}

/** A request exactly as it goes on the wire: the path is sent byte for byte, not normalised. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: [string, string][];
  body?: string | Uint8Array;
  /** The operation it was generated from, e.g. `GET /1/projects/{project_id}`. */
  operation: string;
  mutations: string[];
}

/** Credentials an operation is sent with (or deliberately without). */
export interface Credential {
  headers: [string, string][];
  query: [string, string][];
}

export interface GeneratorOptions {
  /**
   * Values that reach past lookups, by parameter or property name (ids that exist, files that
   * were uploaded, markers the sender replaces with live credentials). Path and query hints are
   * sent as they are, not percent-encoded.
   */
  hints?: Map<string, unknown[]>;
  /** The credentials to try on an operation; parameters they supply are not generated. */
  auth?: (operation: Operation) => fc.Arbitrary<Credential>;
}

/** JSON text inserted as it is (numbers past 64 bits, deep nesting, `__proto__` keys). */
export class Raw {
  constructor(readonly text: string) {}
}

/** An object as a list of entries: keys may repeat or be `__proto__` without touching a prototype. */
export class Obj {
  constructor(readonly entries: [string, unknown][]) {}
}

/** A file part of a multipart body. */
export class FileValue {
  constructor(
    readonly name: string,
    readonly bytes: Uint8Array,
  ) {}
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

export function operationsOf(document: Schema): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Schema>(document.paths ?? {})) {
    for (const [method, op] of Object.entries<Schema>(item)) {
      if (!HTTP_METHODS.has(method)) continue;
      const parameters: Parameter[] = (op.parameters ?? [])
        .filter((p: Schema) => ['path', 'query', 'header'].includes(p.in))
        .map((p: Schema) => ({ name: p.name, in: p.in, required: Boolean(p.required), schema: p.schema ?? {} }));
      const content = Object.entries<Schema>(op.requestBody?.content ?? {});
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters,
        bodies: content.map(([type, media]) => ({ type, schema: media.schema ?? {} })),
        bodyRequired: Boolean(op.requestBody?.required),
        security: [...new Set<string>((op.security ?? []).flatMap((requirement: Schema) => Object.keys(requirement)))],
      });
    }
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// Values that fit a schema.

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

const CHARACTERS = fc.constantFrom('a', 'Z', '0', ' ', '-', '_', 'é', '日', '😀', '.', '/');

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const fits = (s: string) => s.length >= min && s.length <= (schema.maxLength ?? Infinity);
  if (schema.format === 'email') return fc.emailAddress().filter(fits);
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  if (typeof schema.pattern === 'string') {
    return fc.stringMatching(new RegExp(schema.pattern, 'u'), { size: 'small' }).filter(fits);
  }
  const max = Math.max(min, Math.min(schema.maxLength ?? 40, 40));
  return fc.string({ minLength: min, maxLength: max, unit: CHARACTERS });
}

/** Integers at the edges databases and JSON care about, as JSON text where a double would round them. */
const INTEGER_EDGES = [
  0,
  -1,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  Number.MAX_SAFE_INTEGER,
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551617',
  '100000000000000000000',
];

function numberOf(schema: Schema, integer: boolean): fc.Arbitrary<number | Raw> {
  const low = clamp(schema.minimum ?? -1000, -(2 ** 31), 2 ** 31);
  const high = clamp(schema.maximum ?? 1_000_000, low, 2 ** 31);
  if (!integer) return fc.double({ min: low, max: high, noNaN: true });
  const beyond = schema.maximum === undefined ? undefined : schema.maximum + 1;
  const edges = [...INTEGER_EDGES, schema.minimum, schema.maximum, beyond]
    .filter((edge) => edge !== undefined)
    .map((edge) => (typeof edge === 'string' ? new Raw(edge) : (edge as number)));
  return fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: Math.ceil(low), max: Math.floor(high) }) },
    { weight: 1, arbitrary: fc.constantFrom(...edges) },
  );
}

const FILE_NAMES = ['a.po', 'strings.json', 'photo.png', 'x', 'ü.yml', '../../etc/passwd'];
const fileOf = () =>
  fc
    .tuple(fc.constantFrom(...FILE_NAMES), fc.uint8Array({ maxLength: 200 }))
    .map(([name, bytes]) => new FileValue(name, bytes));

/** A value that fits `schema`; `hints` are preferred for the properties they name, `skip` ones are left out. */
export function valueOf(
  schema: Schema,
  hints = new Map<string, unknown[]>(),
  skip = new Set<string>(),
): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object') return fc.jsonValue({ maxDepth: 2 });
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length) return fc.oneof(...union.map((s: Schema) => valueOf(s, hints, skip)));
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string':
      return schema.format === 'binary' ? fileOf() : stringOf(schema);
    case 'integer':
      return numberOf(schema, true);
    case 'number':
      return numberOf(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const min = schema.minItems ?? 0;
      const max = Math.max(min, Math.min(schema.maxItems ?? 4, 4));
      return fc.array(valueOf(schema.items ?? {}, hints, skip), { minLength: min, maxLength: max });
    }
    default:
      return schema.properties ? objectOf(schema, hints, skip) : fc.jsonValue({ maxDepth: 2 });
  }
}

const ABSENT = Symbol('absent');

function objectOf(schema: Schema, hints: Map<string, unknown[]>, skip: Set<string>): fc.Arbitrary<Obj> {
  const required = new Set<string>(schema.required ?? []);
  const properties = Object.entries<Schema>(schema.properties ?? {}).filter(([name]) => !skip.has(name));
  const values = properties.map(([name, property]) => {
    const generated = valueOf(property, hints, skip);
    const known = hints.get(name);
    const hint = known?.length ? fc.constantFrom(...known) : null;
    const fitted = hint && property.type === 'array' ? fc.array(hint, { minLength: 1, maxLength: 3 }) : hint;
    const value = fitted ? fc.oneof({ weight: 3, arbitrary: fitted }, { weight: 1, arbitrary: generated }) : generated;
    return required.has(name) ? value : fc.option(value, { nil: ABSENT, freq: 2 });
  });
  return fc.tuple(...values).map((v) => {
    const present = properties.flatMap(([name], i): [string, unknown][] => (v[i] === ABSENT ? [] : [[name, v[i]]]));
    return new Obj(present);
  });
}

// ---------------------------------------------------------------------------------------------
// Serialising: parameters as URL text, bodies as JSON or multipart.

/** JSON text of a generated value; Raw pieces go in verbatim. */
export function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof FileValue) return JSON.stringify(Buffer.from(value.bytes).toString('latin1'));
  if (value instanceof Obj) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  return JSON.stringify(value) ?? 'null';
}

function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof FileValue) return Buffer.from(value.bytes).toString('latin1');
  return toJson(value);
}

const BOUNDARY = 'fuzzBoundary7MA4YWxkTrZu0gW';

function multipart(value: unknown): Uint8Array {
  const entries = value instanceof Obj ? value.entries : [['value', value] as [string, unknown]];
  const parts: Buffer[] = [];
  for (const [name, field] of entries) {
    const file = field instanceof FileValue ? field : null;
    const disposition = `Content-Disposition: form-data; name="${name}"`;
    const fileHeaders = `${disposition}; filename="${file?.name}"\r\nContent-Type: application/octet-stream`;
    const headers = file ? fileHeaders : disposition;
    parts.push(Buffer.from(`--${BOUNDARY}\r\n${headers}\r\n\r\n`, 'latin1'));
    parts.push(file ? Buffer.from(file.bytes) : Buffer.from(toText(field)), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return new Uint8Array(Buffer.concat(parts));
}

function encodeBody(type: string, value: unknown): { bytes: string | Uint8Array; contentType: string } {
  if (type.startsWith('multipart/')) return { bytes: multipart(value), contentType: `${type}; boundary=${BOUNDARY}` };
  return { bytes: /json/.test(type) ? toJson(value) : toText(value), contentType: type };
}

/** URL text of a generated query value (lists in one of the styles clients use). */
function queryPairs(name: string, value: unknown, style: number): [string, string][] {
  const key = encodeURIComponent(name);
  const text = (v: unknown) => encodeURIComponent(toText(v));
  if (!Array.isArray(value)) return [[key, text(value)]];
  const styles: (() => [string, string][])[] = [
    () => value.map((v) => [key, text(v)]),
    () => value.map((v) => [`${key}%5B%5D`, text(v)]),
    () => value.map((v, i) => [`${key}[${i}]`, text(v)]),
    () => [[key, encodeURIComponent(toJson(value))]],
    () => [[key, value.map(text).join(',')]],
  ];
  return styles[style % styles.length]();
}

// ---------------------------------------------------------------------------------------------
// Drafts: a request before it is serialised, so mutations can act on its parts.

interface Draft {
  op: Operation;
  method: string;
  /** Path parameter → its URL text. */
  path: Map<string, string>;
  /** URL text of each query key and value. */
  query: [string, string][];
  headers: [string, string][];
  body?: { type: string; value: unknown };
  /** Replaces the encoded body. */
  rawBody?: string | Uint8Array;
  /** Replaces the content type (null: none). */
  contentType?: string | null;
  /** Keep this fraction of the encoded body. */
  truncate?: number;
  pathEdits: ((path: string) => string)[];
  mutations: string[];
}

function copy(draft: Draft, mutation: string): Draft {
  const body = draft.body && { ...draft.body };
  return {
    ...draft,
    path: new Map(draft.path),
    query: [...draft.query],
    headers: [...draft.headers],
    body,
    pathEdits: [...draft.pathEdits],
    mutations: [...draft.mutations, mutation],
  };
}

function serialize(draft: Draft): FuzzRequest {
  let path = draft.op.path.replace(/\{([^}]+)\}/g, (_, name: string) => draft.path.get(name) ?? '');
  for (const edit of draft.pathEdits) path = edit(path);
  const query = draft.query.map(([k, v]) => `${k}=${v}`).join('&');
  const isType = ([name]: [string, string]) => name.toLowerCase() === 'content-type';
  const headers = draft.headers.filter((header) => !isType(header));
  let contentType = draft.headers.find(isType)?.[1];
  let body: string | Uint8Array | undefined;
  if (draft.body) {
    const encoded = encodeBody(draft.body.type, draft.body.value);
    body = encoded.bytes;
    contentType ??= encoded.contentType;
  }
  if (draft.rawBody !== undefined) body = draft.rawBody;
  if (draft.contentType !== undefined) contentType = draft.contentType ?? undefined;
  if (draft.truncate !== undefined) body = body?.slice(0, Math.floor(body.length * draft.truncate));
  if (contentType !== undefined) headers.push(['content-type', contentType]);
  return {
    method: draft.method,
    path: query ? `${path}?${query}` : path,
    headers,
    body,
    operation: `${draft.op.method} ${draft.op.path}`,
    mutations: draft.mutations,
  };
}

/** A parameter's value: a hint (URL text as it is) most of the time when there are hints. */
function parameterOf(p: Parameter, hints: Map<string, unknown[]>, skip: Set<string>) {
  const generated = fc
    .tuple(valueOf(p.schema, hints, skip), fc.nat())
    .map(([value, style]) => ({ value, style, raw: false }));
  const known = hints.get(p.name)?.filter((hint) => typeof hint === 'string');
  if (!known?.length) return generated;
  const hint = fc.constantFrom(...known).map((value) => ({ value: value as unknown, style: 0, raw: true }));
  return fc.oneof({ weight: 3, arbitrary: hint }, { weight: 1, arbitrary: generated });
}

function draftOf(op: Operation, options: GeneratorOptions): fc.Arbitrary<Draft> {
  const hints = options.hints ?? new Map<string, unknown[]>();
  const auth = options.auth?.(op) ?? fc.constant<Credential>({ headers: [], query: [] });
  return auth.chain((credential) => {
    const supplied = new Set([...credential.query, ...credential.headers].map(([name]) => name.toLowerCase()));
    const params = op.parameters.filter((p) => !supplied.has(p.name.toLowerCase()));
    const values = params.map((p) => {
      const value = parameterOf(p, hints, supplied);
      return p.required ? value : fc.option(value, { nil: null, freq: 2 });
    });
    const bodies = op.bodies.map(({ type, schema }) =>
      valueOf(schema, hints, supplied).map((value) => ({ type, value })),
    );
    const body = bodies.length ? fc.oneof(...bodies) : fc.constant(undefined);
    const maybeBody = op.bodyRequired ? body : fc.option(body, { nil: undefined, freq: 3 });
    return fc.tuple(fc.tuple(...values), maybeBody).map(([generated, bodyValue]) => {
      const draft: Draft = {
        op,
        method: op.method,
        path: new Map(),
        query: [...credential.query],
        headers: [...credential.headers],
        body: bodyValue,
        pathEdits: [],
        mutations: [],
      };
      params.forEach((p, i) => {
        const v = generated[i];
        if (!v) return;
        const text = toText(v.value);
        if (p.in === 'path') draft.path.set(p.name, v.raw ? text : encodeURIComponent(text));
        else if (p.in === 'header') draft.headers.push([p.name, text.replace(/[^\x20-\x7e]/g, '?')]);
        else draft.query.push(...(v.raw ? [[p.name, text] as [string, string]] : queryPairs(p.name, v.value, v.style)));
      });
      return draft;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Mutations.

const METHODS = [
  'PROPFIND',
  'PROPPATCH',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'UNLOCK',
  'SEARCH',
  'PURGE',
  'REPORT',
  'TRACE',
  'MKACTIVITY',
  'CHECKOUT',
  'MERGE',
  'NOTIFY',
  'SUBSCRIBE',
  'UNSUBSCRIBE',
  'LINK',
  'UNLINK',
  'SOURCE',
  'QUERY',
  'BIND',
  'ACL',
  'MKCALENDAR',
  'M-SEARCH',
  'GET',
  'PUT',
  'POST',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'HEAD',
];
const PROTO_WORDS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
];
const PROTO_JSON = ['{"polluted":"yes"}', '{"prototype":{"polluted":"yes"}}', '"polluted"', '[1]', 'null'];
const PROTO_QUERY_KEYS = [
  '__proto__[polluted]',
  'constructor[prototype][polluted]',
  '__proto__.polluted',
  '__proto__',
  'constructor',
  'prototype',
  'files[__proto__]',
  'files[constructor]',
  'toString',
];
const BIG_NUMBERS = [
  '18446744073709551617',
  '-18446744073709551617',
  '9007199254740993',
  '123456789012345678901234567890',
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '0.0000001',
  '1E308',
];
const BIG_PARAM_TEXT = [
  ...BIG_NUMBERS,
  '0x10',
  '1e3',
  '+1',
  '%201',
  '1.0',
  'Infinity',
  'NaN',
  '%D9%A1%D9%A2',
  '-1',
  '00000000000000000000000000001',
];
const WRONG_PARAM_TEXT = [
  'abc',
  'true',
  'null',
  '%5B%5D',
  '%7B%7D',
  '-1',
  '0',
  '1.5',
  '',
  '%20',
  'undefined',
  '%E2%98%83',
];
const WRONG_VALUES = [null, true, false, 0, -1, 1.5, [], new Obj([]), [1, 'a'], new Obj([['a', new Obj([])]]), 'text'];
const BAD_PERCENT = [
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AE',
  '%FF',
  '%00',
  '%u0041',
  '%%',
  '%2',
  '%ED%A0%80',
  '%C3%28',
  '%F4%90%80%80',
];
const CONTENT_TYPES = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'multipart/form-data; boundary=zzz',
  'application/octet-stream',
  'image/png',
  '',
  ';;',
  'application/json, text/plain',
  'application/vnd.api+json',
  'APPLICATION/JSON',
  'application/problem+json',
  `application/json; boundary=x; charset=utf-8; x=${'y'.repeat(300)}`,
];
const MULTIPART_TYPES = [
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'multipart/form-data; boundary="unterminated',
  'multipart/form-data; boundary=other',
  'multipart/mixed',
  'multipart/form-data; charset=utf-8',
];
const EMPTY_BODIES = ['', 'null', '""', '[]', '0', '{}', ' ', '\ufeff{}'];
const EXTRA_KEYS = ['extra', 'id', 'admin', 'role', 'user_id', 'balance', 'is_admin'];
const EXTRA_HEADERS: [string, string][] = [
  ['origin', 'https://evil.example'],
  ['access-control-request-method', 'DELETE'],
  ['accept', 'application/xml'],
  ['accept-encoding', 'gzip, br, zstd'],
  ['x-request-id', 'x'.repeat(65)],
  ['x-request-id', '../../etc/passwd'],
  ['range', 'bytes=0-1,5-2'],
  ['if-none-match', '*'],
  ['x-forwarded-for', '1.2.3.4, ::1, garbage'],
  ['content-encoding', 'gzip'],
  ['authorization', 'Bearer'],
  ['authorization', 'Basic Og=='],
  ['cookie', '__proto__=x; constructor=y'],
  ['x-cashu', 'cashuBnotatoken'],
];

/** Where a mutation can act: a parameter, a body property or (name null) the whole body. */
type Target = { in: 'path' | 'query'; name: string } | { in: 'body'; name: string | null };

function targetsOf(draft: Draft): Target[] {
  const targets: Target[] = [];
  for (const name of draft.path.keys()) targets.push({ in: 'path', name });
  for (const [name] of draft.query) targets.push({ in: 'query', name });
  if (draft.body) targets.push({ in: 'body', name: null });
  const body = draft.body?.value;
  if (body instanceof Obj) for (const [name] of body.entries) targets.push({ in: 'body', name });
  return targets;
}

/** Sets a target: parameters take URL text, body properties a value. */
function set(draft: Draft, target: Target, text: string, value: unknown): Draft {
  if (target.in === 'path') draft.path.set(target.name, text);
  else if (target.in === 'query') draft.query = draft.query.map(([k, v]) => [k, k === target.name ? text : v]);
  else if (!draft.body) draft.body = { type: 'application/json', value };
  else if (target.name === null) draft.body.value = value;
  else if (draft.body.value instanceof Obj) {
    draft.body.value = new Obj(draft.body.value.entries.map(([k, v]) => [k, k === target.name ? value : v]));
  }
  return draft;
}

/** Whether a target holds a number: by its parameter's schema, or by the generated value. */
function isNumeric(draft: Draft, target: Target): boolean {
  if (target.in !== 'body') {
    return ['integer', 'number'].includes(draft.op.parameters.find((p) => p.name === target.name)?.schema.type);
  }
  const body = draft.body?.value;
  const value = body instanceof Obj ? body.entries.find(([k]) => k === target.name)?.[1] : undefined;
  return typeof value === 'number' || (value instanceof Raw && /^-?\d/.test(value.text));
}

type Change = { text: string; value: unknown };

/** Applies `change` to one target picked by the generator (among the `preferred` ones when there are some). */
function onTarget(
  draft: Draft,
  mutation: string,
  change: (target: Target) => fc.Arbitrary<Change>,
  preferred: (target: Target) => boolean = () => false,
): fc.Arbitrary<Draft> {
  const all = targetsOf(draft);
  const targets = all.some(preferred) ? all.filter(preferred) : all;
  const pick = targets.length ? fc.constantFrom(...targets) : fc.constant<Target>({ in: 'body', name: null });
  return pick.chain((target) => {
    const label = `${mutation}@${target.in}:${target.name ?? '*'}`;
    return change(target).map(({ text, value }) => set(copy(draft, label), target, text, value));
  });
}

/** A draft changed in place on a copy (`change` returns nothing). */
const edit = (d: Draft, mutation: string, change: (draft: Draft) => void) => {
  const draft = copy(d, mutation);
  change(draft);
  return draft;
};

/** JSON nested `depth` deep: lists, objects, both, and with prototype keys at the bottom. */
function nested(depth: number, style: number): string {
  const [open, leaf, close] = [
    ['[', '', ']'],
    ['{"a":', '1', '}'],
    ['[{"a":', '0', '}]'],
    ['{"a":', '{"__proto__":{"polluted":"yes"}}', '}'],
    ['{"constructor":', '{"prototype":{"polluted":"yes"}}', '}'],
  ][style % 5];
  return open.repeat(depth) + leaf + close.repeat(depth);
}

type Step = string | number;

/** The paths to every leaf (a value that is not an object or list) of a generated value. */
function leafPaths(value: unknown, path: Step[] = [], paths: Step[][] = []): Step[][] {
  if (value instanceof Obj) value.entries.forEach(([key, v]) => leafPaths(v, [...path, key], paths));
  else if (Array.isArray(value)) value.forEach((v, i) => leafPaths(v, [...path, i], paths));
  else paths.push(path);
  return paths;
}

/** `value` with the leaf at `path` replaced. */
function replaceAt(value: unknown, path: Step[], replacement: unknown): unknown {
  if (!path.length) return replacement;
  const [step, ...rest] = path;
  if (value instanceof Obj) {
    return new Obj(value.entries.map(([k, v]) => [k, k === step ? replaceAt(v, rest, replacement) : v]));
  }
  if (Array.isArray(value)) return value.map((v, i) => (i === step ? replaceAt(v, rest, replacement) : v));
  return value;
}

const MUTATIONS: Record<string, (draft: Draft) => fc.Arbitrary<Draft>> = {
  wrongType: (d) =>
    onTarget(d, 'wrongType', () =>
      fc.oneof(
        fc.constantFrom(...WRONG_PARAM_TEXT).map((text) => ({ text, value: text })),
        fc.constantFrom(...WRONG_VALUES).map((value) => ({ text: encodeURIComponent(toJson(value)), value })),
      ),
    ),
  missing: (d) =>
    fc.constantFrom('param', 'body', 'property', 'auth').map((what) =>
      edit(d, `missing:${what}`, (draft) => {
        const required = d.op.parameters.filter((p) => p.required).map((p) => p.name);
        if (what === 'param') {
          draft.query = draft.query.filter(([k]) => !required.includes(k));
          draft.path = new Map([...draft.path].map(([k]) => [k, '']));
        } else if (what === 'body') draft.body = undefined;
        else if (what === 'auth') draft.headers = draft.headers.filter(([k]) => !/^(authorization|x-cashu)$/i.test(k));
        else if (draft.body?.value instanceof Obj) draft.body.value = new Obj(draft.body.value.entries.slice(1));
      }),
    ),
  extra: (d) =>
    fc
      .tuple(fc.oneof(fc.constantFrom(...EXTRA_KEYS), fc.string({ maxLength: 12 })), fc.jsonValue({ maxDepth: 2 }))
      .map(([key, value]) =>
        edit(d, `extra:${key}`, (draft) => {
          draft.query.push([encodeURIComponent(key), encodeURIComponent(toJson(value))]);
          if (draft.body?.value instanceof Obj) draft.body.value = new Obj([...draft.body.value.entries, [key, value]]);
        }),
      ),
  // Up to 12 KB in the URL (Node answers a longer head itself), past the 1 MB body limit in a body.
  huge: (d) =>
    onTarget(d, 'huge', (target) =>
      target.in === 'body'
        ? fc
            .tuple(fc.constantFrom(10_000, 200_000, 1_100_000), fc.constantFrom('x', 'é', '😀', '\u0000', '"\\'))
            .map(([n, unit]) => ({ text: '', value: unit.repeat(Math.ceil(n / unit.length)) }))
        : fc
            .tuple(fc.constantFrom(2_000, 6_000, 12_000), fc.constantFrom('A', '%F0%9F%98%80', '%00'))
            .map(([n, unit]) => ({ text: unit.repeat(Math.ceil(n / unit.length)), value: null })),
    ),
  // Nested at one of the body's leaves (a message's content, a list item…), or as the whole body.
  deep: (d) =>
    fc.tuple(fc.constantFrom(64, 1_000, 10_000, 100_000), fc.nat(4), fc.nat()).map(([depth, style, at]) =>
      edit(d, `deep:${depth}`, (draft) => {
        const deep = new Raw(nested(depth, style));
        const leaves = draft.body ? leafPaths(draft.body.value) : [];
        if (draft.body && leaves.length && at % 4) {
          draft.body.value = replaceAt(draft.body.value, leaves[at % leaves.length], deep);
        } else draft.body = { type: draft.body?.type ?? 'application/json', value: deep };
        if (!d.body) draft.query.push([`a${'%5Bb%5D'.repeat(Math.min(depth, 500))}`, '1']);
      }),
    ),
  proto: (d) =>
    fc.oneof(
      // At the top of the body and of each object in it.
      fc
        .tuple(fc.constantFrom('__proto__', 'constructor', 'prototype'), fc.constantFrom(...PROTO_JSON))
        .map(([key, json]) =>
          edit(d, `proto:body:${key}`, (draft) => {
            const entry: [string, unknown] = [key, new Raw(json)];
            const body = draft.body?.value;
            const entries = body instanceof Obj ? body.entries : [];
            const withKey = (v: unknown) => (v instanceof Obj ? new Obj([entry, ...v.entries]) : v);
            const inner = entries.map(([k, v]): [string, unknown] => [k, withKey(v)]);
            draft.body = { type: draft.body?.type ?? 'application/json', value: new Obj([entry, ...inner]) };
          }),
        ),
      fc
        .tuple(fc.constantFrom(...PROTO_QUERY_KEYS), fc.constantFrom('yes', '1', '%7B%7D'))
        .map(([key, value]) => edit(d, `proto:query:${key}`, (draft) => draft.query.push([key, value]))),
      fc
        .constantFrom(...PROTO_WORDS)
        .chain((word) => onTarget(d, `proto:value:${word}`, () => fc.constant({ text: word, value: word }))),
    ),
  bigNumber: (d) =>
    onTarget(
      d,
      'bigNumber',
      (target) =>
        target.in === 'body'
          ? fc.constantFrom(...BIG_NUMBERS).map((n) => ({ text: n, value: new Raw(n) }))
          : fc.constantFrom(...BIG_PARAM_TEXT).map((text) => ({ text, value: null })),
      (target) => isNumeric(d, target),
    ),
  badPercent: (d) =>
    fc
      .tuple(fc.constantFrom(...BAD_PERCENT), fc.constantFrom('path', 'query-value', 'query-key'), fc.nat())
      .map(([bad, where, at]) =>
        edit(d, `badPercent:${where}:${bad}`, (draft) => {
          if (where === 'path') draft.pathEdits.push((path) => insertAt(path, bad, at));
          else if (where === 'query-key' || !draft.query.length) draft.query.push([`k${bad}`, bad]);
          else draft.query[at % draft.query.length] = [draft.query[at % draft.query.length][0], bad];
        }),
      ),
  method: (d) =>
    fc.constantFrom(...METHODS).map((method) => edit(d, `method:${method}`, (draft) => (draft.method = method))),
  pathTrick: (d) =>
    fc
      .tuple(fc.constantFrom(...Object.keys(PATH_TRICKS)), fc.nat())
      .map(([trick, at]) =>
        edit(d, `path:${trick}`, (draft) => draft.pathEdits.push((path) => PATH_TRICKS[trick](path, at))),
      ),
  contentType: (d) =>
    fc.constantFrom(...CONTENT_TYPES).map((type) =>
      edit(d, `contentType:${type.slice(0, 40)}`, (draft) => {
        draft.contentType = type;
        if (!draft.body) draft.rawBody = '{"a":1}';
      }),
    ),
  // With the body's content type, with JSON's, or with none.
  emptyBody: (d) =>
    fc.tuple(fc.constantFrom(...EMPTY_BODIES), fc.constantFrom('kept', 'json', 'none')).map(([raw, type]) =>
      edit(d, `emptyBody:${JSON.stringify(raw)}:${type}`, (draft) => {
        draft.rawBody = raw;
        if (type === 'none') draft.contentType = null;
        else if (type === 'json' || !draft.body) draft.contentType = 'application/json';
      }),
    ),
  truncate: (d) =>
    fc.double({ min: 0, max: 0.99, noNaN: true }).map((fraction) =>
      edit(d, `truncate:${fraction.toFixed(2)}`, (draft) => {
        draft.body ??= { type: 'application/json', value: new Obj([['name', 'truncated']]) };
        draft.truncate = fraction;
      }),
    ),
  noBoundary: (d) =>
    fc.constantFrom(...MULTIPART_TYPES).map((type) =>
      edit(d, `noBoundary:${type}`, (draft) => {
        draft.contentType = type;
        const file = new FileValue('a.po', Buffer.from('msgid "a"\nmsgstr ""\n'));
        draft.rawBody = multipart(
          draft.body?.value ??
            new Obj([
              ['file_format', 'GNU_PO'],
              ['file', file],
            ]),
        );
      }),
    ),
  headers: (d) =>
    fc
      .subarray(EXTRA_HEADERS, { minLength: 1, maxLength: 3 })
      .map((extra) => edit(d, `headers:${extra.map(([k]) => k).join(',')}`, (draft) => draft.headers.push(...extra))),
};

function insertAt(path: string, text: string, at: number): string {
  const slashes = [...path.matchAll(/\//g)].map((m) => m.index!);
  const where = slashes[at % slashes.length] ?? 0;
  return `${path.slice(0, where + 1)}${text}${path.slice(where + 1)}`;
}

function replaceSlash(path: string, by: string, at: number): string {
  const slashes = [...path.matchAll(/\//g)].map((m) => m.index!).filter((i) => i > 0);
  if (!slashes.length) return path + by;
  const where = slashes[at % slashes.length];
  return path.slice(0, where) + by + path.slice(where + 1);
}

const ENCODED_DOTS = ['%2e%2e/', '%2E%2E/', '.%2e/', '%2e./', 'x/%2e%2e/', '%252e%252e/'];
const UNICODE = ['%E2%80%AE/', '%C3%A9/', '%EF%BC%8F', '%E2%88%95', 'é/', '%F0%9F%98%80/', '%CC%81'];

const PATH_TRICKS: Record<string, (path: string, at: number) => string> = {
  dotdot: (p, at) => insertAt(p, at % 2 ? 'x/../' : '../', at),
  dotdotDeep: (p) => `/${'../'.repeat(8)}${p.slice(1)}`,
  encodedDots: (p, at) => insertAt(p, ENCODED_DOTS[at % ENCODED_DOTS.length], at),
  dot: (p, at) => insertAt(p, './', at),
  doubleSlash: (p, at) => replaceSlash(p, '//', at),
  leadingDoubleSlash: (p) => `/${p}`,
  encodedSlash: (p, at) => replaceSlash(p, at % 2 ? '%2F' : '%2f', at),
  backslash: (p, at) => replaceSlash(p, at % 2 ? '\\' : '%5C', at),
  trailingSlash: (p) => (p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : `${p}/`),
  // A raw é (one latin-1 byte) is not HTTP; the others are encoded.
  unicode: (p, at) => insertAt(p, UNICODE[at % UNICODE.length], at),
  semicolon: (p, at) => insertAt(p, 'x;a=b/', at),
  nul: (p, at) => insertAt(p, '%00', at),
  upperCase: (p) => p.toUpperCase(),
  fragmentLike: (p) => `${p}%23frag`,
};

/** Requests for `operations`: about 30 % as generated, the rest with one or two mutations. */
export function requestArbitrary(operations: Operation[], options: GeneratorOptions = {}): fc.Arbitrary<FuzzRequest> {
  const mutation = fc.constantFrom(...Object.keys(MUTATIONS));
  const plan = fc.oneof(
    { weight: 3, arbitrary: fc.constant<string[]>([]) },
    { weight: 5, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: fc.array(mutation, { minLength: 2, maxLength: 2 }) },
  );
  // Operations with a body have more to get wrong: by default they come up twice as often.
  const weighted = operations.map((op) => ({
    weight: op.weight ?? (op.bodies.length ? 2 : 1),
    arbitrary: fc.constant(op),
  }));
  return fc
    .tuple(fc.oneof(...weighted), plan)
    .chain(([op, names]) => names.reduce((draft, name) => draft.chain(MUTATIONS[name]), draftOf(op, options)))
    .map(serialize);
}
