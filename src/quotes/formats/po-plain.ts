// A fast reader for the plain layout nearly every PO file has, giving exactly what
// gettext-parser's table would hold for the same slice, or null for anything else.
//
// Why: gettext-parser lexes character by character and builds its tables property by property;
// measured here it takes 0.45–0.65 s of CPU per 100,000 entries at best, however it is fed
// (slices of 25 to 1,000 entries, unused comments removed, validation on or off), more than
// half of the 1 s a 100k-string import may take (docs/quotes.md); this reader takes about a
// quarter of that. gettext-parser stays the parser of record: a slice this reader does not
// fully understand is parsed by gettext-parser as before, and so is every file in a legacy
// charset; every error message comes from gettext-parser.
//
// Accepted (one line each, leading spaces or tabs allowed, CRLF allowed):
//   blank lines; `# …` comments before an entry (not `#~`, obsolete entries);
//   `msgctxt "…"`, `msgid "…"`, `msgid_plural "…"`, `msgstr "…"`, `msgstr[N] "…"` in that
//   order, each a keyword, spaces, one string, then nothing; continuation lines `"…"`.
// Refused (null): anything else, and every entry gettext-parser's validation would refuse (an
// empty msgid, a duplicate, a wrong number of msgstr forms), so that it reports it.
// One difference: gettext-parser's duplicate check is `msgid in table`, which takes the names
// of Object.prototype (constructor, toString…) for duplicates; this reader reads them (po.ts).
import type { GetTextTranslation } from 'gettext-parser';

export type PoEntry = GetTextTranslation;

/** What the slices share: the number of plural forms and whether a header entry precedes them. */
export interface PlainContext {
  nplurals: number;
  /** The header is the first entry of gettext-parser's table: its context '' comes first. */
  headerFirst: boolean;
}

const KEYWORD = /(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)[ \t]+"/y;
type Field = '' | 'msgctxt' | 'msgid' | 'msgid_plural' | 'msgstr';

/** The entries of one slice in gettext-parser's table order (no header), or null. */
export function readPlainEntries(body: string, shared: PlainContext): PoEntry[] | null {
  const entries: PoEntry[] = [];
  const msgids = new Map<string, Set<string>>(); // by context
  let comments: string[] = [];
  let entry: PoEntry | null = null;
  let context = '';
  let field: Field = '';

  const finish = (): boolean => {
    if (!entry) return true;
    const { msgid, msgid_plural: plural, msgstr } = entry;
    let taken = msgids.get(entry.msgctxt ?? '');
    if (!taken) msgids.set(entry.msgctxt ?? '', (taken = new Set()));
    if (msgid === '' || plural === '' || taken.has(msgid)) return false;
    if (msgstr.length !== (plural === undefined ? 1 : shared.nplurals)) return false;
    taken.add(msgid);
    entries.push(entry);
    entry = null;
    return true;
  };

  for (let start = 0; start <= body.length;) {
    let end = body.indexOf('\n', start);
    if (end < 0) end = body.length;
    let i = start;
    while (i < end && (body.charCodeAt(i) === 0x20 || body.charCodeAt(i) === 0x09)) i++;
    const first = i < end ? body[i] : '';
    start = end + 1;
    if (first === '' || (first === '\r' && isBlank(body, i, end))) continue;

    if (first === '#') {
      if (body[i + 1] === '~' || (field !== '' && field !== 'msgstr') || !finish()) return null;
      field = '';
      // Only flags (#,) and previous strings (#|) matter to quartet; gettext-parser drops CRs.
      const kind = body[i + 1];
      if (kind === ',' || kind === '|' || kind === '\r') {
        const line = body.slice(i + 1, end).replace(/\r/g, '');
        if (line[0] === ',' || line[0] === '|') comments.push(line);
      }
      continue;
    }

    let keyword = '';
    let quote = i;
    if (first !== '"') {
      KEYWORD.lastIndex = i;
      const match = KEYWORD.exec(body);
      if (!match) return null;
      keyword = match[1];
      quote = KEYWORD.lastIndex - 1;
    }
    const string = readString(body, quote, end);
    if (!string) return null;
    const { value } = string;

    if (!keyword) {
      // A continuation line extends the string of the last keyword.
      if (field === '') return null;
      if (field === 'msgctxt') context += value;
      else if (field === 'msgid') entry!.msgid += value;
      else if (field === 'msgid_plural') entry!.msgid_plural += value;
      else entry!.msgstr[entry!.msgstr.length - 1] += value;
    } else if (keyword === 'msgctxt' || keyword === 'msgid') {
      if (field === 'msgstr' && !finish()) return null;
      if (keyword === 'msgctxt') {
        if (field !== '' && field !== 'msgstr') return null;
        context = value;
        field = 'msgctxt';
        continue;
      }
      if (field !== '' && field !== 'msgstr' && field !== 'msgctxt') return null;
      entry = { msgid: value, msgstr: [] };
      // gettext-parser keeps no context for an empty msgctxt.
      if (field === 'msgctxt' && context) entry.msgctxt = context;
      if (comments.length) {
        entry.comments = commentsOf(comments) as PoEntry['comments'];
        comments = [];
      }
      field = 'msgid';
    } else if (keyword === 'msgid_plural') {
      if (field !== 'msgid') return null;
      entry!.msgid_plural = value;
      field = 'msgid_plural';
    } else {
      if (field !== 'msgid' && field !== 'msgid_plural' && field !== 'msgstr') return null;
      entry!.msgstr.push(value);
      field = 'msgstr';
    }
  }
  if (field !== '' && (field !== 'msgstr' || !finish())) return null;
  return tableOrder(entries, shared.headerFirst);
}

