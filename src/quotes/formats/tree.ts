// Nested key-value formats (HIERARCHICAL_JSON, YAML): a tree of objects whose string leaves
// are the strings, keyed by their path. Arrays count as trees with numeric path segments;
// numbers, booleans and null are not translatable and are skipped.
import { exportedText, FormatError, type ExportEntry, type ExportRequest, type ParsedUnit } from './types.js';
import { keyPath, pathKey } from './text.js';

export const MAX_DEPTH = 64;

/**
 * `branch` may read a whole object as one string (a Rails plural `{one: …, other: …}`); it
 * answers null for an ordinary branch.
 */
export function flattenTree(
  root: unknown,
  formatName: string,
  branch?: (node: object, path: (string | number)[]) => ParsedUnit | null,
): ParsedUnit[] {
  if (root === null || typeof root !== 'object') {
    throw new FormatError(`a ${formatName} file must hold an object of strings`);
  }
  const units: ParsedUnit[] = [];
  const walk = (node: unknown, path: (string | number)[]) => {
    if (path.length > MAX_DEPTH) throw new FormatError(`${formatName} nesting deeper than ${MAX_DEPTH} levels`);
    const whole = branch && node !== null && typeof node === 'object' ? branch(node, path) : null;
    if (whole) {
      units.push(whole);
    } else if (typeof node === 'string') {
      units.push({
        key: pathKey(path),
        context: null,
        source: node,
        sourcePlural: null,
        forms: [node],
        fuzzy: false,
        stale: false,
      });
    } else if (Array.isArray(node)) {
      node.forEach((child, index) => walk(child, [...path, index]));
    } else if (node !== null && typeof node === 'object') {
      // Own keys only; JSON.parse and yaml make `__proto__` an own key like any other.
      for (const [name, child] of Object.entries(node)) walk(child, [...path, name]);
    }
  };
  walk(root, []);
  return units;
}

/** Refuses a JSON value nested deeper than MAX_DEPTH (kept as it is, e.g. ARB metadata), with a bounded walk. */
export function refuseDeepValue(value: unknown, formatName: string): void {
  const stack: [unknown, number][] = [[value, 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= MAX_DEPTH) throw new FormatError(`${formatName} nesting deeper than ${MAX_DEPTH} levels`);
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
}

/** A node of an exported tree: objects have no prototype, so every key is a plain key. */
type Branch = Record<string, unknown> | unknown[];

/**
 * Rebuilds the tree of the exported strings (by default their text); untranslated strings are left out. Keys come from
 * uploads, so objects are made without a prototype (`__proto__`, `constructor` are plain keys).
 * Uploads kept side by side (is_keeping_all_strings) can disagree on a path's shape, e.g. "a" a
 * string in one and an object in the next: the entry that comes first in the file wins.
 */
export function buildTree(
  request: ExportRequest,
  valueOf: (entry: ExportEntry) => unknown = (entry) => exportedText(request, entry),
): Record<string, unknown> {
  const root: Record<string, unknown> = Object.create(null);
  // A real array index is below the number of strings; a bigger one would make a huge sparse array.
  const absurd = (segment: string | number) => typeof segment === 'number' && segment >= request.entries.length;
  const fits = (node: Branch, segment: string | number) => Array.isArray(node) === (typeof segment === 'number');
  for (const entry of request.entries) {
    const text = valueOf(entry);
    if (text === null || text === undefined) continue;
    const path = keyPath(entry.key);
    if (path.some(absurd)) continue;
    let node: Branch | null = root;
    for (let index = 0; node && index < path.length; index++) {
      const segment = path[index];
      if (!fits(node, segment)) break;
      const slot = node as Record<string | number, unknown>;
      if (index === path.length - 1) {
        if (slot[segment] === undefined) slot[segment] = text;
        break;
      }
      const wantArray = typeof path[index + 1] === 'number';
      slot[segment] ??= wantArray ? [] : Object.create(null);
      const child = slot[segment];
      const fitting = child !== null && typeof child === 'object' && Array.isArray(child) === wantArray;
      node = fitting ? (child as Branch) : null;
    }
  }
  return root;
}
