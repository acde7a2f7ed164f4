// GNU gettext PO files, read as GNU gettext 0.21 reads them: its lexer (po-lex.c), its grammar
// (po-gram-gen.y), its duplicate check (read-catalog.c) and the checks `msgfmt -c` makes
// (msgl-check.c), so that what msgfmt accepts imports with the states msgfmt gives it, and what
// it refuses is refused here with the line it names. Written from gettext's documented and
// observed behaviour; test/quotes/po-gettext.test.ts compares both on fixtures of every shape.
//
// Why not gettext-parser (still the writer of exports): its lexer differs from gettext's where
// real files go. It refuses an untranslated plural written as a single `msgstr[0] ""` (what
// msgmerge and Weblate write), takes `msgctxt ""` for no context (so two entries msgfmt keeps
// apart become a duplicate), reads `\a \b \f \v`, octal and hex escapes as plain letters and
// accepts single quotes, `msgstr` without `msgid` and unknown escapes, and names no line for
// most of its errors.
//
// Where quartet is more lenient than `msgfmt -c`, on purpose (docs/quotes.md, "PO files"):
// - a UTF-8 byte order mark is skipped (msgfmt: a syntax error on line 1);
// - a file without a header entry is read (msgfmt -c: "PO file header missing");
// - the header of a template (`charset=CHARSET`, `nplurals=INTEGER; plural=EXPRESSION;`) is
//   accepted when no translated plural needs it (msgfmt -c: "invalid nplurals value");
// - format strings (`#, c-format` …) are not compared with their translation: a translation
//   whose `%d` differs is still a translation to quote (msgfmt -c refuses the file; dnf's
//   it.po has one).
// Everything else msgfmt -c refuses is refused: syntax errors, bad escapes, unterminated
// strings, `#~` mixed into an entry, missing sections, plural forms out of order, duplicates
// (obsolete entries included), a context separator in a string, translated entries whose
// leading or trailing newline differs from the msgid's, and a Plural-Forms header that does not
// parse, can yield a form it does not declare, divides by zero, or disagrees with the number of
// forms of a translated plural.

/** One entry of the file (not the header, not obsolete). */
export interface PoMessage {
  /** null without msgctxt; `msgctxt ""` is a context of its own, as in gettext. */
  context: string | null;
  msgid: string;
  msgidPlural: string | null;
  /** msgstr, or msgstr[0], msgstr[1]… */
  msgstr: string[];
  fuzzy: boolean;
  /** The msgid of the `#|` lines (msgmerge --previous), if any. */
  previousMsgid: string | null;
  /** The `#|` lines as written, without their `#|` prefix (kept for export). */
  previous: string | null;
  /** The line of its msgid. */
  line: number;
  /** The line of its msgstr (or msgstr[0]): where msgfmt reports problems of the translation. */
  msgstrLine: number;
}

export interface PoCatalog {
  /** The header entry's msgstr (null without a header). */
  header: string | null;
  messages: PoMessage[];
}

/** A problem gettext reports too, on a line of the file. */
export class PoError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'PoError';
  }
}

// ---------------------------------------------------------------------------------------------
// Lexer (po-lex.c): whitespace and line breaks separate tokens anywhere; `#~` marks the rest of
// its line obsolete, `#|` (and `#~|`) makes the keywords of the rest of the line "previous" ones;
// any other `#` starts a comment up to the end of the line.

type Kind =
  | 'comment'
  | 'string'
  | 'number'
  | '['
  | ']'
  | 'domain'
  | 'msgctxt'
  | 'msgid'
  | 'msgid_plural'
  | 'msgstr'
  | 'prev_msgctxt'
  | 'prev_msgid'
  | 'prev_msgid_plural'
  | 'prev_string'
  | 'junk'
  | 'eof';

