// The pure parts of the quotation service: word counting, decimals, list encodings, the
// working calendar, and the PO reader's edge cases.
import { describe, expect, it } from 'vitest';
import { countWords } from '../../src/quotes/jobs/wordcount.js';
import { formatDecimal, parseDecimal, roundHalfUp, totalCost } from '../../src/quotes/quotation/decimal.js';
import { parsePythonList, readBoolean, readList } from '../../src/quotes/common/params.js';
import { addWorkingTime, planLevel, type Translator } from '../../src/quotes/quotation/estimate.js';
import { parsePo } from '../../src/quotes/formats/po.js';
import { findLanguage } from '../../src/quotes/common/locales.js';
import { oneSkyTime } from '../../src/quotes/common/time.js';

describe('word counting', () => {
  it.each([
    ['Hello, world!', 2],
    ['...', 0],
    ["Don't stop the e-mail at 3.5 km", 8], // don't = 1, e-mail = 2 (e, mail), 3.5 = 1
    // Scripts without spaces: Intl.Segmenter dictionary words, never characters.
    ['日本語のテキストです', 4], // 日本語 / の / テキスト / です
    ['我们今天去公园', 4], // 我们 / 今天 / 去 / 公园
    ['สวัสดีครับวันนี้อากาศดี', 6],
    ['مرحبا بالعالم', 2], // Arabic is spaced
    ['Donaudampfschifffahrtsgesellschaftskapitän fährt los', 3], // a compound is one word
    // Placeholders count 1 each, whatever their syntax.
    ['You have %d new messages from %(name)s', 7],
    ['%1$s and %2$s', 3],
    ['{{count}} items in {0} of {folder}', 6],
    ['Hello $' + '{user}', 2], // a JavaScript-style placeholder
    ['100%% done', 2], // %% is a literal percent sign
    // Markup is not words; a URL or an email address is one.
    ['<b>Bold</b> text<br/>here', 3],
    ['Visit <a href="https://www.gnu.org/">https://www.gnu.org/</a> for more information.', 5],
    ['Write to bug-gettext@gnu.org today', 4],
    ['Tom &amp; Jerry', 2],
    ['', 0],
  ])('%s → %i', (text, words) => {
    expect(countWords(text)).toBe(words);
  });

  const segmenter = new Intl.Segmenter(undefined, { granularity: 'word' });
  const segmenterWords = (text: string) => [...segmenter.segment(text)].filter((s) => s.isWordLike).length;

  it('agrees with Intl.Segmenter on ASCII and Latin text (the fast path)', () => {
    const alphabet = 'ab Z9 -!?()"/\t\n.,\':;_+=#*éßŁǅ×÷¿·\u00ad\u0301’';
    for (let i = 0; i < 8000; i++) {
      let text = '';
      for (let j = 0; j < 12; j++) text += alphabet[(i * 7 + j * 13 + ((i * j) % 5)) % alphabet.length];
      expect(countWords(text), JSON.stringify(text)).toBe(segmenterWords(text));
    }
  });

  it('agrees with Intl.Segmenter on every Latin-1 and Latin Extended character', () => {
    for (let code = 0x80; code <= 0x24f; code++) {
      const c = String.fromCharCode(code);
      for (const text of [c, `a${c}b`, `1${c}2`, `x ${c}${c} y`, `${c}.${c}`, `${c}'s`, `${c}_${c}`]) {
        expect(countWords(text), `${JSON.stringify(text)} U+${code.toString(16)}`).toBe(segmenterWords(text));
      }
    }
  });
});

describe('decimal prices', () => {
  it('multiplies exactly and rounds half-up to cents', () => {
    expect(totalCost('0.005', 2013)).toBe('10.07'); // 10.065 (floats say 10.06)
    expect(totalCost('0.005', 17)).toBe('0.09'); // 0.085
    expect(totalCost('0.0125', 30)).toBe('0.38');
    expect(totalCost('0.0125', 5)).toBe('0.06'); // 0.0625
    expect(totalCost('0.1', 3)).toBe('0.30'); // 0.30000000000000004 as a float
    expect(totalCost('0.08', 0)).toBe('0.00');
    expect(totalCost('12', 1_000_000)).toBe('12000000.00');
    expect(formatDecimal(roundHalfUp(parseDecimal('2.4999'), 2))).toBe('2.50');
    expect(() => parseDecimal('1e-3')).toThrow(/not a decimal/);
    expect(() => parseDecimal('-1')).toThrow();
  });
});

