// Word counting for quotations (rules in docs/quotes.md):
// - markup (HTML/XML tags, react-i18next's <1>…</1> and <0/>, entities) is not words;
// - a placeholder (%s, %1$d, %@, %(name)s, {0}, {name}, {{count}}, ${x}, $t(key), Android's
//   <xliff:g>…</xliff:g>) counts 1;
// - an ICU plural/select argument is syntax; the words of each of its branches count, and "#"
//   in a plural branch is a placeholder (countIcu);
// - a URL or an email address counts 1;
// - everything else is split by Intl.Segmenter (word granularity) and only segments marked
//   isWordLike count. For spaced scripts that is "runs of letters/digits"; for scripts written
//   without spaces (Chinese, Japanese, Thai, Khmer, Lao, Burmese) the segmenter's dictionary
//   gives words, so CJK is counted in segmenter words, never in characters.
// One segmenter per process: segmentation rules do not depend on the locale for these scripts
// in ICU, and reusing it keeps counting fast.
// Every step is linear in the text's length (an upload is caller data): the token patterns cannot
// backtrack across the text, and long texts are segmented in bounded pieces (countPlain).

const PARTS = {
  // Android's protected text, whatever it holds, is one placeholder: before the tags' pattern,
  // which would take its tags for markup (at one place, the first alternative listed wins).
  protected: [/<xliff:g\b[^<>]*>[^<]*<\/xliff:g>/.source],
  markup: [
    /<!--[\s\S]*?-->/.source, // comments
    /<\/?[A-Za-z][^<>]*>/.source, // tags
    /<\/?\d+\s*\/?>/.source, // react-i18next's indexed tags: <1>, </1>, <0/>
    /&(?:[A-Za-z][A-Za-z0-9]*|#\d+|#x[0-9A-Fa-f]+);/.source, // entities
  ],
  urls: [/\b(?:https?|ftp):\/\/[^\s<>"']+/.source, /\bwww\.[^\s<>"']+/.source],
  // The local part is at most 64 characters (RFC 5321): unbounded, every letter of a long word
  // started a scan to its end (quadratic in a text with an "@").
  emails: [/[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/.source],
  placeholders: [
    // {{count}}: the same matches as {{\s*[^{}]*?\s*}}, whose three ways of matching spaces made
    // "{{" + 5,000 spaces take a minute.
    /\{\{[^{}]*\}\}/.source,
    /\$\{[^{}]*\}/.source, // ${name}
    /\$t\([^()]*\)/.source, // i18next's nesting: $t(key), $t(key, {"count": 2})
    /\{[A-Za-z0-9_.,: -]*\}/.source, // {0} {name} {count, number}
    /%(?:\d+\$)?(?:\([A-Za-z0-9_]+\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@%]/
      .source, // printf
  ],
};

// The email pattern tries a match at every letter (and scans the rest of the word each time),
// which made it most of the counting time; it cannot match without an "@", nor a URL without
// "://" or "www.", so a text without them is scanned by the regex without those alternatives.
// The order of the alternatives is kept: the earliest, then first listed, alternative wins.
function tokenPattern(urls: boolean, emails: boolean): RegExp {
  const parts = [
    ...PARTS.protected,
    ...PARTS.markup,
    ...(urls ? PARTS.urls : []),
    ...(emails ? PARTS.emails : []),
    ...PARTS.placeholders,
  ];
  return new RegExp(parts.join('|'), 'g');
}
const TOKENS = [
  tokenPattern(false, false),
  tokenPattern(false, true),
  tokenPattern(true, false),
  tokenPattern(true, true),
];
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
    if (
      inRun &&
      (c === 0x2e || c === 0x27 || c === 0x3a || c === 0x2c || c === 0x3b) &&
      i + 1 < to &&
      isLetterOrDigit(text.charCodeAt(i + 1))
    ) {
      return -1;
    }
    inRun = false;
  }
  return words;
}

function isLetterOrDigit(c: number): boolean {
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  return c >= 0xc0 && c <= 0x24f && c !== 0xd7 /* × */ && c !== 0xf7; /* ÷ */
}

// ICU's word segmenter slows down sharply on long texts (one Japanese text: 50k characters
// 0.36 s, 70k characters 17 s), so a longer stretch is segmented in pieces of at most CHUNK
// characters, each cut where no word can span, found in its last quarter: after a space or a
// sentence mark that no combining or format character follows (UAX #29 always breaks there and
// the dictionary scripts' runs end there, so the count is the same as in one piece); without
// one, at a word boundary the segmenter finds there (a dictionary word near the cut may then
// split differently: rarely, a word more or less per cut, in a text of hundreds of characters
// without a space or a full stop).
export const CHUNK = 2000;
const CUT_AFTER = new Set([...' \t\n\v\f\r\u3000\u3001\u3002\uff01\uff1f!?'].map((c) => c.charCodeAt(0)));
// Characters that join the one before them (UAX #29 Extend, Format, ZWJ) or combine with it.
const ATTACHED = /[\p{Grapheme_Extend}\p{Mc}\p{Cf}\p{Emoji_Modifier}]/uy;

/** The words of text[from, to), which has no special token; pieces of `chunk` characters. */
function countPlain(text: string, from: number, to: number, chunk: number): number {
  // The fast path is linear: only what needs the segmenter is cut.
  const runs = countSimpleRuns(text, from, to);
  if (runs >= 0) return runs;
  let words = 0;
  while (to - from > chunk) {
    const cut = cutPoint(text, from, from + chunk);
    words += countPiece(text, from, cut);
    from = cut;
  }
  return words + countPiece(text, from, to);
}

function countPiece(text: string, from: number, to: number): number {
  if (from >= to) return 0;
  const runs = countSimpleRuns(text, from, to);
  if (runs >= 0) return runs;
  let words = 0;
  for (const segment of segmenter.segment(text.slice(from, to))) if (segment.isWordLike) words++;
  return words;
}

/** Where to end the piece text[from, end): a safe cut in its last quarter, else a word boundary there. */
function cutPoint(text: string, from: number, end: number): number {
  const low = end - Math.floor((end - from) / 4);
  for (let at = end; at > low; at--) {
    if (!CUT_AFTER.has(text.charCodeAt(at - 1))) continue;
    ATTACHED.lastIndex = at;
    if (!ATTACHED.test(text)) return at;
  }
  // The boundary nearest the middle of that quarter, where the segmenter saw text on both sides.
  const middle = (end - low) >> 1;
  let best = 0;
  for (const { index } of segmenter.segment(text.slice(low, end))) {
    if (Math.abs(index - middle) < Math.abs(best - middle)) best = index;
  }
  if (best > 0) return low + best;
  // One "word" longer than the window: cut between two code points.
  return isHighSurrogate(text.charCodeAt(end - 1)) ? end - 1 : end;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

// A "<!--" with no "-->" after it is no comment, but finding that out scanned to the end of the
// text, for each one: quadratic with many of them. Their "!" is masked in the copy the token
// pattern runs on (only a comment matches "<" + "!"; a masked "!" is matched as a "!" would be by
// every other part), so the pattern finds the same tokens at the same places, in linear time.
function maskUnclosedComments(text: string): string {
  const close = text.lastIndexOf('-->');
  const from = Math.max(0, close - 3); // an opener at i needs a "-->" at i + 4 or later
  if (text.indexOf('<!--', from) < 0) return text;
  return text.slice(0, from) + text.slice(from).replaceAll('<!--', '<\uffff--');
}

// Every special token needs one of these characters; most strings have none of them.
const MAYBE_TOKEN = /[<&%{$@]|:\/\/|www\./;

/** The words of `text`; `size` (for tests) sets the pieces' size, Infinity for one piece. */
export function countWords(text: string, size = CHUNK): number {
  if (!text) return 0;
  const chunk = Math.max(16, size);
  if (ICU_COMPLEX.test(text)) return countIcu(text, 0, text.length, matchingBraces(text), 0, false, chunk);
  return countTokens(text, chunk, false);
}

/** The words of a text without ICU arguments; in a plural branch, "#" is a placeholder. */
function countTokens(text: string, chunk: number, plural: boolean): number {
  const plain = plural
    ? (from: number, to: number) => countPlain(text, from, to, chunk) + hashes(text, from, to)
    : (from: number, to: number) => countPlain(text, from, to, chunk);
  if (!MAYBE_TOKEN.test(text)) return plain(0, text.length);
  const tokens = TOKENS[(MAYBE_URL.test(text) ? 2 : 0) + (text.includes('@') ? 1 : 0)];
  const subject = text.includes('<!--') ? maskUnclosedComments(text) : text;
  tokens.lastIndex = 0;
  let words = 0;
  let last = 0;
  // exec() in a loop: matchAll's iterator cost more than the matching itself.
  for (let match = tokens.exec(subject); match; match = tokens.exec(subject)) {
    const token = match[0];
    words += plain(last, match.index);
    last = match.index + token.length;
    // Markup counts 0; "%%" is a literal percent sign, not a placeholder.
    const markup = token.startsWith('<') && !token.endsWith('</xliff:g>');
    if (markup || token.startsWith('&') || token === '%%') {
      // Keep the words on both sides apart: "a<br>b" is two words.
      continue;
    }
    words += 1;
  }
  return words + plain(last, text.length);
}

function hashes(text: string, from: number, to: number): number {
  let count = 0;
  for (let at = text.indexOf('#', from); at >= 0 && at < to; at = text.indexOf('#', at + 1)) count++;
  return count;
}

// ICU MessageFormat (i18next-icu, FormatJS, Android/iOS exports): `{count, plural, one {# file}
// other {# files}}`. The argument's name, its keyword and the selectors (one, other, =0,
// offset:1) are syntax, not words; each branch is text the translator writes, counted by these
// same rules, nested arguments included, as a PO plural counts msgid and msgid_plural; in a
// plural branch "#" stands for the number: a placeholder. ICU's apostrophe quoting is not read.
const ICU_COMPLEX = /\{\s*[\p{L}\p{N}_]+\s*,\s*(?:plural|selectordinal|select)\s*,/u;
const ICU_HEAD = /\{\s*[\p{L}\p{N}_]+\s*,\s*(plural|selectordinal|select)\s*,/uy;
const ICU_OFFSET = /\s*offset\s*:\s*\d+/y;
const ICU_SELECTOR = /\s*(?:=\d+|[\p{L}_][\p{L}\p{N}_-]*)\s*\{/uy;
const ICU_DEPTH = 8;

/** For each "{" the index of its "}" (one pass with a stack: linear, whatever the nesting). */
function matchingBraces(text: string): Map<number, number> {
  const closing = new Map<number, number>();
  const open: number[] = [];
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === 0x7b) open.push(at);
    else if (c === 0x7d && open.length) closing.set(open.pop()!, at);
  }
  return closing;
}

/** The words of text[from, to), its ICU plural/select arguments counted branch by branch. */
function countIcu(
  text: string,
  from: number,
  to: number,
  closing: Map<number, number>,
  depth: number,
  plural: boolean,
  chunk: number,
): number {
  let words = 0;
  let last = from;
  for (let at = text.indexOf('{', from); at >= 0 && at < to; at = text.indexOf('{', at + 1)) {
    const end = closing.get(at);
    if (end === undefined || end >= to || depth >= ICU_DEPTH) continue;
    ICU_HEAD.lastIndex = at;
    const head = ICU_HEAD.exec(text);
    const branches = head && icuBranches(text, ICU_HEAD.lastIndex, end, closing);
    if (!branches) continue;
    // Each plain stretch is counted once, at its own level: linear in the text's length.
    words += countTokens(text.slice(last, at), chunk, plural);
    for (const [start, stop] of branches) {
      words += countIcu(text, start, stop, closing, depth + 1, head[1] !== 'select', chunk);
    }
    last = end + 1;
    at = end;
  }
  return words + countTokens(text.slice(last, to), chunk, plural);
}

/** The bodies [start, end) of the branches between an argument's head and its "}", or null. */
function icuBranches(text: string, at: number, end: number, closing: Map<number, number>): [number, number][] | null {
  const branches: [number, number][] = [];
  ICU_OFFSET.lastIndex = at;
  if (ICU_OFFSET.test(text)) at = ICU_OFFSET.lastIndex;
  for (;;) {
    while (at < end && /\s/.test(text[at])) at++;
    if (at === end) return branches.length ? branches : null;
    ICU_SELECTOR.lastIndex = at;
    if (!ICU_SELECTOR.test(text) || ICU_SELECTOR.lastIndex > end) return null;
    const open = ICU_SELECTOR.lastIndex - 1;
    const close = closing.get(open);
    if (close === undefined || close >= end) return null;
    branches.push([open + 1, close]);
    at = close + 1;
  }
}
