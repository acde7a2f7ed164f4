// ANDROID_XML: <resources> with <string name>, <plurals name><item quantity> and
// <string-array name><item>. Strings with translatable="false" are skipped. Android escapes
// (\' \" \n \t \@ \?, surrounding double quotes, CDATA) are decoded to plain text.
import { decodeXmlEntities, escapeXml, keyPath, pathKey } from './text.js';
import { field } from '../../json-fields.js';
import { attribute, elements, innerText, readXml } from './xml.js';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

function androidText(raw: string): string {
  const cdata = /^\s*<!\[CDATA\[([\s\S]*)\]\]>\s*$/.exec(raw);
  let text = cdata ? cdata[1] : decodeXmlEntities(raw);
  if (!cdata && text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1);
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, c: string) =>
    c.length === 5
      ? String.fromCharCode(parseInt(c.slice(1), 16))
      : (({ n: '\n', t: '\t' } as Record<string, string>)[c] ?? c),
  );
}

export function parseAndroid(bytes: Buffer): ParsedFile {
  const doc = readXml(
    bytes,
    'ANDROID_XML',
    ['resources.string', 'resources.plurals.item', 'resources.string-array.item'],
    ['string', 'plurals', 'string-array', 'item'],
  );
  const resources = field(doc, 'resources');
  if (resources === undefined) throw new FormatError('not an Android resource file (no <resources> root element)');
  const units: ParsedUnit[] = [];
  const seen = new Set<string>();
  const add = (path: (string | number)[], raw: unknown) => {
    const key = pathKey(path);
    if (seen.has(key)) throw new FormatError(`duplicate Android resource ${path.join(' ')}`);
    seen.add(key);
    const text = androidText(innerText(raw));
    units.push({ key, context: null, source: text, sourcePlural: null, forms: [text], fuzzy: false, stale: false });
  };
  if (!resources || typeof resources !== 'object') return { units, meta: {} };
  const named = (node: unknown) => {
    const name = attribute(node, 'name');
    if (!name) throw new FormatError('an Android resource has no name attribute');
    return name;
  };
  for (const node of elements(resources, 'string')) {
    if (attribute(node, 'translatable') === 'false') continue;
    add(['string', named(node)], node);
  }
  for (const node of elements(resources, 'plurals')) {
    const name = named(node);
    for (const item of elements(node, 'item')) add(['plurals', name, attribute(item, 'quantity') ?? 'other'], item);
  }
  for (const node of elements(resources, 'string-array')) {
    if (attribute(node, 'translatable') === 'false') continue;
    const name = named(node);
    elements(node, 'item').forEach((item, index) => add(['array', name, index], item));
  }
  return { units, meta: {} };
}

function escapeAndroid(text: string): string {
  return escapeXml(text)
    .replace(/\\/g, '\\\\')
    .replace(/'/g, "\\'")
    .replace(/\n/g, '\\n')
    .replace(/^@/, '\\@')
    .replace(/^\?/, '\\?');
}

export function writeAndroid(request: ExportRequest): Buffer {
  const strings: string[] = [];
  const groups = new Map<string, { kind: string; items: string[] }>();
  for (const entry of request.entries) {
    const text = request.isBase ? entry.source : entry.forms?.[0];
    if (!text) continue;
    const [kind, name, item] = keyPath(entry.key).map(String);
    if (kind === 'string') {
      strings.push(`  <string name="${escapeXml(name)}">${escapeAndroid(text)}</string>`);
      continue;
    }
    const tag = kind === 'plurals' ? 'plurals' : 'string-array';
    const group = groups.get(`${tag}:${name}`) ?? { kind: tag, items: [] };
    group.items.push(
      kind === 'plurals'
        ? `    <item quantity="${escapeXml(item)}">${escapeAndroid(text)}</item>`
        : `    <item>${escapeAndroid(text)}</item>`,
    );
    groups.set(`${tag}:${name}`, group);
  }
  const lines = ['<?xml version="1.0" encoding="utf-8"?>', '<resources>', ...strings];
  for (const [id, group] of groups) {
    lines.push(
      `  <${group.kind} name="${escapeXml(id.split(':').slice(1).join(':'))}">`,
      ...group.items,
      `  </${group.kind}>`,
    );
  }
  lines.push('</resources>', '');
  return Buffer.from(lines.join('\n'));
}
