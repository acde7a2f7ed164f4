// One input per parameter, chosen by its schema the way 2.x did: selects for enums and booleans
// (with the configured booleanValues), a multi-select for enum arrays, a textarea with one value
// per line for other arrays, a file input for files, a password box for format password.
import type { Parameter, Schema } from '../normalize/model.js';
import type { Resolver } from '../refs.js';
import type { Value } from '../tryit.js';
import { t } from '../i18n.js';
import { h } from './dom.js';
import { text } from '../normalize/common.js';
import { enumOf, nonNullType, resolved } from '../schemas.js';

export interface ParamInput {
  element: HTMLElement;
  /** The focusable control (flagged when a required value is missing). */
  control: HTMLElement;
  read(): Value;
}

function typeOf(s: Schema): string | undefined {
  return Array.isArray(s.type) ? nonNullType(s) : text(s.type);
}

export function isFileSchema(s: Schema) {
  return (
    typeOf(s) === 'file' ||
    (typeOf(s) === 'string' && (s.format === 'binary' || s.contentMediaType === 'application/octet-stream'))
  );
}

function initialText(param: Parameter, s: Schema): string {
  const value = param.example ?? s.default ?? s.example;
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

export function inputFor(
  param: Parameter,
  resolver: Resolver,
  booleanValues: [string, string],
  id: string,
): ParamInput {
  const s = resolved(param.schema, resolver);
  const label = `${param.name}${param.required ? ` (${t('required')})` : ''}`;
  const common = {
    id,
    'aria-label': label,
    'aria-required': param.required ? 'true' : undefined,
    class: 'qv-input',
    name: param.name,
  };
  const type = typeOf(s);

  if (isFileSchema(s)) {
    const input = h('input', { ...common, type: 'file' });
    return { element: input, control: input, read: () => input.files?.[0] };
  }
  if (type === 'array') {
    const itemValues = enumOf(resolved(s.items, resolver));
    if (itemValues) {
      const select = h(
        'select',
        { ...common, multiple: true },
        itemValues.map((v) => h('option', { value: String(v) }, String(v))),
      );
      const defaults = Array.isArray(s.default) ? s.default.map(String) : [];
      for (const option of Array.from(select.options)) option.selected = defaults.includes(option.value);
      return { element: select, control: select, read: () => Array.from(select.selectedOptions).map((o) => o.value) };
    }
    const area = h('textarea', { ...common, rows: '3', placeholder: t('one value per line') });
    area.value = Array.isArray(s.default) ? s.default.join('\n') : '';
    return {
      element: area,
      control: area,
      read: () =>
        area.value
          .split('\n')
          .map((v) => v.trim())
          .filter(Boolean),
    };
  }
  const values = enumOf(s);
  if (type === 'boolean' || values) {
    const choices: string[] = type === 'boolean' ? booleanValues : (values ?? []).map((v) => String(v));
    const select = h('select', common);
    if (!param.required || type !== 'boolean') select.append(h('option', { value: '' }, ''));
    for (const choice of choices) select.append(h('option', { value: choice }, choice));
    const initial =
      s.default !== undefined ? (type === 'boolean' ? booleanValues[s.default ? 0 : 1] : String(s.default)) : '';
    select.value = initial;
    return { element: select, control: select, read: () => select.value };
  }
  const input = h('input', {
    ...common,
    type: s.format === 'password' ? 'password' : 'text',
    placeholder: param.required ? t('(required)') : undefined,
  });
  input.value = initialText(param, s);
  return { element: input, control: input, read: () => input.value };
}