const KEYWORDS = new Map<string, Kind>([
  ['domain', 'domain'],
  ['msgid', 'msgid'],
  ['msgid_plural', 'msgid_plural'],
  ['msgstr', 'msgstr'],
  ['msgctxt', 'msgctxt'],
]);
const PREVIOUS_KEYWORDS = new Map<string, Kind>([
  ['msgid', 'prev_msgid'],
  ['msgid_plural', 'prev_msgid_plural'],
  ['msgctxt', 'prev_msgctxt'],
]);
const SIMPLE_ESCAPES = new Map<string, string>([
  ['n', '\n'],
  ['t', '\t'],
  ['b', '\b'],
  ['r', '\r'],
  ['f', '\f'],
  ['v', '\v'],
  ['a', '\x07'],
  ['\\', '\\'],
  ['"', '"'],
]);

const isIdentifierStart = (c: number) =>
  (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f /* _ */ || c === 0x24; /* $ */
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isOctal = (c: number) => c >= 0x30 && c <= 0x37;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** The current token is in the lexer's fields (no object per token: a big file has millions). */
class Lexer {
  kind: Kind = 'eof';
  /** A flag comment's text (after `#`; other comments: ''), a string's value, or a number. */
  text = '';
  /** The token's line, and whether it is in a `#~` line. */
  line = 1;
  obsolete = false;
  private at = 0;
  private current = 1;
  private inObsolete = false;
  private previous = false;
  /** The `#|` lines since the last entry, as written. */
  previousLines: string[] = [];

  constructor(
    private readonly source: string,
    /** Bytes of escapes (\303\251) become text in the file's charset. */
    private readonly decodeBytes: (bytes: number[], line: number) => string,
  ) {}

  next(): void {
    const text = this.source;
    for (;;) {
      if (this.at >= text.length) return this.token('eof', '');
      const c = text.charCodeAt(this.at);
      if (c === 0x0a) {
        this.current++;
        this.at++;
        this.inObsolete = false;
        this.previous = false;
      } else if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0c || c === 0x0b) {
        this.at++;
      } else if (c === 0x23 /* # */) {
        const after = text.charCodeAt(this.at + 1);
        if (after === 0x7e /* ~ */) {
          this.inObsolete = true;
          this.at += 2;
          if (text.charCodeAt(this.at) === 0x7c /* | */) this.startPrevious(this.at + 1);
        } else if (after === 0x7c) {
          this.startPrevious(this.at + 2);
        } else {
          const end = this.lineEnd(this.at);
          // Only flags (#, and #!) matter here; references (#:) are most comments of a file.
          this.token('comment', after === 0x2c || after === 0x21 ? text.slice(this.at + 1, end) : '');
          this.at = end;
          this.inObsolete = false;
          return;
        }
      } else if (c === 0x22 /* " */) {
        return this.string();
      } else if (isIdentifierStart(c)) {
        const start = this.at;
        let end = start + 1;
        while (end < text.length) {
          const d = text.charCodeAt(end);
          if (!isIdentifierStart(d) && !isDigit(d)) break;
          end++;
        }
        const word = text.slice(start, end);
        const kind = (this.previous ? PREVIOUS_KEYWORDS : KEYWORDS).get(word);
        if (!kind) throw new PoError(this.current, `keyword "${word.slice(0, 40)}" unknown`);
        this.at = end;
        return this.token(kind, word);
      } else if (isDigit(c)) {
        const start = this.at;
        while (this.at < text.length && isDigit(text.charCodeAt(this.at))) this.at++;
        return this.token('number', text.slice(start, this.at));
      } else if (c === 0x5b || c === 0x5d) {
        this.at++;
        return this.token(c === 0x5b ? '[' : ']', '');
      } else {
        return this.token('junk', String.fromCodePoint(text.codePointAt(this.at)!));
      }
    }
  }

  private token(kind: Kind, text: string, line = this.current) {
    this.kind = kind;
    this.text = text;
    this.line = line;
    this.obsolete = this.inObsolete;
  }

  private lineEnd(from: number): number {
    const end = this.source.indexOf('\n', from);
    return end < 0 ? this.source.length : end;
  }

  private startPrevious(from: number) {
    this.previous = true;
    this.previousLines.push(
      this.source
        .slice(from, this.lineEnd(from))
        .replace(/^[ \t]+/, '')
        .replace(/\r$/, ''),
    );
    this.at = from;
  }

  /** A quoted string, its escapes as gettext's control_sequence() reads them. */
  private string(): void {
    const text = this.source;
    const line = this.current;
    // Most strings have no escape and close on their line.
    const close = text.indexOf('"', this.at + 1);
    if (close > 0) {
      const raw = text.slice(this.at + 1, close);
      if (!raw.includes('\\') && !raw.includes('\n') && !raw.includes('\u0004')) {
        this.at = close + 1;
        return this.token(this.previous ? 'prev_string' : 'string', raw, line);
      }
    }
    let value = '';
    let run = ++this.at;
    let bytes: number[] | null = null; // escapes of 0x80–0xff waiting to be decoded
    let cut = false; // "\0" ends the string in gettext (its FIXME)
    const flushBytes = () => {
      if (bytes) value += this.decodeBytes(bytes, line);
      bytes = null;
    };
    for (;;) {
      if (this.at >= text.length) throw new PoError(line, 'end of file within a string (a missing closing ")');
      const c = text.charCodeAt(this.at);
      if (c === 0x22 || c === 0x5c || c === 0x0a) {
        if (run < this.at) {
          flushBytes();
          if (!cut) value += text.slice(run, this.at);
        }
        if (c === 0x22) {
          flushBytes();
          this.at++;
          break;
        }
        if (c === 0x0a) {
          throw new PoError(
            line + 1,
            `end of line within the string that starts on line ${line}: close it on its line and continue ` +
              'on the next with another "…" (a line break in the text is written \\n)',
          );
        }
        const escaped = this.escape();
        if (escaped === 0) cut = true;
        if (!cut) {
          if (escaped >= 0x80) (bytes ??= []).push(escaped);
          else {
            flushBytes();
            value += String.fromCharCode(escaped);
          }
        }
        run = this.at;
      } else {
        this.at++;
      }
    }
    if (value.includes('\u0004')) throw new PoError(line, 'context separator <EOT> (\\004) within a string');
    this.token(this.previous ? 'prev_string' : 'string', value, line);
  }

  /** After a backslash: the byte it stands for (0–255). */
  private escape(): number {
    const text = this.source;
    const at = ++this.at;
    const c = text[at];
    const simple = c === undefined ? undefined : SIMPLE_ESCAPES.get(c);
    if (simple !== undefined) {
      this.at++;
      return simple.charCodeAt(0);
    }
    const code = text.charCodeAt(at);
    if (isOctal(code)) {
      let value = 0;
      let end = at;
      while (end < at + 3 && isOctal(text.charCodeAt(end))) value = value * 8 + text.charCodeAt(end++) - 0x30;
      this.at = end;
      return value & 0xff;
    }
    if (c === 'x' && isHex(text.charCodeAt(at + 1))) {
      let value = 0;
      let end = at + 1;
      while (isHex(text.charCodeAt(end))) value = (value * 16 + Number.parseInt(text[end++], 16)) & 0xff;
      this.at = end;
      return value;
    }
    const shown = c === undefined || c === '\n' || c === '\r' ? 'a line break' : `"\\${c}"`;
    throw new PoError(
      this.current,
      `invalid escape ${shown} in a string (valid: \\n \\t \\r \\" \\\\ \\a \\b \\f \\v, octal \\NNN, hex \\xHH)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Grammar (po-gram-gen.y): comments and messages; a message is
//   [#| [msgctxt] msgid [msgid_plural]] [msgctxt "…"+] msgid "…"+
//   ( msgstr "…"+ | msgid_plural "…"+ (msgstr[N] "…"+)+ )
// with every token of it obsolete (#~) or none.

interface RawMessage extends PoMessage {
  obsolete: boolean;
}

const FLAG_SEPARATORS = /[\n \t\r\f\v,]+/;

class Parser {
  private comments: string[] = [];
  /** Whether the entry being read started in a `#~` line: all its tokens must agree. */
  private entryObsolete = false;

  constructor(private readonly lexer: Lexer) {
    lexer.next();
  }

  parse(): RawMessage[] {
    const { lexer } = this;
    const messages: RawMessage[] = [];
    for (;;) {
      const kind = lexer.kind;
      if (kind === 'eof') return messages;
      if (kind === 'comment') {
        if (lexer.text) this.comments.push(lexer.text);
        lexer.next();
      } else if (kind === 'domain') {
        throw new PoError(
          lexer.line,
          '"domain" directives are not supported: upload one file per domain (msgfmt -c refuses them too)',
        );
      } else if (kind === 'msgid' || kind === 'msgctxt' || kind === 'prev_msgid' || kind === 'prev_msgctxt') {
        const message = this.message();
        this.checkDuplicate(message, messages);
        messages.push(message);
        this.comments = [];
      } else {
        throw this.unexpected('a comment, msgctxt or msgid');
      }
    }
  }

  // Entries are keyed by context and msgid, obsolete ones included (read-catalog.c); checked as
  // they are read, so the first error reported is gettext's first.
  private readonly plain = new Set<string>();
  private readonly byContext = new Map<string, Set<string>>();

  private checkDuplicate(message: RawMessage, before: RawMessage[]) {
    let seen = this.plain;
    if (message.context !== null) {
      seen = this.byContext.get(message.context) ?? new Set();
      this.byContext.set(message.context, seen);
    }
    if (seen.has(message.msgid)) {
      const first = before.find((other) => other.context === message.context && other.msgid === message.msgid)!;
      throw new PoError(message.line, `duplicate message definition (first defined at line ${first.line})`);
    }
    seen.add(message.msgid);
  }

  /** The lookahead's kind (a method: TypeScript would narrow a property across take()). */
  private kind(): Kind {
    return this.lexer.kind;
  }

  /** Consumes the current token of the entry; its line. */
  private take(): number {
    const { lexer } = this;
    if (lexer.obsolete !== this.entryObsolete) {
      throw new PoError(lexer.line, 'inconsistent use of #~: an entry is obsolete in all its lines or in none');
    }
    const line = lexer.line;
    lexer.next();
    return line;
  }

  private unexpected(expected: string): PoError {
    const { kind, text, line } = this.lexer;
    const found =
      kind === 'eof'
        ? 'the end of the file'
        : kind === 'string' || kind === 'prev_string'
          ? 'a string'
          : kind === 'junk'
            ? `"${text}"`
            : kind === 'comment'
              ? 'a comment'
              : kind === 'number'
                ? `the number ${text.slice(0, 20)}`
                : `"${kind.replace('prev_', '#| ')}"`;
    return new PoError(line, `syntax error: expected ${expected}, found ${found}`);
  }

  private message(): RawMessage {
    this.entryObsolete = this.lexer.obsolete;
    let previousMsgid: string | null = null;
    if (this.kind() === 'prev_msgctxt' || this.kind() === 'prev_msgid') {
      if (this.kind() === 'prev_msgctxt') {
        this.take();
        this.strings('prev_string');
        if (this.kind() !== 'prev_msgid') throw this.unexpected('"#| msgid" after "#| msgctxt"');
      }
      this.take();
      previousMsgid = this.strings('prev_string');
      if (this.kind() === 'prev_msgid_plural') {
        this.take();
        this.strings('prev_string');
      }
      if (this.kind() !== 'msgctxt' && this.kind() !== 'msgid') {
        throw this.unexpected('msgctxt or msgid right after the "#|" lines');
      }
    }
    // Only this entry's "#|" lines: the lookahead has not reached the next entry's yet.
    const previous = this.lexer.previousLines.length ? this.lexer.previousLines.join('\n') : null;
    this.lexer.previousLines = [];
    let context: string | null = null;
    if (this.kind() === 'msgctxt') {
      this.take();
      context = this.strings('string');
      if (this.kind() !== 'msgid') throw this.unexpected('msgid after msgctxt');
    }
    const line = this.take();
    const msgid = this.strings('string');
    let msgidPlural: string | null = null;
    const msgstr: string[] = [];
    let msgstrLine = line;
    if (this.kind() === 'msgid_plural') {
      this.take();
      msgidPlural = this.strings('string');
      if (this.kind() !== 'msgstr') throw new PoError(line, "missing 'msgstr[]' section after msgid_plural");
      msgstrLine = this.lexer.line;
      this.pluralForms(msgstr);
    } else if (this.kind() === 'msgstr') {
      msgstrLine = this.take();
      if (this.kind() === '[') {
        throw new PoError(line, "missing 'msgid_plural' section: msgstr[N] belongs to an entry with msgid_plural");
      }
      msgstr.push(this.strings('string'));
    } else {
      throw new PoError(line, "missing 'msgstr' section");
    }
    return {
      context,
      msgid,
      msgidPlural,
      msgstr,
      fuzzy: this.comments.length > 0 && this.comments.some(isFuzzyFlag),
      previousMsgid,
      previous,
      line,
      msgstrLine,
      obsolete: this.entryObsolete,
    };
  }

  /** One or more strings, concatenated. */
  private strings(kind: 'string' | 'prev_string'): string {
    if (this.kind() !== kind) throw this.unexpected(kind === 'string' ? 'a string "…"' : 'a "#|" string');
    let value = this.lexer.text;
    this.take();
    while (this.kind() === kind) {
      value += this.lexer.text;
      this.take();
    }
    return value;
  }

  /** msgstr[0] "…" msgstr[1] "…" …, numbered from 0 without a gap. */
  private pluralForms(forms: string[]) {
    while (this.kind() === 'msgstr') {
      const line = this.take();
      if (this.kind() !== '[') throw this.unexpected('[N] after msgstr: an entry with msgid_plural has msgstr[N]');
      this.take();
      if (this.kind() !== 'number') throw this.unexpected('a form number in msgstr[N]');
      const index = this.lexer.text;
      this.take();
      if (this.kind() !== ']') throw this.unexpected('"]"');
      this.take();
      if (Number(index) !== forms.length) {
        throw new PoError(
          line,
          forms.length === 0
            ? `first plural form has nonzero index msgstr[${index}] (forms are numbered from msgstr[0])`
            : `plural form has wrong index msgstr[${index}], expected msgstr[${forms.length}]`,
        );
      }
      forms.push(this.strings('string'));
    }
  }
}

/** A `#,` (or `#!`) comment naming the fuzzy flag, as gettext's po_parse_comment_special reads it. */
function isFuzzyFlag(comment: string): boolean {
  if (comment[0] !== ',' && comment[0] !== '!') return false;
  return comment.slice(1).split(FLAG_SEPARATORS).includes('fuzzy');
}

// ---------------------------------------------------------------------------------------------
// The catalog and msgfmt's checks.

/** Reads a PO file's text (already decoded); throws PoError for what gettext refuses. */
export function readPoText(text: string, decodeBytes: (bytes: number[], line: number) => string): PoCatalog {
  const raw = new Parser(new Lexer(text, decodeBytes)).parse();
  let header: RawMessage | null = null;
  for (const message of raw) {
    if (!message.obsolete && message.context === null && message.msgid === '') header = message;
  }
  const messages: PoMessage[] = raw.filter((message) => !message.obsolete && message !== header);
  // msgfmt checks only translated entries that are not fuzzy ("compiled" ones), and takes a
  // header with an empty msgstr for none.
  const compiled = messages.filter((message) => message.msgstr[0] !== '' && !message.fuzzy);
  const headerText = header && header.msgstr[0] !== '' ? header.msgstr[0] : null;
  // In msgfmt's order: the Plural-Forms header, then each entry.
  checkPlurals(compiled, headerText, header?.msgstrLine ?? 1);
  for (const message of compiled) checkNewlines(message);
  return { header: header ? header.msgstr[0] : null, messages };
}

/** msgfmt's check_pair: msgid, msgid_plural and every form begin and end alike with "\n". */
function checkNewlines({ msgid, msgidPlural, msgstr, msgstrLine }: PoMessage) {
  if (msgid === '') return;
  const begins = msgid.charCodeAt(0) === 0x0a;
  const ends = msgid.charCodeAt(msgid.length - 1) === 0x0a;
  const check = (text: string, name: string) => {
    if ((text.charCodeAt(0) === 0x0a) !== begins) {
      throw new PoError(msgstrLine, `'msgid' and '${name}' entries do not both begin with '\\n'`);
    }
    if ((text.charCodeAt(text.length - 1) === 0x0a) !== ends) {
      throw new PoError(msgstrLine, `'msgid' and '${name}' entries do not both end with '\\n'`);
    }
  };
  if (msgidPlural === null) {
    check(msgstr[0], 'msgstr');
  } else {
    check(msgidPlural, 'msgid_plural');
    for (let index = 0; index < msgstr.length; index++) check(msgstr[index], `msgstr[${index}]`);
  }
}

/** msgfmt -c's check_plural: the header's Plural-Forms against itself and the translated plurals. */
function checkPlurals(compiled: PoMessage[], header: string | null, headerLine: number) {
  const plurals = compiled.filter((message) => message.msgidPlural !== null);
  const first = plurals[0];
  if (header === null) {
    if (first) {
      throw new PoError(
        first.msgstrLine,
        'a translated plural entry needs a header entry with "Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;"',
      );
    }
    return;
  }
  const pluralAt = header.indexOf('plural=');
  const npluralsAt = header.indexOf('nplurals=');
  if (pluralAt < 0 || npluralsAt < 0) {
    if (first) {
      throw new PoError(
        first.msgstrLine,
        `a translated plural entry, but the header (line ${headerLine}) lacks ` +
          `"${npluralsAt < 0 ? 'nplurals=INTEGER' : 'plural=EXPRESSION'}" in Plural-Forms`,
      );
    }
    return;
  }
  const count = /^\s*(\d+)/.exec(header.slice(npluralsAt + 9))?.[1];
  if (count === undefined) {
    // A template's placeholder (nplurals=INTEGER): harmless while nothing is translated.
    if (!first) return;
    throw new PoError(headerLine, 'invalid nplurals value in the Plural-Forms header');
  }
  const nplurals = BigInt(count);
  const expression = parsePluralExpression(header.slice(pluralAt + 7));
  if (!expression) throw new PoError(headerLine, 'invalid plural expression in the Plural-Forms header');
  const problem = pluralRangeProblem(expression, nplurals);
  if (problem) throw new PoError(headerLine, `Plural-Forms: ${problem}`);
  for (const message of plurals) {
    if (BigInt(message.msgstr.length) !== nplurals) {
      throw new PoError(
        message.msgstrLine,
        `the header says nplurals = ${nplurals} (line ${headerLine}) but this translated entry has ` +
          `${message.msgstr.length} plural form${message.msgstr.length === 1 ? '' : 's'}`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Plural expressions (gettext's plural.y): C's ?: || && == != < > <= >= + - * / % ! ( ) with n
// and decimal numbers, in unsigned long arithmetic; they end at ";", a line break or the end.

type Expression =
  | { op: 'n' }
  | { op: 'number'; value: bigint }
  | { op: '!'; arg: Expression }
  | { op: '?'; test: Expression; yes: Expression; no: Expression }
  | { op: BinaryOp; left: Expression; right: Expression };
type BinaryOp = '||' | '&&' | '==' | '!=' | '<' | '>' | '<=' | '>=' | '+' | '-' | '*' | '/' | '%';

const BINARY_LEVELS: BinaryOp[][] = [['||'], ['&&'], ['==', '!='], ['<', '>', '<=', '>='], ['+', '-'], ['*', '/', '%']];
// Longer than any real formula by far; bounds the work on a hostile header.
const MAX_EXPRESSION = 1000;
const MAX_DEPTH = 50;

/** The expression at the start of `text`, or null when gettext would not parse it. */
export function parsePluralExpression(text: string): Expression | null {
  const tokens: string[] = [];
  let at = 0;
  for (;;) {
    while (text[at] === ' ' || text[at] === '\t') at++;
    const c = text[at];
    if (c === undefined || c === ';' || c === '\n') break;
    if (tokens.length > MAX_EXPRESSION) return null;
    const two = text.slice(at, at + 2);
    if (two === '==' || two === '!=' || two === '<=' || two === '>=' || two === '&&' || two === '||') {
      tokens.push(two);
      at += 2;
    } else if (/[0-9]/.test(c)) {
      const digits = /^[0-9]+/.exec(text.slice(at, at + 40))![0];
      tokens.push(digits);
      at += digits.length;
    } else if ('n?:()!<>*/%+-'.includes(c)) {
      tokens.push(c);
      at++;
    } else {
      return null; // "=", "&", "|" alone, or any other character
    }
  }
  let position = 0;
  let depth = 0;
  const peek = () => tokens[position];
  const primary = (): Expression | null => {
    const token = tokens[position++];
    if (token === undefined) return null;
    if (token === 'n') return { op: 'n' };
    if (/^[0-9]/.test(token)) return { op: 'number', value: BigInt.asUintN(64, BigInt(token)) };
    if (token === '!') {
      const arg = nested(primary);
      return arg && { op: '!', arg };
    }
    if (token === '(') {
      const inner = nested(conditional);
      if (!inner || tokens[position++] !== ')') return null;
      return inner;
    }
    return null;
  };
  const nested = (parse: () => Expression | null): Expression | null => {
    if (++depth > MAX_DEPTH) return null;
    const result = parse();
    depth--;
    return result;
  };
  const binary = (level: number): Expression | null => {
    if (level === BINARY_LEVELS.length) return primary();
    let left = binary(level + 1);
    while (left && (BINARY_LEVELS[level] as string[]).includes(peek())) {
      const op = tokens[position++] as BinaryOp;
      const right = binary(level + 1);
      if (!right) return null;
      left = { op, left, right };
    }
    return left;
  };
  const conditional = (): Expression | null => {
    const test = binary(0);
    if (!test || peek() !== '?') return test;
    position++;
    const yes = nested(conditional);
    if (!yes || tokens[position++] !== ':') return null;
    const no = nested(conditional);
    return no && { op: '?', test, yes, no };
  };
  const expression = conditional();
  return expression && position === tokens.length ? expression : null;
}

class DivisionByZero extends Error {}

/** gettext's plural_eval, in 64-bit unsigned arithmetic. */
export function evaluatePlural(expression: Expression, n: bigint): bigint {
  const u = (value: bigint) => BigInt.asUintN(64, value);
  const truth = (value: boolean) => (value ? 1n : 0n);
  const run = (e: Expression): bigint => {
    if (e.op === 'n') return n;
    if ('value' in e) return e.value;
    if ('arg' in e) return truth(run(e.arg) === 0n);
    if ('test' in e) return run(e.test) !== 0n ? run(e.yes) : run(e.no);
    if (!('left' in e)) return n;
    const left = run(e.left);
    if (e.op === '||') return truth(left !== 0n || run(e.right) !== 0n);
    if (e.op === '&&') return truth(left !== 0n && run(e.right) !== 0n);
    const right = run(e.right);
    switch (e.op) {
      case '*':
        return u(left * right);
      case '/':
      case '%':
        if (right === 0n) throw new DivisionByZero();
        return e.op === '/' ? left / right : left % right;
      case '+':
        return u(left + right);
      case '-':
        return u(left - right);
      case '<':
        return truth(left < right);
      case '>':
        return truth(left > right);
      case '<=':
        return truth(left <= right);
      case '>=':
        return truth(left >= right);
      case '==':
        return truth(left === right);
      default:
        return truth(left !== right);
    }
  };
  return run(expression);
}

/** msgfmt's check_plural_eval over n = 0…1000: a problem, or null. */
function pluralRangeProblem(expression: Expression, nplurals: bigint): string | null {
  for (let n = 0n; n <= 1000n; n++) {
    let value: bigint;
    try {
      value = evaluatePlural(expression, n);
    } catch (error) {
      if (error instanceof DivisionByZero) return 'the plural expression can divide by zero';
      throw error;
    }
    if (value >= 1n << 63n) return 'the plural expression can produce negative values';
    if (value >= nplurals) {
      return `nplurals = ${nplurals} but the plural expression can produce values as large as ${value}`;
    }
  }
  return null;
}
