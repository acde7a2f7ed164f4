// XLIFF 1.2 (<trans-unit id><source><target state>) and 2.0 (<unit id><segment state><source>
// <target>). Texts are kept as raw inner XML: inline markup (<g>, <x/>, <ph>) is preserved for
// export and ignored by the word counter. Target states: XLIFF 1.2 `new` and 2.0 `initial`
// are not translated; `needs-*` are not approved; translated/final/signed-off/reviewed approved.
import { escapeXml } from './text.js';
import { field } from '../../json-fields.js';
import { attribute, elements, innerText, readXml } from './xml.js';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

export function parseXliff(bytes: Buffer): ParsedFile {
  const doc = readXml(bytes, 'XLIFF', ['*.source', '*.target'], ['file', 'trans-unit', 'group', 'unit', 'segment']);
  const root = field(doc, 'xliff');
  if (!root || typeof root !== 'object') throw new FormatError('not an XLIFF document (no <xliff> root element)');
  const version = attribute(root, 'version') ?? '1.2';
  const units: ParsedUnit[] = [];
  const seen = new Set<string>();
  const add = (id: string | undefined, source: unknown, target: unknown, state: string | undefined) => {
    if (!id) throw new FormatError('an XLIFF unit has no id attribute');
    if (seen.has(id)) throw new FormatError(`duplicate XLIFF unit id "${id.slice(0, 60)}"`);
    seen.add(id);
    const targetText = innerText(target);
    const untranslated = state === 'new' || state === 'initial';
    units.push({
      key: id,
      context: null,
      source: innerText(source),
      sourcePlural: null,
      forms: untranslated ? [''] : [targetText],
      fuzzy: !!state && state.startsWith('needs-'),
      stale: false,
    });
  };
  const walkGroups = (container: unknown, visit: (node: unknown) => void) => {
    if (!container || typeof container !== 'object') return;
    visit(container);
    for (const group of elements(container, 'group')) walkGroups(group, visit);
  };
  for (const file of elements(root, 'file')) {
    if (version.startsWith('2')) {
      walkGroups(file, (node) => {
        for (const unit of elements(node, 'unit')) {
          const segments = elements(unit, 'segment');
          if (segments.length !== 1) {
            throw new FormatError(`XLIFF 2 unit "${attribute(unit, 'id')}" must have exactly one segment`);
          }
          const [segment] = segments;
          add(attribute(unit, 'id'), field(segment, 'source'), field(segment, 'target'), attribute(segment, 'state'));
        }
      });
    } else {
      walkGroups(field(file, 'body'), (node) => {
        for (const unit of elements(node, 'trans-unit')) {
          if (attribute(unit, 'translate') === 'no') continue;
          const target = field(unit, 'target');
          add(attribute(unit, 'id'), field(unit, 'source'), target, attribute(target, 'state'));
        }
      });
    }
  }
  return { units, meta: {} };
}

export function writeXliff(request: ExportRequest): Buffer {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">',
    `  <file original="${escapeXml(request.fileName)}" source-language="${request.sourceLocale}"` +
      ` target-language="${request.locale}" datatype="plaintext">`,
    '    <body>',
  ];
  for (const entry of request.entries) {
    const target = request.isBase ? entry.source : entry.forms?.[0];
    const state = request.isBase ? 'final' : !target ? 'new' : entry.fuzzy ? 'needs-review-translation' : 'translated';
    lines.push(`      <trans-unit id="${escapeXml(entry.key)}">`, `        <source>${entry.source}</source>`);
    lines.push(`        <target state="${state}">${target ?? ''}</target>`, '      </trans-unit>');
  }
  lines.push('    </body>', '  </file>', '</xliff>', '');
  return Buffer.from(lines.join('\n'));
}
