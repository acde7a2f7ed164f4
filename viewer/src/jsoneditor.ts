// jsonEditor: a form generated from the body schema. Each change rewrites the JSON body box, so
// the raw text stays the single source of what is sent.
import type { Schema } from './normalize/model.js';
import type { Resolver } from './refs.js';
import { t } from './i18n.js';
import { h, uid } from './render/dom.js';
import { exampleOf } from './render/schema.js';
import { table } from './own.js';
import { text } from './normalize/common.js';
import { allOfParts, alternativesOf, enumOf, nonNullType, propertiesIn, resolved } from './schemas.js';

const MAX_DEPTH = 6;

export function schemaForm(
  schema: unknown,
  resolver: Resolver,
  booleanValues: [string, string],
  initial: unknown,
  onChange: (value: unknown) => void,
): HTMLElement {
  const root = h('fieldset', { class: 'qv-json-editor' }, h('legend', { 'data-sw-translate': true }, t('Body editor')));
  let value = initial ?? exampleOf(schema, resolver);
  const field = build(
    schema,
    value,
    (next) => {
      value = next;
      onChange(value);
    },
    resolver,
    booleanValues,
    'body',
    0,
    new Set(),
  );
  root.append(field);
  return root;
}

function typeOf(s: Schema): string | undefined {
  if (Array.isArray(s.type)) return nonNullType(s);
  return text(s.type) ?? (s.properties || s.allOf ? 'object' : s.items ? 'array' : undefined);
}

function build(
  schema: unknown,
  value: unknown,
  set: (v: unknown) => void,
  resolver: Resolver,
  booleans: [string, string],
  label: string,
  depth: number,
  ancestors: Set<object>,
): HTMLElement {
  const s = resolved(schema, resolver);
  const id = uid('qv-je');
  const alternatives = alternativesOf(s);
  const type = alternatives ? typeOf(resolved(alternatives[0], resolver)) : typeOf(s);
  if (depth > MAX_DEPTH || ancestors.has(s)) return h('span', { class: 'qv-muted' }, `${label}: …`);

  if (type === 'object') {
    const inner = new Set(ancestors).add(s);
    // Property names are the description's: tables without a prototype keep `__proto__` a plain key.
    const given = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
    const obj = Object.assign(table<unknown>(), given);
    const props = table<unknown>();
    for (const part of [s, ...allOfParts(s).map((p) => resolved(p, resolver))]) {
      Object.assign(props, propertiesIn(part));
    }
    const box = h('fieldset', { class: 'qv-je-object' }, h('legend', null, label));
    for (const [name, prop] of Object.entries(props)) {
      box.append(
        build(
          prop,
          obj[name],
          (v) => {
            if (v === undefined || v === '') delete obj[name];
            else obj[name] = v;
            set({ ...obj });
          },
          resolver,
          booleans,
          name,
          depth + 1,
          inner,
        ),
      );
    }
    return box;
  }
  if (type === 'array') {
    const list: unknown[] = Array.isArray(value) ? [...value] : [];
    const box = h('fieldset', { class: 'qv-je-array' }, h('legend', null, label));
    const items = h('div');
    const redraw = () => {
      items.textContent = '';
      list.forEach((item, index) => {
        const remove = h(
          'button',
          {
            type: 'button',
            class: 'qv-link',
            'aria-label': `${t('Remove')} ${label} ${index + 1}`,
            'data-sw-translate': true,
          },
          t('Remove'),
        );
        remove.addEventListener('click', () => {
          list.splice(index, 1);
          set([...list]);
          redraw();
        });
        items.append(
          h(
            'div',
            { class: 'qv-je-item' },
            build(
              s.items ?? {},
              item,
              (v) => {
                list[index] = v;
                set([...list]);
              },
              resolver,
              booleans,
              `${label}[${index}]`,
              depth + 1,
              ancestors,
            ),
            remove,
          ),
        );
      });
    };
    const add = h('button', { type: 'button', class: 'qv-link', 'data-sw-translate': true }, t('Add item'));
    add.addEventListener('click', () => {
      list.push(exampleOf(s.items, resolver));
      set([...list]);
      redraw();
    });
    redraw();
    box.append(items, add);
    return box;
  }
  let control: HTMLInputElement | HTMLSelectElement;
  const values = enumOf(s) ?? [];
  if (type === 'boolean' || enumOf(s)) {
    const choices = type === 'boolean' ? booleans : values.map((v) => String(v));
    control = h(
      'select',
      { id },
      h('option', { value: '' }, ''),
      choices.map((c: string) => h('option', { value: c }, c)),
    );
    control.value =
      type === 'boolean'
        ? value === true
          ? booleans[0]
          : value === false
            ? booleans[1]
            : ''
        : value === undefined
          ? ''
          : String(value);
    control.addEventListener('change', () => {
      const v = control.value;
      if (type === 'boolean') set(v === '' ? undefined : v === booleans[0]);
      else set(v === '' ? undefined : values.find((e) => String(e) === v));
    });
  } else {
    control = h('input', { id, type: type === 'integer' || type === 'number' ? 'number' : 'text' });
    control.value = value === undefined || value === null ? '' : String(value);
    control.addEventListener('input', () => {
      const v = control.value;
      set(v === '' ? undefined : type === 'integer' || type === 'number' ? Number(v) : v);
    });
  }
  return h('div', { class: 'qv-je-field' }, h('label', { for: id }, label), control);
}