describe('query conventions', () => {
  it('reads the five list encodings', () => {
    expect(readList({ files: ['a.po', 'b.po'] }, 'files')).toEqual(['a.po', 'b.po']);
    expect(readList({ 'files[]': ['a.po', 'b.po'] }, 'files')).toEqual(['a.po', 'b.po']);
    expect(readList({ 'files[1]': 'b.po', 'files[0]': 'a.po', 'files[10]': 'k.po' }, 'files')).toEqual([
      'a.po',
      'b.po',
      'k.po',
    ]);
    expect(readList({ files: '["a.po","b.po"]' }, 'files')).toEqual(['a.po', 'b.po']);
    expect(readList({ files: "['a.po', 'b.po',]" }, 'files')).toEqual(['a.po', 'b.po']);
    expect(readList({ files: 'single.po' }, 'files')).toEqual(['single.po']);
    expect(readList({}, 'files')).toBeUndefined();
    expect(parsePythonList(`['it\\'s.po', "x.po"]`)).toEqual(["it's.po", 'x.po']);
    expect(parsePythonList(`['a.po' 'b.po']`)).toBeNull();
    expect(() => readList({ files: "['a.po'" }, 'files')).toThrow(/not a list/);
  });

  it('reads booleans as true/false/1/0', () => {
    expect([
      readBoolean('x', 'true', false),
      readBoolean('x', '1', false),
      readBoolean('x', 'FALSE', true),
      readBoolean('x', '0', true),
      readBoolean('x', undefined, true),
    ]).toEqual([true, true, false, false, true]);
    expect(() => readBoolean('is_including_outdated', 'yes', true)).toThrow(/is_including_outdated/);
  });

  it('normalizes locale codes and prints OneSky times', () => {
    expect(findLanguage('ja')?.code).toBe('ja-JP');
    expect(findLanguage('zh_TW')?.code).toBe('zh-TW');
    expect(findLanguage('zh-Hant')?.code).toBe('zh-TW');
    expect(findLanguage('xx-YY')).toBeUndefined();
    expect(oneSkyTime(Date.UTC(2026, 10, 23, 9, 7, 12))).toBe('2026-11-23T09:07:12+0000');
  });
});

describe('the working calendar', () => {
  const berlin = { timeZone: 'Europe/Berlin', startHour: 9, endHour: 17 };
  const HOUR = 3_600_000;

  it('works Monday to Friday in the translator’s time zone', () => {
    const saturday = Date.UTC(2026, 10, 21, 12, 0); // Sat 21 Nov 2026, 13:00 in Berlin
    // Two hours of work start Monday 09:00 Berlin (08:00 UTC).
    expect(new Date(addWorkingTime(saturday, 2 * HOUR, berlin)).toISOString()).toBe('2026-11-23T10:00:00.000Z');
    // Friday 16:00 Berlin + 2 h: one hour on Friday, one on Monday.
    const friday = Date.UTC(2026, 10, 20, 15, 0);
    expect(new Date(addWorkingTime(friday, 2 * HOUR, berlin)).toISOString()).toBe('2026-11-23T09:00:00.000Z');
    // Eleven working days from Monday 23 Nov 09:00: two full weeks, then Monday 7 Dec until 17:00.
    const monday = Date.UTC(2026, 10, 23, 8, 0);
    expect(new Date(addWorkingTime(monday, 11 * 8 * HOUR, berlin)).toISOString()).toBe('2026-12-07T16:00:00.000Z');
    // Tokyo works while Berlin sleeps.
    expect(
      new Date(addWorkingTime(monday, HOUR, { timeZone: 'Asia/Tokyo', startHour: 9, endHour: 17 })).toISOString(),
    ).toBe('2026-11-24T01:00:00.000Z');
  });

  it('plans review after translation, and the preferred translator after their backlog', () => {
    const pool: Translator[] = ['A', 'B'].map((name) => ({
      name,
      wordsPerDayTranslation: 2000,
      wordsPerDayReview: 6000,
      timeZone: 'UTC',
      startHour: 9,
      endHour: 17,
    }));
    const now = Date.UTC(2026, 10, 23, 9, 0); // Monday 09:00 UTC
    const busy = new Map([['A', now + 4 * HOUR]]);
    const only = planLevel('translation_only', 1000, now, pool, busy, 'A');
    expect(only.fastest.assignments[0].translator).toBe('B');
    expect(only.fastest.completesAt).toBe(now + 4 * HOUR); // half a day of 8 hours
    expect(only.preferred.completesAt).toBe(now + 8 * HOUR); // A starts after the backlog
    const both = planLevel('translation_and_review', 1000, now, pool, busy, null);
    const [translate, review] = both.fastest.assignments;
    expect(translate.translator).not.toBe(review.translator);
    expect(review.startsAt).toBeGreaterThanOrEqual(translate.busyUntil);
    const reviewOnly = planLevel('review_only', 1000, now, pool, busy, null);
    expect(reviewOnly.fastest.completesAt).toBeLessThan(only.fastest.completesAt);
    expect(planLevel('translation_only', 0, now, pool, busy, null).fastest.completesAt).toBe(now);
  });
});

