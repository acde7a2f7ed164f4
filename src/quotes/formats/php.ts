// PHP arrays of strings, read with php-parser (glayzzle): OneSky's PHP (`return array(…);` or
// `$lang = array(…);`), PHP_SHORT_ARRAY (`[…]`, PHP ≥ 5.4) and PHP_VARIABLES
// (`$lang['menu']['file'] = '…';`, CodeIgniter style). Each reads all three layouts; they differ
// in what an export writes. Strings are keyed by their path of array keys, like nested JSON.
// Only literal texts are strings: single- or double-quoted strings without variables, nowdocs,
// heredocs without variables and `.` concatenations of those; numbers, booleans and null are
// skipped; anything else (a call, a constant, "$name") is refused with its line, since quartet
// cannot know its value. Other statements (`defined('BASEPATH') or exit;`) are ignored.
import { Engine } from 'php-parser';
import { field, isRecord } from '../../json-fields.js';
import { MAX_DEPTH, buildTree } from './tree.js';
import { decodeText, pathKey } from './text.js';
import { FormatError, textUnit, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

/** A node of php-parser's tree: its kind, and its other fields read with child() and nodes(). */
type Node = { kind: string; loc?: { start: { line: number } } | null; [field: string]: unknown };

const isNode = (value: unknown): value is Node => isRecord(value) && typeof value.kind === 'string';

/** The node in a field of `node`, null when the field holds none (an entry without key, `$a[]`). */
function child(node: Node, name: string): Node | null {
  const value = field(node, name);
  return isNode(value) ? value : null;
}

/** The node a field of `node` always holds in php-parser's tree. */
function part(node: Node, name: string): Node {
  const value = child(node, name);
  if (!value) throw new FormatError(`a PHP ${node.kind}${lineOf(node)} has no ${name}`);
  return value;
}

/** The nodes of a list php-parser's tree holds (a program's statements, an array's items…). */
function nodes(value: unknown): Node[] {
  if (!Array.isArray(value) || !value.every(isNode)) throw new FormatError('not valid PHP: an unexpected syntax tree');
  return value;
}

const engine = new Engine({
  parser: { php7: true, php8: true, extractDoc: false, suppressErrors: false },
  ast: { withPositions: true },
});

const lineOf = (node: Node) => (node.loc ? ` at line ${node.loc.start.line}` : '');

/** The text of a literal string expression, null for a number, boolean or null. */
function literal(node: Node): string | null {
  switch (node.kind) {
    case 'string':
    case 'nowdoc':
      return String(node.value);
    case 'encapsed': {
      const texts = nodes(node.value).map((piece) => child(piece, 'expression'));
      if (texts.every((text) => text?.kind === 'string')) return texts.map((text) => String(text?.value)).join('');
      throw new FormatError(`a string with PHP variables${lineOf(node)} has no fixed text`);
    }
    case 'bin':
      if (node.type === '.') {
        const [left, right] = [literal(part(node, 'left')), literal(part(node, 'right'))];
        if (left !== null && right !== null) return left + right;
      }
      break;
    case 'number':
    case 'boolean':
    case 'nullkeyword':
      return null;
    case 'cast':
    case 'unary':
      // A cast holds its operand in `expr`, not `what`: `(int) 1` is refused.
      if (child(node, 'what')?.kind === 'number') return null;
  }
  throw new FormatError(`a PHP ${node.kind}${lineOf(node)} is not a literal string`);
}

/** An array key: a literal text or an integer. */
function keyText(node: Node): string {
  if (node.kind === 'number') return String(node.value);
  const text = literal(node);
  if (text === null) throw new FormatError(`an array key${lineOf(node)} is not a text`);
  return text;
}

export function parsePhp(bytes: Buffer, formatName: string): ParsedFile {
  const text = decodeText(bytes, { formatName });
  try {
    return readProgram(engine.parseCode(text, 'upload.php') as unknown as Node, formatName);
  } catch (error) {
    // php-parser and chains of `.` recurse: a hostile file can exhaust the stack.
    if (error instanceof RangeError) throw new FormatError('PHP nested too deeply to read');
    if (error instanceof FormatError) throw error;
    throw new FormatError(`not valid PHP: ${(error as Error).message}`);
  }
}

function readProgram(program: Node, formatName: string): ParsedFile {
  // A key given twice keeps its last value at its first place, as in a PHP array.
  const strings = new Map<string, ParsedUnit>();
  const add = (path: string[], text: string) => strings.set(pathKey(path), textUnit(pathKey(path), text));
  const walkArray = (array: Node, path: string[]) => {
    if (path.length >= MAX_DEPTH) throw new FormatError(`${formatName} arrays nested deeper than ${MAX_DEPTH} levels`);
    let next = 0; // PHP's next integer key
    for (const item of nodes(array.items)) {
      if (item.kind !== 'entry' || item.unpack || item.byRef) {
        throw new FormatError(`a PHP ${item.kind}${lineOf(item)} is not an array entry`);
      }
      const keyNode = child(item, 'key');
      let key: string;
      if (keyNode === null) key = String(next++);
      else {
        key = keyText(keyNode);
        if (/^(?:0|-?[1-9]\d*)$/.test(key)) next = Math.max(next, Number(key) + 1);
      }
      value(part(item, 'value'), [...path, key]);
    }
  };
  const value = (node: Node, path: string[]) => {
    if (node.kind === 'array') walkArray(node, path);
    else {
      const text = literal(node);
      if (text !== null) add(path, text);
    }
  };
  let variable: string | null = null;
  let style: 'return' | 'assign' | null = null;
  const target = (node: Node): string[] => {
    if (node.kind === 'variable' && typeof node.name === 'string') {
      if (variable !== null && variable !== node.name) {
        throw new FormatError(
          `strings in two variables ($${variable}, $${node.name}${lineOf(node)}): a file holds one`,
        );
      }
      variable = node.name;
      return [];
    }
    const offset = child(node, 'offset');
    if (node.kind === 'offsetlookup' && offset) {
      const name = keyText(offset);
      const path = target(part(node, 'what'));
      if (path.length >= MAX_DEPTH) throw new FormatError(`${formatName} keys nested deeper than ${MAX_DEPTH} levels`);
      return [...path, name];
    }
    throw new FormatError(`a PHP ${node.kind}${lineOf(node)} is not a variable of strings`);
  };
  for (const statement of nodes(program.children)) {
    const returned = child(statement, 'expr');
    const assign = child(statement, 'expression');
    if (statement.kind === 'return' && returned?.kind === 'array') {
      style = 'return';
      walkArray(returned, []);
    } else if (statement.kind === 'expressionstatement' && assign?.kind === 'assign') {
      if (assign.operator !== '=') continue;
      style ??= 'assign';
      value(part(assign, 'right'), target(part(assign, 'left')));
    }
  }
  return { units: [...strings.values()], meta: { style, variable } };
}

const quote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** PHP source of a tree of strings, `array(…)` or `[…]`, indented by four spaces a level. */
function phpArray(node: Record<string, unknown> | unknown[], short: boolean, indent: string): string {
  const inner = indent + '    ';
  const items = Object.entries(node).map(([key, child]) => {
    const value = typeof child === 'string' ? quote(child) : phpArray(child as Record<string, unknown>, short, inner);
    return `${inner}${Array.isArray(node) ? '' : `${quote(key)} => `}${value},\n`;
  });
  const [open, close] = short ? ['[', ']'] : ['array(', ')'];
  return `${open}\n${items.join('')}${indent}${close}`;
}

/** Each string as an assignment: `$lang['menu']['file'] = 'File';`. */
function phpAssignments(node: Record<string, unknown> | unknown[], prefix: string, lines: string[]) {
  for (const [key, child] of Object.entries(node)) {
    const target = `${prefix}[${Array.isArray(node) ? key : quote(key)}]`;
    if (typeof child === 'string') lines.push(`${target} = ${quote(child)};`);
    else phpAssignments(child as Record<string, unknown>, target, lines);
  }
}

const variableName = (request: ExportRequest) =>
  typeof request.meta.variable === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(request.meta.variable)
    ? request.meta.variable
    : 'lang';

export function writePhp(request: ExportRequest, layout: 'array' | 'short' | 'variables'): Buffer {
  const tree = buildTree(request);
  if (layout === 'variables') {
    const lines = ['<?php', ''];
    phpAssignments(tree, `$${variableName(request)}`, lines);
    return Buffer.from(lines.join('\n') + '\n');
  }
  const array = phpArray(tree, layout === 'short', '');
  const head = request.meta.style === 'assign' ? `$${variableName(request)} =` : 'return';
  return Buffer.from(`<?php\n\n${head} ${array};\n`);
}
