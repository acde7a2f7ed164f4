// Schemas shown two ways, as 2.x did: "Model" (a readable tree of properties) and "Model Schema"
// (an example value generated from the schema). Both stop at recursion and expand nested models
// only when opened, so huge or self-referencing schemas cost nothing until looked at.
import type { Resolver } from '../refs.js';
import type { Schema } from '../normalize/model.js';
import { highlightInto } from '../highlight.js';
import { markdown } from '../markdown.js';
import { t } from '../i18n.js';
import { h, tr, uid } from './dom.js';
import { ownValue, table } from '../own.js';
import { entries, isRecord, strings } from '../data.js';
import { text } from '../normalize/common.js';
import { allOfParts, alternativesOf, declaredTypes, enumOf } from '../schemas.js';

const MAX_DEPTH = 10;

function primaryType(s: Schema): string | undefined {
  const types = declaredTypes(s);
  if (types.length) return types.find((x) => x !== 'null') ?? types[0];
  if (s.properties || s.additionalProperties) return 'object';
  if (s.items) return 'array';
  return undefined;
}

export function typeLabel(schema: unknown, resolver: Resolver): string {
  if (!schema) return '';
  const s = resolver.object(schema);
  if (!s) return '';
  const name = resolver.nameOf(s);
  if (name) return name;
  const type = primaryType(s);
  if (type === 'array') return `array[${typeLabel(s.items, resolver) || 'any'}]`;
  const alternatives = alternativesOf(s);
  if (alternatives) return alternatives.map((x) => typeLabel(x, resolver)).join(' | ');
  if (s.allOf) {
    return (
      allOfParts(s)
        .map((x) => typeLabel(x, resolver))
        .filter(Boolean)
        .join(' & ') || 'object'
    );
  }
  const nullable = s.nullable === true || declaredTypes(s).includes('null');
  return `${type ?? 'any'}${s.format ? ` (${String(s.format)})` : ''}${nullable ? ' | null' : ''}`;
}

interface Discriminator {
  propertyName: string;
  /** value → the schema it selects, as written ('#/components/schemas/Cat' or 'Cat'). */
  mapping: [string, string][];
}

/** The discriminator of a schema or of one of its allOf parts (3.x {propertyName, mapping}, 2.0 a name). */
function discriminatorOf(s: Schema, resolver: Resolver): Discriminator | undefined {
  for (const candidate of [s, ...allOfParts(s)]) {
    const d = resolver.object(candidate)?.discriminator;
    if (typeof d === 'string') return { propertyName: d, mapping: [] };
    if (isRecord(d) && typeof d.propertyName === 'string') {
      const mapping = entries(d.mapping);
      return {
        propertyName: d.propertyName,
        mapping: mapping.filter((e): e is [string, string] => typeof e[1] === 'string'),
      };
    }
  }
  return undefined;
}

