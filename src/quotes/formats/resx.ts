// RESX: .NET resource files (<root><data name><value>…</value><comment/></data>), read with
// fast-xml-parser. Only string resources are strings: a <data> with a `type` or `mimetype`
// (images, file references, serialized objects) is skipped, and so are the Windows Forms
// designer's entries (names starting with ">>"). Export writes the resheaders that
// ResXResourceReader requires.
import { field } from '../../json-fields.js';
import { attribute, elements, escapeXmlText, innerText, plainText, readXml } from './xml.js';
import { exportedText, FormatError, textUnit, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

export function parseResx(bytes: Buffer): ParsedFile {
  const doc = readXml(bytes, 'RESX', ['root.data.value'], ['data', 'value']);
  const root = field(doc, 'root');
  if (root === undefined) throw new FormatError('not a .resx file (no <root> element)');
  const units: ParsedUnit[] = [];
  const seen = new Set<string>();
  for (const data of elements(root, 'data')) {
    const name = attribute(data, 'name');
    if (name === undefined || name === '') throw new FormatError('a .resx <data> element has no name attribute');
    const type = attribute(data, 'type');
    if ((type !== undefined && !type.startsWith('System.String')) || attribute(data, 'mimetype') !== undefined) {
      continue;
    }
    if (name.startsWith('>>')) continue;
    if (seen.has(name)) throw new FormatError(`duplicate .resx resource "${name.slice(0, 60)}"`);
    seen.add(name);
    const values = elements(data, 'value');
    if (values.length > 1) throw new FormatError(`the .resx resource "${name.slice(0, 60)}" has more than one <value>`);
    units.push(textUnit(name, plainText(innerText(values[0]), `the <value> of "${name.slice(0, 60)}"`)));
  }
  return { units, meta: {} };
}

const ASSEMBLY = 'System.Windows.Forms, Version=4.0.0.0, Culture=neutral, PublicKeyToken=b77a5c561934e089';
const READER = `System.Resources.ResXResourceReader, ${ASSEMBLY}`;
const WRITER = `System.Resources.ResXResourceWriter, ${ASSEMBLY}`;

export function writeResx(request: ExportRequest): Buffer {
  const header = (name: string, value: string) =>
    `  <resheader name="${name}">\n    <value>${value}</value>\n  </resheader>`;
  const lines = [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<root>',
    header('resmimetype', 'text/microsoft-resx'),
    header('version', '2.0'),
    header('reader', READER),
    header('writer', WRITER),
  ];
  for (const entry of request.entries) {
    const text = exportedText(request, entry);
    if (text === null) continue;
    lines.push(
      `  <data name="${escapeXmlText(entry.key, true)}" xml:space="preserve">`,
      `    <value>${escapeXmlText(text)}</value>`,
      '  </data>',
    );
  }
  lines.push('</root>', '');
  return Buffer.from(lines.join('\n'));
}
