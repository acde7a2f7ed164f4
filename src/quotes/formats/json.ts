// HIERARCHICAL_JSON: nested objects of strings ({"menu": {"file": "File"}}).
import { decodeText } from './text.js';
import { buildTree, flattenTree } from './tree.js';
import { FormatError, type ExportRequest, type ParsedFile } from './types.js';

export function parseJson(bytes: Buffer): ParsedFile {
  const text = decodeText(bytes, { formatName: 'HIERARCHICAL_JSON' });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new FormatError(`not valid JSON: ${(error as Error).message}`);
  }
  if (Array.isArray(value)) throw new FormatError('a HIERARCHICAL_JSON file must hold an object, not an array');
  return { units: flattenTree(value, 'HIERARCHICAL_JSON'), meta: {} };
}

export function writeJson(request: ExportRequest): Buffer {
  return Buffer.from(JSON.stringify(buildTree(request), null, 2) + '\n');
}
