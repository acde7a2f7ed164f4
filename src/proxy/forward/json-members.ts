// Members added to the text of a JSON object without serializing the parsed object again: the upstream's
// answer goes to the caller as it came, with the node's members inserted before the closing braces.
// Serializing the whole parsed answer again rounded what JSON.parse cannot hold (integers past 2^53)
// and cost more than this walk (bench/README.md, "Run U").

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../../http/json-depth.js';

const COMMA = 0x2c;
const COLON = 0x3a;
/** Space, tab, line feed, carriage return: JSON's whitespace, all at or below it. */
const SPACE = 0x20;

/**
 * `text`, a JSON object that JSON.parse accepted, with `added` (members as text, `"name":value`) as
 * its last members, and `addedToMember` as the last members of the object that is the value of its
 * member `member` (the last of that name, as JSON.parse reads it), if that value is an object. Null
 * when a member's name at the top level is written with escapes: JSON.parse reads a name there that
 * this does not see; the caller serializes the parsed value instead. One pass; strings are skipped
 * with indexOf, names at the top level read character by character.
 */
export function withMembersAdded(text: string, added: string, member: string, addedToMember: string): string | null {
  let depth = 0;
  /** At the top level, after `{` or `,`: the next string is a member's name. */
  let nameNext = false;
  /** The name just read is `member`; then, once its colon is read, its value is next. */
  let isMember = false;
  let memberValueNext = false;
  let inMemberObject = false;
  let memberEnd = -1;
  let objectEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    switch (char) {
      case QUOTE: {
        const end = stringEnd(text, i);
        if (depth === 1 && nameNext) {
          const backslash = text.indexOf('\\', i + 1);
          if (backslash >= 0 && backslash < end) return null;
          isMember = end - i - 1 === member.length && text.startsWith(member, i + 1);
          // A later member of the same name replaces the earlier one.
          if (isMember) memberEnd = -1;
        }
        nameNext = false;
        memberValueNext = false;
        i = end;
        break;
      }
      case OPEN_BRACE:
      case OPEN_BRACKET:
        depth++;
        if (depth === 1) nameNext = true;
        else if (depth === 2 && memberValueNext && char === OPEN_BRACE) inMemberObject = true;
        memberValueNext = false;
        break;
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        depth--;
        if (depth === 1 && inMemberObject) {
          memberEnd = i;
          inMemberObject = false;
        } else if (depth === 0) {
          objectEnd = i;
        }
        break;
      case COMMA:
        if (depth === 1) nameNext = true;
        break;
      case COLON:
        if (depth === 1) {
          memberValueNext = isMember;
          isMember = false;
        }
        break;
      default:
        // A number, true, false or null (whitespace changes nothing).
        if (char > SPACE) memberValueNext = false;
    }
  }
  if (objectEnd < 0) return null;
  const atTop = opensEmpty(text, objectEnd) ? added : `,${added}`;
  if (memberEnd < 0) return text.slice(0, objectEnd) + atTop + text.slice(objectEnd);
  const inMember = opensEmpty(text, memberEnd) ? addedToMember : `,${addedToMember}`;
  return text.slice(0, memberEnd) + inMember + text.slice(memberEnd, objectEnd) + atTop + text.slice(objectEnd);
}

/** The index of the quote that closes the string opened at `start`: the next one not escaped. */
function stringEnd(text: string, start: number): number {
  for (let end = text.indexOf('"', start + 1); ; end = text.indexOf('"', end + 1)) {
    // Unclosed (never so in text JSON.parse accepted): the walk ends.
    if (end < 0) return text.length;
    // A quote after an odd number of backslashes is part of the string.
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}

/** Whether the object closed at `end` has no members: `{` is the last character before it but whitespace. */
function opensEmpty(text: string, end: number): boolean {
  let i = end - 1;
  while (i >= 0 && text.charCodeAt(i) <= SPACE) i--;
  return text.charCodeAt(i) === OPEN_BRACE;
}
