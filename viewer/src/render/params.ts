// One row of the parameters table: name, input (when the operation can be tried), description,
// where it goes and its type. Also used for the fields of form bodies (body.ts).
import type { Parameter } from '../normalize/model.js';
import { t } from '../i18n.js';
import { markdown } from '../markdown.js';
import { enumOf, resolved } from '../schemas.js';
import { h, tr, uid } from './dom.js';
import { inputFor, type ParamInput } from './inputs.js';
import type { RenderContext } from './operation.js';
import { typeLabel } from './schema.js';

/** Marks a control whose required value is missing (and collects it to focus the first). */
export function flag(control: HTMLElement, invalid: boolean, missing: HTMLElement[]) {
  control.classList.toggle('qv-invalid', invalid);
  if (invalid) {
    control.setAttribute('aria-invalid', 'true');
    missing.push(control);
  } else control.removeAttribute('aria-invalid');
}

export function paramRow(
  param: Parameter,
  ctx: RenderContext,
  canSubmit: boolean,
): { row: HTMLTableRowElement; input?: ParamInput } {
  const resolver = ctx.model.resolver;
  const id = uid('qv-param');
  const input = canSubmit ? inputFor(param, resolver, ctx.options.booleanValues, id) : undefined;
  const s = resolved(param.schema, resolver);
  const shown = input
    ? input.element
    : h('span', { class: 'qv-readonly' }, s.default !== undefined ? String(s.default) : '');
  const row = h(
    'tr',
    { class: param.required ? 'qv-required' : undefined },
    h(
      'td',
      { class: 'qv-param-name' },
      input ? h('label', { for: id }, param.name) : param.name,
      param.required ? h('span', { class: 'qv-sr' }, ` (${t('required')})`) : '',
    ),
    h('td', null, shown),
    h(
      'td',
      { class: 'qv-markdown' },
      markdown(param.description, true),
      param.deprecated ? [' ', tr('(deprecated)', 'span', { class: 'qv-warning' })] : '',
    ),
    h('td', null, param.in),
    h(
      'td',
      null,
      h('span', { class: 'qv-type' }, typeLabel(param.schema, resolver)),
      enumOf(s) ? h('div', { class: 'qv-muted' }, enumOf(s)!.map(String).join(', ')) : '',
    ),
  );
  return { row, input };
}
