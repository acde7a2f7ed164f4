// Markup and placeholders of each format are not billed as words (docs/quotes.md, "Word
// counting"): react-i18next's indexed tags, ICU plural/select arguments, i18next's {{name}} and
// $t(key), printf and iOS placeholders, Android's <xliff:g>. Examples, then properties over
// random texts (fast-check): adding markup around or between words never changes the count, and
// a placeholder always counts exactly one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countWords } from '../../src/quotes/jobs/wordcount.js';

describe('word counts of markup and placeholders', () => {
  it.each([
    // react-i18next <Trans>: the indexed tags are markup (they used to bill "1" as a word each).
    ['Hello <1>world</1>', 2],
    ['Click <0/> here, or <2 /> there', 4],
    ['<1>Welcome</1> to <3>the <5>new</5> app</3>', 5],
    ['Read the <bold>manual</bold>', 3],
    // ICU: the argument, its keyword and selectors are syntax; each branch is counted; # is 1.
    ['You have {count, plural, one {# message} other {# messages}}', 6],
    ['{n, plural, =0 {no files} one {one file} other {{n} files}}', 6],
    ['{gender, select, male {He said} female {She said} other {They said}}', 6],
    ['{n, plural, offset:1 =0 {nobody} one {{host} alone} other {{host} and # others}}', 7],
    ['{place, selectordinal, one {#st} two {#nd} other {#th}}', 6],
    ['{g, select, other {{n, plural, one {# cat} other {# cats}}}}', 4],
    ['{count, number} items and {0}', 4],
    // i18next
    ['Hello {{name}}, you have {{count}} messages', 6],
    ['$t(common.ok) or $t(common.cancel, {"context": "male"})', 3],
    // printf, Android, iOS
    ['%1$s of %2$d done, %.1f%% left', 6],
    ['Hi %@, %1$@ sent %lu photos', 6],
    ['Hello <xliff:g id="name" example="Bob">%1$s</xliff:g>!', 2],
    ['Download <xliff:g id="app_name">Quartet Pro</xliff:g> now', 3],
  ])('%s → %i', (text, words) => {
    expect(countWords(text)).toBe(words);
  });

  it('stays linear on hostile ICU and tag texts', () => {
    // Never closed: no argument, plain text (a, plural, one).
    expect(countWords('{a, plural, one {'.repeat(20_000))).toBe(60_000);
    expect(countWords('{'.repeat(50_000) + 'x, select, a {b}' + '}'.repeat(50_000))).toBe(1);
    expect(countWords('<xliff:g>'.repeat(30_000) + ' word')).toBe(1);
    expect(countWords('$t('.repeat(50_000))).toBe(50_000);
    // Nested deeper than 8 arguments: the rest is counted as plain text, not recursed into.
    const deep = '{a, select, x {'.repeat(200) + 'word' + '}}'.repeat(200);
    expect(countWords(deep)).toBeGreaterThan(0);
  });
});

const WORDS = ['files', 'Datei', 'naïve', 'über', 'don’t', 'ファイル', '文件', 'ok', 'x2'];
const words = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 8 }).map((list) => list.join(' '));
const PLACEHOLDERS = [
  '%s',
  '%1$d',
  '%@',
  '%2$@',
  '{{name}}',
  '{{- html}}',
  '{0}',
  '{count}',
  '$t(key.path)',
  // eslint-disable-next-line no-template-curly-in-string -- a JavaScript template placeholder, as text
  '${value}',
  '<xliff:g id="n">%d</xliff:g>',
  '<xliff:g id="app">Quartet Pro</xliff:g>',
];
const tagIndex = fc.nat({ max: 30 });

describe('word count properties', () => {
  it('react-i18next tags around or between words add nothing', () => {
    fc.assert(
      fc.property(words, words, tagIndex, tagIndex, (a, b, i, j) => {
        const expected = countWords(a) + countWords(b);
        expect(countWords(`${a} <${i}>${b}</${i}>`)).toBe(expected);
        expect(countWords(`<${i}>${a}</${i}> <${j}/> ${b}`)).toBe(expected);
        expect(countWords(`${a}<${j} />${b}`)).toBe(expected);
      }),
    );
  });

  it('a placeholder between words counts one', () => {
    fc.assert(
      fc.property(words, words, fc.constantFrom(...PLACEHOLDERS), (a, b, placeholder) => {
        expect(countWords(`${a} ${placeholder} ${b}`)).toBe(countWords(a) + countWords(b) + 1);
      }),
    );
  });

  it('an ICU argument counts the words of its branches, "#" as one in plural branches', () => {
    const selector = fc.constantFrom('one', 'few', 'other', '=0', '=12', 'male', 'zero');
    fc.assert(
      fc.property(
        words,
        fc.constantFrom('plural', 'select', 'selectordinal'),
        fc.array(fc.tuple(selector, words, fc.boolean()), { minLength: 1, maxLength: 5 }),
        (prefix, keyword, branches) => {
          const body = branches.map(([key, text, hash]) => `${key} {${hash ? '# ' : ''}${text}}`).join(' ');
          const hashes = keyword === 'select' ? 0 : branches.filter(([, , hash]) => hash).length;
          const expected = countWords(prefix) + branches.reduce((sum, [, text]) => sum + countWords(text), 0) + hashes;
          expect(countWords(`${prefix} {count, ${keyword}, ${body}}`)).toBe(expected);
        },
      ),
    );
  });
});
