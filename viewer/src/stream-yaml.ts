// Reading a YAML description while it downloads, as stream.ts does for JSON. A block-style root
// mapping is cut at its keys (lines at column 0), and `paths` at its path keys (the lines at the
// indentation of its first key); each piece is parsed by itself with the yaml library as soon as
// the next one begins, so the first operations can be shown before the rest has arrived.
// A cut can only hold when no piece needs another: anything else makes the caller parse the whole
// text at the end, as before. That is the case for an alias to an anchor in another piece (its
// parse fails), a duplicate key, directives (`%YAML`, `%TAG`), more than one document, a flow-style
// or complex-key root, a tab or an unexpected indentation where a key should be, and any piece
// the parser refuses (which the whole parse then reports with its own message).
import { parse } from 'yaml';
import type { JsonObject } from './data.js';
import { hasOwn } from './own.js';
import { DEFER_BYTES, define, EXTERNAL_REF, FOR_FIRST_RENDER, PathsProgress } from './stream.js';

const OPTIONS = { maxAliasCount: 1000 };

class NotStreamable extends Error {}

/** `key:` of a plain key at the start of a root line (quoted keys are read by the parser instead). */
const PLAIN_KEY = /^([A-Za-z_$][\w$.-]*)\s*:(?:\s|$)/;
const PATHS = /^paths\s*:(?:\s+#.*|\s*)$/;
/** Characters that cannot start a plain key at column 0 (flow, alias, anchor, tag, block scalar…). */
const NOT_A_KEY = new Set(['%', '?', '[', ']', '{', '}', '*', '&', '!', '|', '>', '@', '`', ',', ':', '\t']);

export class StreamingYaml extends PathsProgress {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;
  private readonly decoder = new TextDecoder();
  /** The end of the text that is not a whole line yet. */
  private rest = '';
  private started = false;
  /** The lines of the root entry being read (outside `paths`). */
  private entry?: string[];
  private inPaths = false;
  private pathIndent = 0;
  /** The lines of the path item being read, without the path indentation. */
  private item?: string[];
  private paths?: JsonObject;
  private deferred: { key: string; text: string }[] = [];
  /** The cut gave up: the caller parses `bytes()` as a whole. */
  whole = false;
  readonly root: JsonObject = {};
  externalRefs = false;

  push(chunk: Uint8Array) {
    this.chunks.push(chunk.slice());
    this.length += chunk.length;
    if (this.whole) return;
    this.read(this.decoder.decode(chunk, { stream: true }), false);
  }

  /** Still cutting `paths` (each piece pushed is read now). */
  scanning(): boolean {
    return !this.whole && !this.pathsDone;
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  /** The whole description, or undefined when it has to be parsed as one text. */
  finish(): JsonObject | undefined {
    if (this.whole) return undefined;
    this.read(this.decoder.decode(), true);
    if (this.whole || !this.started) return undefined;
    try {
      this.closeEntry();
      for (const { key, text } of this.deferred) define(this.root, key, this.value(text, key));
    } catch {
      return undefined;
    }
    this.deferred = [];
    return this.root;
  }

  private read(text: string, final: boolean) {
    const lines = (this.rest + text).split('\n');
    this.rest = final ? '' : lines.pop()!;
    try {
      for (const line of lines) this.line(line.endsWith('\r') ? line.slice(0, -1) : line);
    } catch {
      this.giveUp();
    }
  }

  private giveUp() {
    this.whole = true;
    this.entry = this.item = undefined;
    this.deferred = [];
  }

  private line(line: string) {
    let indent = 0;
    while (line.charCodeAt(indent) === 0x20) indent++;
    const blank = indent === line.length;
    const comment = line[indent] === '#';
    if (!this.started) {
      if (blank || comment) return;
      this.started = true;
      if (/^---(?:\s+#.*|\s*)$/.test(line)) return; // the document's start marker
    }
    if (indent === 0 && !blank && !comment) {
      const sequenceItem = line[0] === '-' && (line.length === 1 || line[1] === ' ');
      if (sequenceItem && !line.startsWith('---')) {
        // A compact sequence under the current root key (`tags:` then `- name: …`).
        if (this.inPaths || !this.entry) throw new NotStreamable();
        this.entry.push(line);
        return;
      }
      if (NOT_A_KEY.has(line[0]) || /^(?:---|\.\.\.)(?:\s|$)/.test(line) || sequenceItem) {
        throw new NotStreamable();
      }
      this.closeEntry();
      this.openEntry(line);
      return;
    }
    if (!this.inPaths) {
      if (this.entry) this.entry.push(line);
      else if (!blank && !comment) throw new NotStreamable(); // an indented root
      return;
    }
    if (!blank && !comment) {
      if (this.pathIndent === 0) this.pathIndent = indent;
      const sequenceItem = line[indent] === '-' && (line.length === indent + 1 || line[indent + 1] === ' ');
      if (sequenceItem && !this.item) throw new NotStreamable(); // `paths` is a sequence
      if (indent === this.pathIndent && !sequenceItem) {
        // `---` or `...` there would start or end a document in a piece parsed alone, where the whole
        // text has a line of a key (a property test found `   ---` under `paths`).
        if (NOT_A_KEY.has(line[indent]) || /^(?:---|\.\.\.)(?:\s|$)/.test(line.slice(indent))) {
          throw new NotStreamable();
        }
        this.closeItem();
        this.item = [line.slice(indent)];
        return;
      }
      if (indent < this.pathIndent) throw new NotStreamable();
    }
    this.item?.push(line.slice(Math.min(indent, this.pathIndent)));
  }

  private openEntry(line: string) {
    if (PATHS.test(line)) {
      if (hasOwn(this.root, 'paths')) throw new NotStreamable(); // a duplicate key: the parser's error
      this.paths = {};
      define(this.root, 'paths', this.paths);
      this.inPaths = true;
      this.pathIndent = 0;
      return;
    }
    this.entry = [line];
  }

  /** The root entry (or `paths`) ends: parsed now, or (large, not needed yet) at the end. */
  private closeEntry() {
    if (this.inPaths) {
      this.closeItem();
      this.inPaths = false;
      this.pathsDone = true;
      if (this.pathIndent === 0) define(this.root, 'paths', null); // `paths:` and nothing under it
      return;
    }
    if (!this.entry) return;
    const text = this.entry.join('\n');
    this.entry = undefined;
    const key = PLAIN_KEY.exec(text)?.[1];
    if (key !== undefined && text.length > DEFER_BYTES && !FOR_FIRST_RENDER.has(key)) {
      if (hasOwn(this.root, key)) throw new NotStreamable();
      define(this.root, key, undefined); // holds the key's place in the order of the whole parse
      this.deferred.push({ key, text });
      return;
    }
    const [name, value] = this.member(text);
    if (hasOwn(this.root, name)) throw new NotStreamable();
    define(this.root, name, value);
  }

  private closeItem() {
    if (!this.item) return;
    const [path, value] = this.member(this.item.join('\n'));
    this.item = undefined;
    if (hasOwn(this.paths!, path)) throw new NotStreamable();
    define(this.paths!, path, value);
    this.added++;
  }

  /** A piece's one member (`key: value`). */
  private member(text: string): [string, unknown] {
    const parsed: unknown = parse(text, OPTIONS);
    if (EXTERNAL_REF.test(text)) this.externalRefs = true;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new NotStreamable();
    const keys = Object.keys(parsed);
    if (keys.length !== 1) throw new NotStreamable();
    return [keys[0], (parsed as JsonObject)[keys[0]]];
  }

  /** A deferred root entry's value. */
  private value(text: string, key: string): unknown {
    const [name, value] = this.member(text);
    if (name !== key) throw new NotStreamable();
    return value;
  }
}
