// Nested key-value formats (HIERARCHICAL_JSON, YAML): a tree of objects whose string leaves
// are the strings, keyed by their path. Arrays count as trees with numeric path segments;
// numbers, booleans and null are not translatable and are skipped.
import { FormatError, type ExportRequest, type ParsedUnit } from './types.js';
import { keyPath, pathKey } from './text.js';

export const MAX_DEPTH = 64;

export function flattenTree(root: unknown, formatName: string): ParsedUnit[] {
  if (root === null || typeof root !== 'object') throw new FormatError(`a ${formatName} file must hold an object of strings`);
  const units: ParsedUnit[] = [];
  const walk = (node: unknown, path: (string | number)[]) => {
    if (path.length > MAX_DEPTH) throw new FormatError(`${formatName} nesting deeper than ${MAX_DEPTH} levels`);
    if (typeof node === 'string') {
      units.push({ key: pathKey(path), context: null, source: node, sourcePlural: null, forms: [node], fuzzy: false, stale: false });
    } else if (Array.isArray(node)) {
      node.forEach((child, index) => walk(child, [...path, index]));
    } else if (node !== null && typeof node === 'object') {
      for (const [name, child] of Object.entries(node)) walk(child, [...path, name]);
    }
  };
  walk(root, []);
  return units;
}

/** Rebuilds the tree of the exported strings; untranslated strings are left out. */
export function buildTree(request: ExportRequest): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const entry of request.entries) {
    const text = request.isBase ? entry.source : entry.forms?.[0];
    if (!text) continue;
    const path = keyPath(entry.key);
    let node: any = root;
    path.forEach((segment, index) => {
      if (index === path.length - 1) {
        node[segment] = text;
        return;
      }
      node[segment] ??= typeof path[index + 1] === 'number' ? [] : {};
      node = node[segment];
    });
  }
  return root;
}