/** The discriminator value that selects `schema`: its mapping entry, else its name (the specification's default). */
function discriminatorValue(d: Discriminator, schema: unknown, resolver: Resolver): string | undefined {
  const target = resolver.object(schema);
  for (const [value, ref] of d.mapping) {
    const $ref = /[#/]/.test(ref) ? ref : `#/components/schemas/${ref}`;
    if (resolver.object({ $ref }) === target) return value;
  }
  return resolver.nameOf(target);
}

/** Properties of an object schema, allOf parts merged. */
export function propertiesOf(
  s: Schema,
  resolver: Resolver,
): { properties: Record<string, unknown>; required: Set<string> } {
  const properties = table<unknown>(); // names are the description's
  const required = new Set<string>();
  const visit = (node: Schema, depth: number) => {
    const r = resolver.object(node);
    if (!r || typeof r !== 'object' || depth > MAX_DEPTH) return;
    for (const part of Array.isArray(r.allOf) ? r.allOf : []) visit(part, depth + 1);
    if (r.properties && typeof r.properties === 'object') Object.assign(properties, r.properties);
    for (const name of strings(r.required)) required.add(name);
  };
  visit(s, 0);
  return { properties, required };
}

// Examples of huge, densely linked models (Stripe, GitHub) stop growing at this depth and size:
// enough to show the shape, cheap enough to expand instantly.
const EXAMPLE_DEPTH = 6;
const EXAMPLE_BUDGET = 1500;
let budget = EXAMPLE_BUDGET;

export function exampleOf(schema: unknown, resolver: Resolver, ancestors?: Set<object>): unknown {
  if (!ancestors) budget = EXAMPLE_BUDGET;
  return exampleStep(schema, resolver, ancestors ?? new Set());
}

function exampleStep(schema: unknown, resolver: Resolver, ancestors: Set<object>): unknown {
  if (!schema || --budget < 0) return undefined;
  const s = resolver.object(schema);
  if (!s) return undefined;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (s.default !== undefined) return s.default;
  if (enumOf(s)?.length) return enumOf(s)![0];
  if (ancestors.has(s) || ancestors.size > EXAMPLE_DEPTH) return undefined;
  ancestors.add(s);
  try {
    const discriminator = discriminatorOf(s, resolver);
    const alternatives = alternativesOf(s);
    if (alternatives) return alternativeExample(s, alternatives[0], resolver, ancestors);
    const type = primaryType(s) ?? (s.allOf ? 'object' : undefined);
    if (type === 'object') {
      // Entries, then fromEntries: every name an own property (`out[name] = …` runs `__proto__`'s setter).
      const out: [string, unknown][] = [];
      const { properties } = propertiesOf(s, resolver);
      for (const [name, prop] of Object.entries(properties)) {
        const resolved = resolver.object(prop);
        if (resolved?.readOnly && resolved?.writeOnly) continue;
        const value = exampleStep(prop, resolver, ancestors);
        if (value !== undefined) out.push([name, value]);
      }
      if (s.additionalProperties && typeof s.additionalProperties === 'object' && !Object.keys(properties).length) {
        out.push(['additionalProp1', exampleStep(s.additionalProperties, resolver, ancestors) ?? {}]);
      }
      // A subtype (allOf of a base with a discriminator) names itself in the discriminator property.
      const selector = discriminator && !s.discriminator && discriminatorValue(discriminator, s, resolver);
      if (selector) out.push([discriminator!.propertyName, selector]);
      return Object.fromEntries(out);
    }
    if (type === 'array') {
      const item = exampleStep(s.items, resolver, ancestors);
      return item === undefined ? [] : [item];
    }
    if (type === 'string') {
      const byFormat: Record<string, string> = {
        'date-time': '2024-01-01T00:00:00Z',
        date: '2024-01-01',
        email: 'user@example.com',
        uuid: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        uri: 'https://example.com',
        url: 'https://example.com',
        hostname: 'example.com',
        ipv4: '192.0.2.1',
        ipv6: '2001:db8::1',
        password: '',
        binary: '',
        byte: '',
      };
      return ownValue(byFormat, String(s.format)) ?? 'string';
    }
    if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 0;
    if (type === 'boolean') return true;
    if (type === 'file') return undefined;
    return undefined;
  } finally {
    ancestors.delete(s);
  }
}

/** An alternative's example, its discriminator property set to the value that selects it. */
function alternativeExample(s: Schema, alternative: unknown, resolver: Resolver, ancestors: Set<object>): unknown {
  const discriminator = discriminatorOf(s, resolver);
  const value = exampleStep(alternative, resolver, ancestors);
  const selector = discriminator && discriminatorValue(discriminator, alternative, resolver);
  return selector !== undefined && value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries([...Object.entries(value), [discriminator!.propertyName, selector]])
    : value;
}

/** The example of a oneOf/anyOf schema when its alternative number `choice` is picked. */
export function exampleOfChoice(schema: unknown, choice: number, resolver: Resolver): unknown {
  budget = EXAMPLE_BUDGET;
  const s = resolver.object(schema);
  const alternatives = s && alternativesOf(s);
  if (!s || !alternatives || !(choice in alternatives)) return exampleOf(schema, resolver);
  return alternativeExample(s, alternatives[choice], resolver, new Set([s]));
}

export function exampleText(
  schema: unknown,
  resolver: Resolver,
  mediaType = 'application/json',
  explicit?: unknown,
): string {
  const value = explicit !== undefined ? explicit : exampleOf(schema, resolver);
  if (value === undefined) return '';
  if (typeof value === 'string' && !/json/.test(mediaType)) return value;
  if (/xml/.test(mediaType)) return toXml(value, resolver.nameOf(resolver.object(schema)) ?? 'root');
  return JSON.stringify(value, null, 2);
}

function escapeXml(value: string) {
  return value.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!,
  );
}

