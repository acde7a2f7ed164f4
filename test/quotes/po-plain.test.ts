// The plain PO reader (src/quotes/formats/po-plain.ts) must give exactly what gettext-parser
// gives: for any input the same units in the same order, or the same error. It must also take
// the layout real files have, or it would speed nothing up.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as gettextParser from 'gettext-parser';
import { describe, expect, it } from 'vitest';
import { parsePo } from '../../src/quotes/formats/po.js';
import { readPlainEntries } from '../../src/quotes/formats/po-plain.js';

const HEADER =
  'msgid ""\nmsgstr ""\n' +
  '"Content-Type: text/plain; charset=UTF-8\\n"\n"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n';

function outcome(text: string, plainReader: boolean): unknown {
  try {
    return parsePo(Buffer.from(text), 'GNU_PO', { plainReader });
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function expectSameAsGettextParser(text: string): void {
  expect(outcome(text, true), JSON.stringify(text)).toEqual(outcome(text, false));
}

const isPlain = (body: string) => readPlainEntries(body, { nplurals: 2, headerFirst: true }) !== null;

describe('the plain PO reader', () => {
  // [case, body, read by the plain reader (else left to gettext-parser)]
  const cases: [string, string, boolean][] = [
    [
      'comments of every kind',
      '# translator\n#. extracted\n#: a.c:1 b.c:2\n#, fuzzy, c-format\n#| msgid "Old"\nmsgid "New"\nmsgstr "Neu"\n',
      true,
    ],
    [
      'contexts, empty and numeric ones, and numeric msgids',
      'msgid "b"\nmsgstr ""\n\n' +
        'msgctxt "menu"\nmsgid "Open"\nmsgstr "x"\n\nmsgctxt ""\nmsgid "Open"\nmsgstr "y"\n\n' +
        'msgctxt "9"\nmsgid "10"\nmsgstr ""\n\nmsgid "2"\nmsgstr ""\n\nmsgid "1"\nmsgstr ""\n',
      true,
    ],
    [
      'plurals and continuation lines',
      'msgid ""\n"One "\n"file"\nmsgid_plural "%d "\n"files"\nmsgstr[0] "Eine"\n" Datei"\nmsgstr[1] ""\n',
      true,
    ],
    [
      'escapes, CRLF, indentation and no blank lines',
      'msgid "a\\"b\\\\c\\td\\ne\\a"\r\nmsgstr "x"  \r\n  #, fuzzy\r\n\tmsgid "日本語"\r\nmsgstr "y"\r\n',
      true,
    ],
    ['msgstr[0] without a plural', 'msgid "a"\nmsgstr[0] "b"\n', true],
    ['obsolete entries', 'msgid "a"\nmsgstr "b"\n\n#~ msgid "gone"\n#~ msgstr "weg"\n', false],
    ['a duplicate', 'msgid "a"\nmsgstr ""\n\nmsgid "a"\nmsgstr ""\n', false],
    ['an empty msgid', 'msgid ""\nmsgstr "x"\n', false],
    ['too few plural forms', 'msgid "a"\nmsgid_plural "b"\nmsgstr[0] ""\n', false],
    ['two msgstr for a singular', 'msgid "a"\nmsgstr "b"\nmsgstr "c"\n', false],
    ['a missing msgstr', 'msgid "a"\n\nmsgid "b"\nmsgstr ""\n', false],
    ['no space after the keyword', 'msgid"a"\nmsgstr ""\n', false],
    ['two strings on a line', 'msgid "a" "b"\nmsgstr ""\n', false],
    ['an unterminated string', 'msgid "a\nmsgstr ""\n', false],
    ['a backslash continuing the line', 'msgid "a\\\nb"\nmsgstr ""\n', false],
    ['single quotes', "msgid 'a'\nmsgstr ''\n", false],
    ['a comment inside an entry', 'msgid "a"\n# here\nmsgstr ""\n', false],
    ['an unknown keyword', 'msgid "a"\nmsgfoo "b"\nmsgstr ""\n', false],
    ['a string before any keyword', '"b"\nmsgid "a"\nmsgstr ""\n', false],
  ];
  it.each(cases)('%s: same as gettext-parser (plain layout: %s)', (_name, body, plain) => {
    expect(isPlain(body)).toBe(plain);
    expectSameAsGettextParser(`${HEADER}\n${body}`);
  });

  it('reads msgids named like Object.prototype members, which gettext-parser takes for duplicates', () => {
    const body = 'msgid "constructor"\nmsgstr "c"\n\nmsgctxt "toString"\nmsgid "__proto__"\nmsgstr "p"\n';
    expect(isPlain(body)).toBe(true);
    expect(outcome(`${HEADER}\n${body}`, true)).toMatchObject({
      units: [
        { key: 'constructor', forms: ['c'] },
        { key: 'toString\u0004__proto__', context: 'toString', source: '__proto__', forms: ['p'] },
      ],
    });
    const refused = {
      error: expect.stringContaining('msgid "constructor" is declared twice, or is in a part of the file'),
    };
    expect(outcome(`${HEADER}\n${body}`, false)).toEqual(refused);
    // A real duplicate is one still, and so is a slice gettext-parser reads (an obsolete entry).
    expect(isPlain(`${body}\n${body}`)).toBe(false);
    expect(outcome(`${HEADER}\n${body}\n${body}`, true)).toEqual(refused);
    expect(outcome(`${HEADER}\n${body}\n#~ msgid "gone"\n#~ msgstr ""\n`, true)).toEqual(refused);
  });

  it("names an error's line in the file, also in a later slice", () => {
    const entries = Array.from({ length: 700 }, (_, i) => `msgid "Text ${i}"\nmsgstr "T ${i}"\n`);
    const broken = 'msgid "broken"\nmsgstr "a"b"\n';
    for (const at of [10, 600]) {
      const text = `${HEADER}\n${entries.slice(0, at).join('\n')}\n${broken}\n${entries.slice(at).join('\n')}`;
      // gettext-parser reading the whole file at once says where the error is.
      let whole = '';
      try {
        gettextParser.po.parse(text);
      } catch (error) {
        whole = (error as Error).message;
      }
      const line = Number(/at line (\d+)/.exec(whole)?.[1]);
      expect(text.split('\n')[line - 1]).toContain('msgstr "a');
      for (const plainReader of [true, false]) {
        expect(outcome(text, plainReader)).toEqual({ error: expect.stringContaining(`at line ${line}.`) });
      }
    }
  });

  it('gives the fixtures and a file of several slices as gettext-parser does', () => {
    for (const name of ['messages.pot', 'messages.de.po', 'other.pot']) {
      expectSameAsGettextParser(readFileSync(join(import.meta.dirname, '../fixtures/quotes', name), 'utf8'));
    }
    const entries = Array.from(
      { length: 1200 },
      (_, i) => `#, fuzzy\nmsgctxt "c${i % 3}"\nmsgid "${i % 7 ? `Text ${i}` : i}"\nmsgstr "T ${i}"\n`,
    );
    const big = `${HEADER}\n${entries.join('\n')}`;
    expect(isPlain(entries.join('\n'))).toBe(true);
    expectSameAsGettextParser(big);
  });

  it('agrees with gettext-parser on random files, plain or not', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    const pick = <T>(items: T[]): T => items[random(items.length)];
    const headers = [
      HEADER,
      'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=3; plural=0;\\n"\n',
      'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\\n"\n',
      '# no header\n',
      '',
    ];
    // Names of Object.prototype (toString) are the one known difference: tested above.
    const texts = [
      'Hello',
      'Open %s',
      'a\\nb',
      'tab\\there',
      'say \\"hi\\"',
      'back\\\\slash',
      'bell\\a',
      '0',
      '1',
      '12',
      '007',
      'Save',
      '',
      'Ünïcödé 日本',
      'Hello',
      'World',
    ];
    const comments = [
      '# translator',
      '#. extracted',
      '#: file.c:1',
      '#, fuzzy',
      '#, fuzzy, c-format',
      '#,fuzzy',
      '#| msgid "Old"',
      '#|msgid "x"',
      '#',
      '#\r',
      '#\r, fuzzy',
      '   #, fuzzy',
    ];
    const inserted = [
      '#, fuzzy',
      '# x',
      '#| msgid "q"',
      '',
      '"cont"',
      'msgctxt "z"',
      'msgstr[1] "s"',
      'msgid_plural "p"',
      '#~ msgid "o"',
      ' \t ',
      '\r',
      'msgid "a\rb"',
    ];
    const mutations: ((lines: string[], at: number) => void)[] = [
      (lines, at) => lines.splice(at, 1),
      (lines, at) => lines.splice(at, 0, lines[random(lines.length)]),
      (lines, at) => lines.splice(at, 0, pick(inserted)),
      (lines, at) => lines.splice(at, 1, `  ${lines[at]}`),
      (lines, at) => lines.splice(at, 1, `${lines[at]} "x"`),
      (lines, at) => lines.splice(at, 1, lines[at].replace(' "', '"')),
      (lines, at) => lines.splice(at, 1, lines[at].replace('"', "'")),
      (lines, at) => lines.splice(at, 1, `${lines[at]}\\`),
      (lines, at) => lines.splice(at, 1, `${lines[at]} # c`),
      (lines, at) => lines.splice(at, 1, lines[at].slice(0, -1)),
    ];
    let plainFiles = 0;
    const runs = 600;
    for (let run = 0; run < runs; run++) {
      const entries: string[] = [];
      const count = random(20) === 0 ? 300 + random(300) : 1 + random(12);
      for (let e = 0; e < count; e++) {
        const lines = Array.from({ length: random(3) }, () => pick(comments));
        if (random(40) === 0) lines.unshift('#~ msgid "old"\n#~ msgstr "alt"\n');
        if (random(3) === 0) lines.push(`msgctxt "${pick(['', 'menu', '9', '10', 'menu'])}"`);
        // Mostly distinct msgids; a few duplicates.
        const msgid = random(8) ? `${pick(texts)} ${e}` : pick(texts);
        lines.push(random(5) === 0 ? `msgid ""\n"${msgid}"\n"${pick(texts)}"` : `msgid "${msgid}"`);
        if (random(4) === 0) {
          if (random(8)) lines.push(`msgid_plural "${pick(texts)}s"`);
          else lines.push('msgid_plural ""');
          const forms = random(6) ? 2 : 1 + random(3);
          for (let f = 0; f < forms; f++) lines.push(`msgstr[${f}] "${pick(texts)}"`);
        } else {
          lines.push(random(10) ? `msgstr "${pick(texts)}"` : `msgstr[0] "${pick(texts)}"`);
        }
        entries.push(lines.join('\n'));
      }
      let body = entries.join(random(6) ? '\n\n' : '\n') + '\n';
      if (random(3) === 0) {
        const lines = body.split('\n');
        pick(mutations)(lines, random(lines.length));
        body = lines.join('\n');
      }
      if (random(5) === 0) body = body.replace(/\n/g, '\r\n');
      if (isPlain(body)) plainFiles++;
      expectSameAsGettextParser(`${pick(headers)}\n${body}`);
    }
    // Both readers were exercised.
    expect(plainFiles).toBeGreaterThan(runs / 5);
    expect(plainFiles).toBeLessThan(runs - runs / 5);
  });
});
