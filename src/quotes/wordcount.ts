// Word counting for quotations (rules in docs/quotes.md):
// - markup (HTML/XML tags and entities) is not words;
// - a placeholder (%s, %1$d, %(name)s, {0}, {name}, {{count}}, ${x}) counts 1;
// - a URL or an email address counts 1;
// - everything else is split by Intl.Segmenter (word granularity) and only segments marked
//   isWordLike count. For spaced scripts that is "runs of letters/digits"; for scripts written
//   without spaces (Chinese, Japanese, Thai, Khmer, Lao, Burmese) the segmenter's dictionary
//   gives words, so CJK is counted in segmenter words, never in characters.
// One segmenter per process: segmentation rules do not depend on the locale for these scripts
// in ICU, and reusing it keeps counting fast.

const TOKENS = new RegExp(
  [
    /<!--[\s\S]*?-->/.source, // comments
    /<\/?[A-Za-z][^<>]*>/.source, // tags
    /&(?:[A-Za-z][A-Za-z0-9]*|#\d+|#x[0-9A-Fa-f]+);/.source, // entities
    /\b(?:https?|ftp):\/\/[^\s<>"']+/.source, // URLs
    /\bwww\.[^\s<>"']+/.source,
    /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/.source, // emails
    /\{\{\s*[^{}]*?\s*\}\}/.source, // {{count}}
    /\$\{[^{}]*\}/.source, // ${name}
    /\{[A-Za-z0-9_.,: -]*\}/.source, // {0} {name} {count, number}
    /%(?:\d+\$)?(?:\([A-Za-z0-9_]+\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@%]/.source, // printf
  ].join('|'),
  'g',
);

const segmenter = new Intl.Segmenter(undefined, { granularity: 'word' });

// Plain ASCII with no character that can join two word parts (. ' : , ; _ between letters or
// digits, UAX #29's MidLetter/MidNum/ExtendNumLet) splits into exactly the runs of letters and
// digits the segmenter would find; counting those runs is much faster.
const NOT_SIMPLE = /[^\x00-\x7f]|_|[A-Za-z0-9][.':,;][A-Za-z0-9]/;
const RUNS = /[A-Za-z0-9]+/g;

function countPlain(text: string): number {
  if (!text) return 0;
  if (!NOT_SIMPLE.test(text)) return text.match(RUNS)?.length ?? 0;
  let words = 0;
  for (const segment of segmenter.segment(text)) if (segment.isWordLike) words++;
  return words;
}

// Every special token needs one of these characters; most strings have none of them.
const MAYBE_TOKEN = /[<&%{$@]|:\/\/|www\./;

export function countWords(text: string): number {
  if (!text) return 0;
  if (!MAYBE_TOKEN.test(text)) return countPlain(text);
  let words = 0;
  let last = 0;
  for (const match of text.matchAll(TOKENS)) {
    const token = match[0];
    words += countPlain(text.slice(last, match.index));
    last = match.index! + token.length;
    // Markup counts 0; "%%" is a literal percent sign, not a placeholder.
    if (token.startsWith('<') || token.startsWith('&') || token === '%%') {
      // Keep the words on both sides apart: "a<br>b" is two words.
      continue;
    }
    words += 1;
  }
  return words + countPlain(text.slice(last));
}
