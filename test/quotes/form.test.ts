// The form-encoded body reader of the quotation API (src/http/form.ts): the nested names that PHP's
// http_build_query and the `qs` module write, read back into the objects they were written from;
// hostile names stay plain keys, and every walk is bounded.
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { MAX_DEPTH, MAX_PAIRS, parseForm } from '../../src/http/form.js';

/** What qs.stringify (arrayFormat "indices", the request library's `form:`) writes for a value. */
function qsLike(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object') {
    return [`${encodeURIComponent(prefix)}=${encodeURIComponent(String(value))}`];
  }
  return Object.entries(value).flatMap(([key, child]) => qsLike(child, prefix ? `${prefix}[${key}]` : key));
}

const plain = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('form bodies', () => {
  it('reads back what qs and http_build_query write: nested objects and lists, numbers as text', () => {
    const sent = {
      screenshots: [
        {
          name: 'screen 1.png',
          image: 'data:image/png;base64,iVBO+/w==',
          tags: [
            { key: 'common.nav', x: 460, y: 30, width: 150, height: 50, file: 'string.po' },
            { key: 'a&b=c', x: 0, y: 0, width: 1, height: 1 },
          ],
        },
      ],
      api_key: 'k',
      timestamp: 1700000000,
    };
    const body = qsLike(sent).join('&');
    expect(body).toContain('screenshots%5B0%5D%5Btags%5D%5B1%5D%5Bkey%5D=a%26b%3Dc');
    expect(plain(parseForm(body))).toEqual(
      JSON.parse(JSON.stringify(sent, (_key, v) => (typeof v === 'number' ? String(v) : v))),
    );
  });

  it('appends with [], repeats a plain name into a list, reads + as a space and a name without =', () => {
    expect(plain(parseForm('files[]=a.po&files[]=b+c.po&x=1&x=2&flag'))).toEqual({
      files: ['a.po', 'b c.po'],
      x: ['1', '2'],
      flag: '',
    });
    expect(plain(parseForm('list[][k]=1&list[][k]=2'))).toEqual({ list: [{ k: '1' }, { k: '2' }] });
    // Indexes out of order come back in index order; an index too large keeps an object.
    expect(plain(parseForm('a[2]=c&a[0]=a&a[1]=b'))).toEqual({ a: ['a', 'b', 'c'] });
    expect(plain(parseForm('a[99999]=x'))).toEqual({ a: { 99999: 'x' } });
    expect(plain(parseForm(''))).toEqual({});
    expect(plain(parseForm('a[b=1'))).toEqual({ 'a[b': '1' });
  });

  it('keeps hostile names as plain keys of objects without a prototype', () => {
    const parsed = parseForm('__proto__[polluted]=1&constructor[prototype][polluted]=2&a[__proto__][x]=3');
    expect(Object.getPrototypeOf(parsed)).toBeNull();
    expect(Object.hasOwn(parsed, '__proto__')).toBe(true);
    expect(plain(parsed.constructor)).toEqual({ prototype: { polluted: '2' } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });

  it('refuses what it cannot read, with a client error', () => {
    const refused = (body: string) => {
      try {
        parseForm(body);
      } catch (error) {
        expect(error).toBeInstanceOf(HttpError);
        return [(error as HttpError).status, (error as HttpError).message];
      }
      throw new Error(`accepted ${body}`);
    };
    expect(refused('a=%zz')).toEqual([400, 'The form body has malformed percent-encoding near "%zz"']);
    expect(refused('a=1&a[b]=2')).toEqual([400, 'The form field "a[b]" is both a value and a group of fields']);
    expect(refused('a[b]=2&a=1')[0]).toBe(400);
    expect(refused(`a${'[x]'.repeat(MAX_DEPTH + 1)}=1`)[1]).toMatch(/nests deeper than 8 levels/);
    expect(refused(Array.from({ length: MAX_PAIRS + 1 }, (_, i) => `f${i}=1`).join('&'))[0]).toBe(413);
  });
});
