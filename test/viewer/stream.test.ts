// The viewer's streaming JSON reader (viewer/src/stream.ts), in Node: fed any JSON text in any
// chunks, it gives exactly what JSON.parse gives (values, key order, duplicate keys, `__proto__`),
// or hands the text back for JSON.parse (which then reports the error) when it is not valid JSON.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamingJson } from '../../viewer/src/stream.js';
import { edited } from './support.js';

const encoder = new TextEncoder();

/** Feeds `bytes` in chunks ending at `cuts` (fractions of the length), then finishes. */
function read(bytes: Uint8Array, cuts: number[]) {
  const reader = new StreamingJson();
  let at = 0;
  for (const cut of cuts.map((f) => Math.floor(f * bytes.length)).sort((a, b) => a - b)) {
    if (cut <= at) continue;
    reader.push(bytes.subarray(at, cut));
    at = cut;
  }
  reader.push(bytes.subarray(at));
  return { reader, doc: reader.finish() };
}

/** JSON.parse's answer, or the error it throws. */
function parsed(text: string): { value?: unknown; error?: boolean } {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: true };
  }
}

/** Same values in the same key order, own `__proto__` keys included. */
const same = (a: unknown, b: unknown) => expect(JSON.stringify(a)).toBe(JSON.stringify(b));

// Strings that stress the scan: quotes, backslashes before quotes, brackets, non-ASCII, escapes.
const tricky = fc.constantFrom('"', '\\', '\\"', '{', '}', '[', ']', ',', ':', 'é', '😀', '\u2028', '\\\\"', '');
const text = fc.array(fc.oneof(fc.string({ maxLength: 6 }), tricky), { maxLength: 5 }).map((parts) => parts.join(''));
const key = fc.oneof(text, fc.constantFrom('paths', '__proto__', 'constructor', 'openapi', 'components', '$ref'));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1.5e-7, 1.2345678901234567e19),
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map(members),
  ),
})).value;