function toXml(value: unknown, name: string, indent = ''): string {
  const tag = name.replace(/[^A-Za-z0-9_.-]/g, '_') || 'item';
  if (Array.isArray(value)) return value.map((v) => toXml(v, tag, indent)).join('\n');
  if (value && typeof value === 'object') {
    const inner = Object.entries(value)
      .map(([k, v]) => toXml(v, k, indent + '  '))
      .join('\n');
    return `${indent}<${tag}>\n${inner}\n${indent}</${tag}>`;
  }
  return `${indent}<${tag}>${escapeXml(String(value))}</${tag}>`;
}

/** The "Model" view: a property tree, nested models expanded on demand. */
export function modelTree(schema: unknown, resolver: Resolver, ancestors: object[] = []): HTMLElement {
  const s = schema ? resolver.object(schema) : undefined;
  if (!s) return h('span', { class: 'qv-type' }, 'any');
  const name = resolver.nameOf(s);
  const type = primaryType(s) ?? (s.allOf ? 'object' : undefined);
  const wrap = h('div', { class: 'qv-model' });
  if (ancestors.includes(s)) {
    wrap.append(
      h('span', { class: 'qv-type' }, name ?? type ?? 'object'),
      ' ',
      tr('(recursive)', 'span', { class: 'qv-muted' }),
    );
    return wrap;
  }
  const inner = [...ancestors, s];
  const description = text(s.description);
  if (description) wrap.append(h('div', { class: 'qv-model-desc' }, markdown(description, true)));
  const discriminator = discriminatorOf(s, resolver);
  const alternatives = alternativesOf(s);
  if (alternatives) {
    wrap.append(tr(s.oneOf ? 'One of' : 'Any of', 'div', { class: 'qv-muted' }));
    if (discriminator) wrap.append(discriminatorNote(discriminator));
    wrap.append(
      h(
        'ul',
        { class: 'qv-alternatives' },
        alternatives.map((alt) => {
          const selector = discriminator && discriminatorValue(discriminator, alt, resolver);
          return h(
            'li',
            null,
            selector !== undefined
              ? [
                  h('code', { class: 'qv-selector' }, `${discriminator!.propertyName}: ${JSON.stringify(selector)}`),
                  ' ',
                ]
              : '',
            nested(alt, resolver, inner),
          );
        }),
      ),
    );
    return wrap;
  }
  if (type === 'array') {
    wrap.append(
      h('span', { class: 'qv-type' }, `${name ?? ''}${name ? ' ' : ''}[`),
      nested(s.items, resolver, inner),
      h('span', { class: 'qv-type' }, ']'),
    );
    return wrap;
  }
  if (type !== 'object') {
    wrap.append(h('span', { class: 'qv-type' }, typeLabel(s, resolver)), constraints(s));
    return wrap;
  }
  const { properties, required } = propertiesOf(s, resolver);
  const list = h('ul', { class: 'qv-props' });
  for (const [prop, propSchema] of Object.entries(properties)) {
    const p = resolver.object(propSchema) ?? {};
    list.append(
      h(
        'li',
        null,
        h('span', { class: 'qv-prop-name' }, prop),
        ' (',
        h('span', { class: 'qv-type' }, typeLabel(propSchema, resolver)),
        required.has(prop) ? '' : [', ', tr('optional', 'span', { class: 'qv-muted' })],
        p.readOnly ? [', ', tr('read only', 'span', { class: 'qv-muted' })] : '',
        prop === discriminator?.propertyName ? [', ', tr('Discriminator', 'span', { class: 'qv-muted' })] : '',
        ')',
        p.description ? [': ', h('span', { class: 'qv-prop-desc' }, markdown(text(p.description), true))] : '',
        constraints(p),
        isComplex(p) ? nested(propSchema, resolver, inner) : '',
      ),
    );
  }
  if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    list.append(
      h(
        'li',
        null,
        h('span', { class: 'qv-prop-name' }, '*'),
        ' (',
        h('span', { class: 'qv-type' }, typeLabel(s.additionalProperties, resolver)),
        ')',
      ),
    );
  }
  wrap.append(
    h('span', { class: 'qv-model-title' }, `${name ?? ''} {`),
    list,
    h('span', { class: 'qv-model-title' }, '}'),
  );
  return wrap;
}

