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

const PARTS = {
  markup: [
    /<!--[\s\S]*?-->/.source, // comments
    /<\/?[A-Za-z][^<>]*>/.source, // tags
    /&(?:[A-Za-z][A-Za-z0-9]*|#\d+|#x[0-9A-Fa-f]+);/.source, // entities
  ],
  urls: [/\b(?:https?|ftp):\/\/[^\s<>"']+/.source, /\bwww\.[^\s<>"']+/.source],
  emails: [/[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/.source],
  placeholders: [
    /\{\{\s*[^{}]*?\s*\}\}/.source, // {{count}}
    /\$\{[^{}]*\}/.source, // ${name}
    /\{[A-Za-z0-9_.,: -]*\}/.source, // {0} {name} {count, number}
    /%(?:\d+\$)?(?:\([A-Za-z0-9_]+\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@%]/.source, // printf
  ],
};

// The email pattern tries a match at every letter (and scans the rest of the word each time),
// which made it most of the counting time; it cannot match without an "@", nor a URL without
// "://" or "www.", so a text without them is scanned by the regex without those alternatives.
// The order of the alternatives is kept: the earliest, then first listed, alternative wins.
function tokenPattern(urls: boolean, emails: boolean): RegExp {
  const parts = [...PARTS.markup, ...(urls ? PARTS.urls : []), ...(emails ? PARTS.emails : []), ...PARTS.placeholders];
  return new RegExp(parts.join('|'), 'g');
}
const TOKENS = [tokenPattern(false, false), tokenPattern(false, true), tokenPattern(true, false), tokenPattern(true, true)];
const MAYBE_URL = /:\/\/|www\./;

const segmenter = new Intl.Segmenter(undefined, { granularity: 'word' });

// Text of ASCII and Latin letters (Latin-1 Supplement, Latin Extended-A/B: all ALetter in
// UAX #29, like A-Z) and digits, with no character that can join two word parts (. ' : , ;
// between letters or digits, _), splits into exactly the runs of letters and digits the
// segmenter would find; counting those runs in one loop is much faster. Anything else (other
// scripts, combining marks, symbols beyond ASCII) goes to the segmenter.
/** The number of runs of letters and digits in text[from, to), or -1 when it needs the segmenter. */
function countSimpleRuns(text: string, from: number, to: number): number {
  let words = 0;
  let inRun = false;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (isLetterOrDigit(c)) {
      if (!inRun) words++;
      inRun = true;
      continue;
    }
    if (c >= 0x80 || c === 0x5f /* _ */) return -1;
    // . ' : , ; between two letters or digits may join them into one word.
    if (inRun && (c === 0x2e || c === 0x27 || c === 0x3a || c === 0x2c || c === 0x3b) && i + 1 < to && isLetterOrDigit(text.charCodeAt(i + 1))) return -1;
    inRun = false;
  }
  return words;
}

function isLetterOrDigit(c: number): boolean {
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  return c >= 0xc0 && c <= 0x24f && c !== 0xd7 /* × */ && c !== 0xf7 /* ÷ */;
}

/** The words of text[from, to), which has no special token. */
function countPlain(text: string, from = 0, to = text.length): number {
  if (from >= to) return 0;
  const runs = countSimpleRuns(text, from, to);
  if (runs >= 0) return runs;
  let words = 0;
  for (const segment of segmenter.segment(text.slice(from, to))) if (segment.isWordLike) words++;
  return words;
}

// Every special token needs one of these characters; most strings have none of them.
const MAYBE_TOKEN = /[<&%{$@]|:\/\/|www\./;

export function countWords(text: string): number {
  if (!text) return 0;
  if (!MAYBE_TOKEN.test(text)) return countPlain(text);
  const tokens = TOKENS[(MAYBE_URL.test(text) ? 2 : 0) + (text.includes('@') ? 1 : 0)];
  tokens.lastIndex = 0;
  let words = 0;
  let last = 0;
  // exec() in a loop: matchAll's iterator cost more than the matching itself.
  for (let match = tokens.exec(text); match; match = tokens.exec(text)) {
    const token = match[0];
    words += countPlain(text, last, match.index);
    last = match.index + token.length;
    // Markup counts 0; "%%" is a literal percent sign, not a placeholder.
    if (token.startsWith('<') || token.startsWith('&') || token === '%%') {
      // Keep the words on both sides apart: "a<br>b" is two words.
      continue;
    }
    words += 1;
  }
  return words + countPlain(text, last);
}