/** An object from [key, value] pairs as JSON.parse would build it (own keys, `__proto__` too). */
function members(pairs: [string, unknown][]) {
  const out = {};
  for (const [k, v] of pairs) {
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Description-like roots: members around `paths` (sometimes twice), path items of any shape. */
const root = fc
  .tuple(
    fc.array(fc.tuple(key, value), { maxLength: 4 }),
    fc.array(fc.tuple(fc.oneof(key, fc.constant('/pets/{id}')), value), { maxLength: 6 }),
    fc.array(fc.tuple(key, value), { maxLength: 4 }),
    fc.boolean(),
  )
  .map(([before, paths, after, twice]) => {
    const all: [string, unknown][] = [...before, ['paths', members(paths)], ...after];
    if (twice) all.push(['paths', members(paths.slice(1))]);
    return all;
  });

/** JSON text of [key, value] pairs, duplicates kept, with some indentation. */
function serialize(pairs: [string, unknown][], indent: number) {
  const inner = pairs.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v, null, indent)}`);
  return `{${' '.repeat(indent)}${inner.join(`,\n${' '.repeat(indent)}`)}\n}`;
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 });

describe('the streaming JSON reader', () => {
  it('gives what JSON.parse gives, for any chunking', () => {
    fc.assert(
      fc.property(root, fc.nat(3), cuts, (pairs, indent, at) => {
        const source = serialize(pairs, indent);
        const { doc } = read(encoder.encode(source), at);
        expect(doc).toBeDefined();
        same(doc, JSON.parse(source));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the text back for JSON.parse whenever JSON.parse would fail, and agrees otherwise', () => {
    // One byte deleted, replaced or inserted: mostly invalid JSON, sometimes still valid.
    const edit = fc.tuple(fc.nat(), fc.constantFrom('delete', 'replace', 'insert'), fc.constantFrom(...',:{}[]"\\ x1'));
    fc.assert(
      fc.property(root, fc.nat(2), cuts, edit, (pairs, indent, at, [where, how, char]) => {
        const source = edited(serialize(pairs, indent), where, how, char);
        // The bytes as served: an edit that split a surrogate pair is sent as U+FFFD.
        const bytes = encoder.encode(source);
        const expected = parsed(new TextDecoder().decode(bytes));
        const { doc } = read(bytes, at);
        if (expected.error || typeof expected.value !== 'object' || Array.isArray(expected.value)) {
          expect(doc).toBeUndefined();
        } else same(doc, expected.value);
      }),
      { numRuns: 500 },
    );
  });

  it('reads escapes, quotes and non-ASCII text split at every byte', () => {
    const source = JSON.stringify(
      {
        'a"b': 'c\\',
        paths: { '/x\\"y': { get: { summary: 'q\\\\"r" \u00e9 😀 {[' } }, '/z': [1, '\\'] },
        tail: { '\\': '"\\"' },
      },
      null,
      1,
    );
    const bytes = encoder.encode(source);
    for (let cut = 1; cut < bytes.length; cut++) {
      same(read(bytes, [(cut + 0.5) / bytes.length]).doc, JSON.parse(source));
    }
  });

  it('agrees with JSON.parse on commas, duplicates and large members around `paths`', () => {
    const big = JSON.stringify({ schemas: { Big: { description: 'x'.repeat(70_000) } } });
    for (const source of [
      '{"paths": {}, }',
      '{"paths": {"/a": {}},}',
      '{"paths": {"/a": {}} "x": 1}',
      '{"paths": {"/a": {},}}',
      '{,"paths": {}}',
      '{"a": 1,}',
      '{"paths": {}} {}',
      '{"paths": {}, "x": 1}}',
      `{"components": ${big}, "components": {"small": 1}, "paths": {"/a": {}}}`,
      `{"components": {"small": 1}, "paths": {"/a": {}}, "components": ${big}}`,
      `{"paths": {"/a": {}}, "x": 1, "paths": {"/b": {}}}`,
      `{"components": ${big.slice(0, -1)}, "paths": {}}`,
    ]) {
      const expected = parsed(source);
      const { doc } = read(encoder.encode(source), [0.1, 0.5]);
      if (expected.error) expect(doc, source.slice(0, 60)).toBeUndefined();
      else same(doc, expected.value);
    }
  });

  it('hands back what is not an object: YAML, arrays, text, other leading white space', () => {
    for (const source of ['openapi: 3.0.0\npaths: {}\n', '[1, 2]', 'null', '\u00a0{"a": 1}', '', '{"a": 1} x']) {
      expect(read(encoder.encode(source), [0.1, 0.3]).doc).toBeUndefined();
    }
    // What trimStart() dropped before JSON.parse: a byte order mark and ASCII white space.
    same(read(encoder.encode('\ufeff \t\v\f\r\n{"a": 1}'), [0.05, 0.1]).doc, { a: 1 });
  });

  it('has the first path items, as parsed values, before the rest has arrived', () => {
    const source = JSON.stringify({
      openapi: '3.1.0',
      info: { title: 'Big', version: '1' },
      paths: Object.fromEntries(
        Array.from({ length: 50 }, (_, i) => [`/things/${i}`, { get: { summary: `get ${i}` } }]),
      ),
      components: { schemas: { Thing: { type: 'object' } } },
    });
    const bytes = encoder.encode(source);
    const reader = new StreamingJson();
    reader.push(bytes.subarray(0, source.indexOf('/things/3"')));
    expect(reader.progressed()).toBe(true);
    expect(reader.root.info).toEqual({ title: 'Big', version: '1' });
    expect(Object.keys(reader.root.paths as object)).toEqual(['/things/0', '/things/1', '/things/2']);
    expect(reader.pathsDone).toBe(false);
    expect(reader.progressed()).toBe(false);
    reader.push(bytes.subarray(source.indexOf('/things/3"'), source.indexOf('"components"')));
    expect(reader.pathsDone).toBe(true);
    expect(reader.progressed()).toBe(true);
    expect(reader.root.components).toBeUndefined(); // after `paths`: read once everything is in
    reader.push(bytes.subarray(source.indexOf('"components"')));
    same(reader.finish(), JSON.parse(source));
  });

  it('keeps a root `__proto__` key a plain member, as JSON.parse does', () => {
    const source = '{"__proto__": {"polluted": true}, "paths": {"__proto__": {"get": {}}}, "x": {"__proto__": 1}}';
    const { doc } = read(encoder.encode(source), [0.05, 0.4]);
    expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
    expect(Object.hasOwn(doc!, '__proto__')).toBe(true);
    expect(Object.hasOwn(doc!.paths as object, '__proto__')).toBe(true);
    expect(({} as any).polluted).toBeUndefined();
    same(doc, JSON.parse(source));
  });
});