/** "Discriminator: petType" and, when written, which value selects which schema. */
function discriminatorNote(d: Discriminator): HTMLElement {
  return h(
    'div',
    { class: 'qv-discriminator' },
    tr('Discriminator'),
    ': ',
    h('code', null, d.propertyName),
    d.mapping.length
      ? ` (${d.mapping.map(([value, ref]) => `${value} → ${ref.replace(/^.*\//, '')}`).join(', ')})`
      : '',
  );
}

function isComplex(s: Schema): boolean {
  const type = primaryType(s);
  return type === 'object' || type === 'array' || !!(s.allOf || s.oneOf || s.anyOf);
}

function constraints(s: Schema): HTMLElement | string {
  const parts: string[] = [];
  const values = enumOf(s);
  if (values) parts.push(`${t('Enum')}: ${values.map((v) => JSON.stringify(v)).join(', ')}`);
  for (const key of ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems'] as const) {
    if (s[key] !== undefined) parts.push(`${key}: ${String(s[key])}`);
  }
  if (s.default !== undefined) parts.push(`${t('Default')}: ${JSON.stringify(s.default)}`);
  return parts.length ? h('span', { class: 'qv-constraints' }, ` [${parts.join('; ')}]`) : '';
}

/** A nested model behind a disclosure; its tree is built when first opened. */
function nested(schema: unknown, resolver: Resolver, ancestors: object[]): HTMLElement {
  const s = schema ? resolver.object(schema) : undefined;
  if (!s || !isComplex(s)) {
    return h('span', { class: 'qv-type' }, typeLabel(schema, resolver) || 'any');
  }
  if (ancestors.includes(s)) return modelTree(schema, resolver, ancestors);
  const details = h('details', { class: 'qv-nested' }, h('summary', null, typeLabel(schema, resolver) || 'object'));
  details.addEventListener(
    'toggle',
    () => {
      if (details.open && details.children.length === 1) details.append(modelTree(schema, resolver, ancestors));
    },
    { passive: true },
  );
  return details;
}

/**
 * Tabs "Model" / "Model Schema". Clicking the example calls `onPick` (fills an empty body box).
 */
export function schemaTabs(
  schema: unknown,
  resolver: Resolver,
  initial: 'model' | 'schema',
  mediaType: string,
  explicitExample?: unknown,
  onPick?: (text: string) => void,
): HTMLElement {
  const id = uid('qv-tabs');
  const box = h('div', { class: 'qv-schema-tabs' });
  const list = h('div', { role: 'tablist', class: 'qv-tablist', 'aria-label': t('Model') });
  const panels: HTMLElement[] = [];
  const tabs: HTMLButtonElement[] = [];
  const build = [
    () => modelTree(schema, resolver),
    () => {
      const text = exampleText(schema, resolver, mediaType, explicitExample);
      const pre = h('pre', {
        class: 'qv-code qv-example',
        tabindex: onPick ? '0' : undefined,
        title: onPick ? t('Click to set as parameter value') : undefined,
        'data-sw-translate': true,
      });
      highlightInto(
        pre,
        text,
        /xml/.test(mediaType) ? 'xml' : /json/.test(mediaType) || !text.startsWith('<') ? 'json' : 'plain',
      );
      if (onPick) {
        pre.addEventListener('click', () => onPick(text));
        pre.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            onPick(text);
          }
        });
      }
      return pre;
    },
  ];
  const select = (index: number, focus = false) => {
    tabs.forEach((tab, i) => {
      tab.setAttribute('aria-selected', String(i === index));
      tab.tabIndex = i === index ? 0 : -1;
      panels[i].hidden = i !== index;
      if (i === index && !panels[i].childElementCount) panels[i].append(build[i]());
    });
    if (focus) tabs[index].focus();
  };
  ['Model', 'Model Schema'].forEach((label, i) => {
    const tab = h(
      'button',
      {
        type: 'button',
        role: 'tab',
        id: `${id}-tab${i}`,
        'aria-controls': `${id}-panel${i}`,
        class: 'qv-tab',
        'data-sw-translate': true,
      },
      t(label),
    );
    tab.addEventListener('click', () => select(i));
    tab.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') select(1 - i, true);
    });
    tabs.push(tab);
    list.append(tab);
    panels.push(
      h('div', { role: 'tabpanel', id: `${id}-panel${i}`, 'aria-labelledby': `${id}-tab${i}`, class: 'qv-tabpanel' }),
    );
  });
  box.append(list, ...panels);
  select(initial === 'model' ? 0 : 1);
  return box;
}