function isBlank(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/**
 * The quoted string starting at `quote`, which must close on its line with only blanks after it.
 * Escapes as gettext-parser reads them: \t \n \r, and any other escaped character as itself.
 */
function readString(text: string, quote: number, end: number): { value: string } | null {
  // Most strings have no escape: up to the next quote, if that is on this line.
  const close = text.indexOf('"', quote + 1);
  if (close < 0 || close >= end) return null;
  const raw = text.slice(quote + 1, close);
  if (!raw.includes('\\')) return isBlank(text, close + 1, end) ? { value: raw } : null;
  let value = '';
  let run = quote + 1;
  for (let i = run; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) {
      // A backslash ending the line continues the string on the next one: not plain.
      if (i + 1 >= end) return null;
      const escaped = text[i + 1];
      value +=
        text.slice(run, i) + (escaped === 't' ? '\t' : escaped === 'n' ? '\n' : escaped === 'r' ? '\r' : escaped);
      run = ++i + 1;
    } else if (c === 0x22) {
      return isBlank(text, i + 1, end) ? { value: value + text.slice(run, i) } : null;
    }
  }
  return null;
}

/** gettext-parser's comment fields that quartet reads: flags (#,) and previous (#|). */
function commentsOf(lines: string[]): { flag?: string; previous?: string } {
  const flag: string[] = [];
  const previous: string[] = [];
  for (const line of lines) {
    if (line[0] === ',') flag.push(line.slice(1).replace(/^\s+/, ''));
    else if (line[0] === '|') previous.push(line.slice(1).replace(/^\s+/, ''));
  }
  return {
    ...(flag.length ? { flag: flag.join('\n') } : {}),
    ...(previous.length ? { previous: previous.join('\n') } : {}),
  };
}

/**
 * The order of gettext-parser's table: one object per context, each keyed by msgid; an object
 * lists its integer-like keys first, in ascending order, then the others as they were added.
 */
function tableOrder(entries: PoEntry[], headerFirst: boolean): PoEntry[] {
  const byContext = new Map<string, PoEntry[]>(headerFirst ? [['', []]] : []);
  let indexKeys = false;
  for (const entry of entries) {
    const context = entry.msgctxt ?? '';
    const list = byContext.get(context);
    if (list) list.push(entry);
    else byContext.set(context, [entry]);
    indexKeys ||= isArrayIndex(entry.msgid);
  }
  if (byContext.size <= 1 && !indexKeys) return entries;
  return objectOrder([...byContext.keys()], (context) => context).flatMap((context) =>
    objectOrder(byContext.get(context)!, (entry) => entry.msgid),
  );
}

function objectOrder<T>(items: T[], key: (item: T) => string): T[] {
  const indexed = items.filter((item) => isArrayIndex(key(item))).sort((a, b) => Number(key(a)) - Number(key(b)));
  return [...indexed, ...items.filter((item) => !isArrayIndex(key(item)))];
}

/** A canonical integer below 2^32 - 1: JavaScript orders such property keys first. */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4294967295;
}
