// withMembersAdded against what it replaces: the parsed answer with the members set on it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withMembersAdded } from '../../src/proxy/forward/json-members.js';

const TOP = { total_msat: 120, input_msat: 70, change: 'cashuB' };
const IN_USAGE = { total_msat: 120, input_msat: 70 };

function added(text: string): unknown {
  const out = withMembersAdded(text, `"cost":${JSON.stringify(TOP)}`, 'usage', `"cost":${JSON.stringify(IN_USAGE)}`);
  return out === null ? null : JSON.parse(out);
}

/** What the node did before: the members set on the parsed value. */
function expected(text: string): unknown {
  const value = JSON.parse(text) as Record<string, unknown>;
  const usage = Object.hasOwn(value, 'usage') ? value.usage : undefined;
  if (typeof usage === 'object' && usage !== null && !Array.isArray(usage)) {
    (usage as Record<string, unknown>).cost = IN_USAGE;
  }
  value.cost = TOP;
  return value;
}

// Names JSON.stringify writes without escapes (JSON.parse then reads the same name).
const plainName = fc.string({
  unit: fc.constantFrom('a', 'b', 'u', 's', 'g', 'e', ' ', '{', '}', '[', ',', ':', 'é', '😀'),
});
const anyValue = fc.jsonValue({ maxDepth: 4 });
const usageValue = fc.oneof(fc.dictionary(plainName, anyValue, { maxKeys: 4 }), anyValue);
const answer = fc
  .record({
    before: fc.dictionary(plainName, anyValue, { maxKeys: 4 }),
    usage: fc.option(usageValue, { nil: undefined }),
    after: fc.dictionary(plainName, anyValue, { maxKeys: 4 }),
  })
  .map(({ before, usage, after }) => {
    const value: Record<string, unknown> = Object.create(null);
    Object.assign(value, before, usage === undefined ? {} : { usage }, after);
    delete value.cost;
    if (typeof value.usage === 'object' && value.usage !== null) delete (value.usage as Record<string, unknown>).cost;
    return value;
  });

describe('members added to the text of a JSON object', () => {
  it('gives what setting them on the parsed object gives, in any layout', () => {
    fc.assert(
      fc.property(answer, fc.constantFrom(0, 2, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(added(text)).toEqual(expected(text));
      }),
      { numRuns: 500 },
    );
  });

  it('adds to empty objects without a stray comma, and keeps every other byte', () => {
    expect(added('{}')).toEqual({ cost: TOP });
    expect(added(' { "usage" : { } } \n')).toEqual({ usage: { cost: IN_USAGE }, cost: TOP });
    const text = '{"id":12345678901234567890123,"x":1.50,"s":"\\u00e9","usage":{"prompt_tokens":7}}';
    const out = withMembersAdded(text, '"cost":{}', 'usage', '"cost":{}');
    expect(out).toBe(
      '{"id":12345678901234567890123,"x":1.50,"s":"\\u00e9","usage":{"prompt_tokens":7,"cost":{}},"cost":{}}',
    );
  });

  it('reads the member as JSON.parse does: the last of its name, only at the top level, only an object', () => {
    for (const text of [
      '{"usage":{"a":1},"usage":{"b":2}}',
      '{"usage":{"a":1},"usage":3}',
      '{"usage":[{"a":1}],"x":{"usage":{"b":2}}}',
      '{"x":"usage","y":{"usage":{}},"usage":"{"}',
      '{"a":"\\"usage\\"","usage":{"k":"}"}}',
      '{"a":"\\\\","usage":{"k":"\\\\\\"}"},"b":"x\\\\\\\\"}',
    ]) {
      expect(added(text)).toEqual(expected(text));
    }
    // A member JSON.parse reads past gets nothing.
    const twice = withMembersAdded('{"usage":{"a":1},"usage":3}', '"cost":1', 'usage', '"cost":2');
    expect(twice).toBe('{"usage":{"a":1},"usage":3,"cost":1}');
  });

  it('leaves a name written with escapes at the top level to the parsed value (null)', () => {
    expect(added('{"\\u0075sage":{"a":1}}')).toBeNull();
    expect(added('{"a\\"b":1,"usage":{}}')).toBeNull();
    // Escapes in values and in deeper names are read past.
    expect(added('{"a":"\\\\","b":{"\\u0075":1},"usage":{}}')).toEqual(
      expected('{"a":"\\\\","b":{"\\u0075":1},"usage":{}}'),
    );
  });

  it('walks an object nested 100,000 deep without recursion', () => {
    const deep = `{"usage":{"a":1},"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const out = withMembersAdded(deep, '"cost":1', 'usage', '"cost":2')!;
    expect(out.startsWith('{"usage":{"a":1,"cost":2},"x":[[')).toBe(true);
    expect(out.endsWith(']],"cost":1}')).toBe(true);
  });
});
