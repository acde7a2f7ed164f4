// HIERARCHICAL_JSON: nested objects of strings ({"menu": {"file": "File"}}).
import { readJsonText } from './text.js';
import { buildTree, flattenTree } from './tree.js';
import { FormatError, type ExportRequest, type ParsedFile } from './types.js';

export function parseJson(bytes: Buffer): ParsedFile {
  const value = readJsonText(bytes, 'HIERARCHICAL_JSON');
  if (Array.isArray(value)) throw new FormatError('a HIERARCHICAL_JSON file must hold an object, not an array');
  return { units: flattenTree(value, 'HIERARCHICAL_JSON'), meta: {} };
}

export function writeJson(request: ExportRequest): Buffer {
  return Buffer.from(JSON.stringify(buildTree(request), null, 2) + '\n');
}