describe('PO reading', () => {
  it('checks the plural forms of every translated entry of a large file against the header', () => {
    const lines = [
      'msgid ""',
      'msgstr ""',
      '"Content-Type: text/plain; charset=UTF-8\\n"',
      '"Plural-Forms: nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);\\n"',
      '',
    ];
    for (let i = 0; i < 5000; i++) {
      lines.push(
        `msgid "One file ${i}"`,
        `msgid_plural "Many files ${i}"`,
        'msgstr[0] "a"',
        'msgstr[1] "b"',
        'msgstr[2] ""',
        '',
      );
    }
    const parsed = parsePo(Buffer.from(lines.join('\n')), 'GNU_PO');
    expect(parsed.units).toHaveLength(5000);
    expect(new Set(parsed.units.map((u) => u.key)).size).toBe(5000);
    expect(parsed.units[4999]).toMatchObject({
      source: 'One file 4999',
      sourcePlural: 'Many files 4999',
      forms: ['a', 'b', ''],
    });
    // Untranslated, a single msgstr[0] "" is what msgmerge and Weblate write: accepted.
    lines.push('msgid "Untranslated"', 'msgid_plural "Untranslateds"', 'msgstr[0] ""', '');
    expect(parsePo(Buffer.from(lines.join('\n')), 'GNU_PO').units[5000]).toMatchObject({
      forms: [''],
      untranslated: true,
    });
    lines.push('msgid "Wrong"', 'msgid_plural "Wrongs"', 'msgstr[0] "x"', '');
    expect(() => parsePo(Buffer.from(lines.join('\n')), 'GNU_PO')).toThrow(
      `line ${lines.length - 1}: the header says nplurals = 3 (line 2) but this translated entry has 1 plural form`,
    );
  });

  it('reads a legacy charset declared in the header', () => {
    const latin1 = Buffer.from(
      'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=ISO-8859-1\\n"\n\nmsgid "caf\xe9"\nmsgstr "Caf\xe9"\n',
      'latin1',
    );
    expect(parsePo(latin1, 'GNU_PO').units[0]).toMatchObject({ source: 'café', forms: ['Café'] });
  });

  it('keeps obsolete entries out and reads #| previous msgids', () => {
    const text =
      'msgid "a"\nmsgstr "b"\n\n' +
      '#, fuzzy\n#| msgctxt "old"\n#| msgid "Old "\n#| "text"\nmsgid "New text"\nmsgstr "x"\n\n' +
      '#, fuzzy\n#| msgid "Same"\nmsgid "Same"\nmsgstr "y"\n\n' +
      '#~ msgid "gone"\n#~ msgstr "weg"\n';
    const units = parsePo(Buffer.from(text), 'GNU_PO').units;
    expect(units.map((u) => [u.source, u.fuzzy, u.stale])).toEqual([
      ['a', false, false],
      ['New text', true, true],
      ['Same', true, false],
    ]);
  });

  it('finds the fuzzy flag on any of several flag lines', () => {
    const text =
      '#, c-format\n#, fuzzy\nmsgid "a %d"\nmsgstr "b %d"\n\n#, c-format\n#, no-wrap\nmsgid "c"\nmsgstr "d"\n';
    expect(parsePo(Buffer.from(text), 'GNU_PO').units.map((u) => u.fuzzy)).toEqual([true, false]);
  });
});
