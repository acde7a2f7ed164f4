// The rules every answer of the fuzz suite must keep, in one place: no 5xx, and an error in the
// shape of the area its path belongs to; and Object.prototype as the process started with it.

export type Area = 'proxy' | 'admin' | 'tasks' | 'quotes' | 'platform';

export interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** The area a path belongs to, by its first segment. */
function areaOfPath(path: string): Area {
  if (/^\/api(\/|$)/.test(path)) return 'tasks';
  if (/^\/1(\/|$)/.test(path)) return 'quotes';
  if (/^\/(docs|openapi)(\/|$)/.test(path)) return 'platform';
  if (/^\/admin(\/|$)/.test(path)) return 'admin';
  return 'proxy';
}

/** `path` with dot segments resolved and slashes, encoded dots and encoded slashes taken literally. */
function resolvedPath(path: string): string {
  const decoded = path.replace(/%2e/gi, '.').replace(/%2f|%5c|\\/gi, '/');
  const segments: string[] = [];
  for (const segment of decoded.split('/')) {
    if (segment === '..') segments.pop();
    else if (segment !== '.' && segment !== '') segments.push(segment);
  }
  return `/${segments.join('/')}${decoded.endsWith('/') && segments.length ? '/' : ''}`;
}

/**
 * The areas whose error shape a request may be answered in. A path that names one area as sent
 * and another once its dot segments and doubled or encoded slashes are resolved belongs to
 * either: the router sees the first, a client that normalises URLs the second.
 */
export function areasOf(pathAndQuery: string): Set<Area> {
  const path = pathAndQuery.split('?')[0];
  const areas = new Set([areaOfPath(path), areaOfPath(resolvedPath(path))]);
  // The platform's own routes answer GET; any other method there is the proxy's to forward.
  if (/^\/(healthz|readyz|metrics)\/?$/.test(resolvedPath(path))) areas.add('platform');
  return areas;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The content type of each area's errors (HEAD answers are checked by it alone: they have no body). */
const CONTENT_TYPES: Record<Area, RegExp> = {
  tasks: /^application\/problem\+json/i,
  platform: /^application\/problem\+json/i,
  quotes: /^application\/json/i,
  proxy: /^application\/json/i,
  // The operator's HTML page answers its errors as pages; anything else there is the proxy's.
  admin: /^(text\/html|application\/json)/i,
};

/** Why `body` is not the area's error shape, or null when it is. */
const BODIES: Record<Area, (answer: Answer, body: unknown) => string | null> = {
  // RFC 9457 problem details.
  tasks: problem,
  platform: problem,
  // OneSky: {"meta":{"status","message"},"data":{}}.
  quotes: (answer, body) => {
    if (!isObject(body) || !isObject(body.meta)) return 'no meta object';
    if (body.meta.status !== answer.status) return `meta.status ${body.meta.status} is not the HTTP status`;
    if (typeof body.meta.message !== 'string') return 'meta.message is not a string';
    if (!isObject(body.data) || Object.keys(body.data).length) return 'data is not {}';
    return null;
  },
  // FastAPI's {"detail":[{loc,msg,type}]} for 422, OpenAI's {"error":{message,type,code}} otherwise.
  proxy: (answer, body) => {
    if (answer.status === 422 && isObject(body) && Array.isArray(body.detail)) {
      const isLoc = (loc: unknown) => Array.isArray(loc) && loc.every((l) => ['string', 'number'].includes(typeof l));
      const isText = (text: unknown) => typeof text === 'string';
      const bad = body.detail.find((d) => !isObject(d) || !isLoc(d.loc) || !isText(d.msg) || !isText(d.type));
      return bad === undefined ? null : `detail item ${JSON.stringify(bad)} is not {loc,msg,type}`;
    }
    if (!isObject(body) || !isObject(body.error)) return 'neither {"detail":[…]} (422) nor {"error":{…}}';
    const { message, type, code } = body.error;
    if (typeof message !== 'string' || typeof type !== 'string') return 'error.message or error.type is not a string';
    if (!Object.hasOwn(body.error, 'code') || (code !== null && typeof code !== 'string')) {
      return 'error.code is not a string or null';
    }
    return null;
  },
  admin: (answer, body) => (/^text\/html/i.test(answer.contentType) ? null : BODIES.proxy(answer, body)),
};

function problem(answer: Answer, body: unknown): string | null {
  if (!isObject(body)) return 'body is not a JSON object';
  if (typeof body.type !== 'string' || typeof body.title !== 'string') return 'type or title is not a string';
  if (body.status !== answer.status) return `status ${body.status} is not the HTTP status`;
  return null;
}

function shapeProblem(area: Area, method: string, answer: Answer): string | null {
  if (!CONTENT_TYPES[area].test(answer.contentType)) return `content type ${answer.contentType || 'none'}`;
  if (method === 'HEAD') return null;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    body = undefined;
  }
  return BODIES[area](answer, body);
}

/** What is wrong with the answer to `method path`, or null. */
export function violation(method: string, pathAndQuery: string, answer: Answer): string | null {
  if (answer.status >= 500) return `${answer.status}`;
  if (answer.status < 400) return null;
  const areas = [...areasOf(pathAndQuery)];
  const reasons = areas.map((area) => shapeProblem(area, method, answer));
  return reasons.includes(null) ? null : `not in the ${areas.join(' or ')} error shape: ${reasons.join('; ')}`;
}

// ---------------------------------------------------------------------------------------------
// Object.prototype: the server runs in this process (startTestServer), so this probe sees what
// a polluting request did to the server's own objects.

const PROTOTYPES: [string, object][] = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['Function.prototype', Function.prototype],
  ['String.prototype', String.prototype],
];

const FIELDS = ['value', 'get', 'set', 'enumerable'] as const;

export type PrototypeSnapshot = Map<string, Map<string | symbol, PropertyDescriptor>>;

export function prototypeSnapshot(): PrototypeSnapshot {
  const descriptors = (proto: object) =>
    new Map(Reflect.ownKeys(proto).map((key) => [key, Reflect.getOwnPropertyDescriptor(proto, key)!]));
  return new Map(PROTOTYPES.map(([name, proto]) => [name, descriptors(proto)]));
}

/** Properties added to, changed on or removed from the prototypes since `before`. */
export function prototypeChanges(before: PrototypeSnapshot): string[] {
  const changes: string[] = [];
  const now = prototypeSnapshot();
  for (const [name, properties] of now) {
    const old = before.get(name)!;
    for (const [key, descriptor] of properties) {
      const was = old.get(key);
      const same = was && FIELDS.every((field) => was[field] === descriptor[field]);
      if (!same) changes.push(`${name}.${String(key)} was ${was ? 'changed' : 'added'}: ${shown(descriptor.value)}`);
    }
    for (const key of old.keys()) if (!properties.has(key)) changes.push(`${name}.${String(key)} was removed`);
  }
  return changes;
}

/** Puts the prototypes back as `before` had them: one polluting request does not spoil the rest of the run. */
export function restorePrototypes(before: PrototypeSnapshot) {
  for (const [name, proto] of PROTOTYPES) {
    const old = before.get(name)!;
    for (const key of Reflect.ownKeys(proto)) if (!old.has(key)) Reflect.deleteProperty(proto, key);
    for (const [key, descriptor] of old) Reflect.defineProperty(proto, key, descriptor);
  }
}

function shown(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 100) ?? String(value);
  } catch {
    return String(value);
  }
}
