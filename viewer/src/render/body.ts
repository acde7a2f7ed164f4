// The request body of an operation: every media type the description offers for it, in its
// order, in a select with the first chosen. Form types (multipart, URL-encoded) are one row per
// field; other types (JSON, XML, text) a text box, the schema's example one click away (or
// written there by the JSON editor when `jsonEditor` is on). A oneOf/anyOf schema gets a select
// of its alternatives, in forms and bodies alike. What is sent is what the chosen type says.
import { entries, record } from '../data.js';
import { t } from '../i18n.js';
import { schemaForm } from '../jsoneditor.js';
import { markdown } from '../markdown.js';
import { text as textOf } from '../normalize/common.js';
import { isFormType, type MediaContent, type Operation, type Parameter } from '../normalize/model.js';
import { alternativesOf, resolved } from '../schemas.js';
import { isEmpty, type RequestInput, type Value } from '../tryit.js';
import { h, uid } from './dom.js';
import type { ParamInput } from './inputs.js';
import type { RenderContext } from './operation.js';
import { flag, paramRow } from './params.js';
import { exampleOfChoice, exampleText, propertiesOf, schemaTabs, typeLabel } from './schema.js';

export interface BodyEditor {
  /** Rows for the parameters table: the body (text box and media-type select), then form fields. */
  rows: HTMLTableRowElement[];
  /** What the chosen media type sends; missing required values are flagged into `missing`. */
  read(missing: HTMLElement[]): RequestInput['body'];
}

interface Field {
  param: Parameter;
  row: HTMLTableRowElement;
  input?: ParamInput;
}

/** The fields of one alternative of a form schema (a schema without oneOf/anyOf has one). */
interface Variant {
  fields: Field[];
}

interface FormView {
  variants: Variant[];
  /** The select of the alternative, with its row; absent for one variant. */
  choice?: { row: HTMLTableRowElement; select: HTMLSelectElement };
}

export function bodyEditor(op: Operation, ctx: RenderContext, canSubmit: boolean): BodyEditor | undefined {
  const body = op.requestBody;
  if (!body || !body.contents.length) return undefined;
  const rows: HTMLTableRowElement[] = [];
  // 2.0's formData parameters are the fields of each form type `consumes` lists: one set of rows.
  const formParams = op.parameters.filter((p) => p.in === 'formData');
  let shared: Variant[] | undefined;
  const forms = new Map<string, FormView>();
  for (const content of body.contents) {
    if (!isFormType(content.type) || forms.has(content.type)) continue;
    let view: FormView;
    if (formParams.length) {
      const fresh = !shared;
      shared ??= [{ fields: formParams.map((param) => field(param, ctx, canSubmit)) }];
      view = { variants: shared };
      if (fresh) rows.push(...shared[0].fields.map((f) => f.row));
    } else {
      view = formView(content, ctx, canSubmit);
      if (view.choice) rows.push(view.choice.row);
      for (const variant of view.variants) rows.push(...variant.fields.map((f) => f.row));
    }
    forms.set(content.type, view);
  }
  const onlyForm = body.contents.length === 1 && forms.size === 1;
  const box = onlyForm ? undefined : textBody(op, ctx, canSubmit);
  if (box) rows.unshift(box.row);
  const currentType = () => box?.type() ?? body.contents[0].type;

  const sync = () => {
    const shown = new Set<HTMLTableRowElement>();
    const form = forms.get(currentType());
    if (form) {
      if (form.choice) shown.add(form.choice.row);
      const chosen = form.variants[form.choice?.select.selectedIndex ?? 0];
      for (const f of chosen?.fields ?? []) shown.add(f.row);
    }
    for (const view of forms.values()) {
      if (view.choice) view.choice.row.hidden = !shown.has(view.choice.row);
      for (const variant of view.variants) for (const f of variant.fields) f.row.hidden = !shown.has(f.row);
    }
    box?.showText(!form);
  };
  box?.onTypeChange(sync);
  for (const view of forms.values()) view.choice?.select.addEventListener('change', sync);
  sync();

  return {
    rows,
    read(missing) {
      const type = currentType();
      const form = forms.get(type);
      if (form) {
        const variant = form.variants[form.choice?.select.selectedIndex ?? 0];
        const fields: [string, Value][] = [];
        for (const f of variant?.fields ?? []) {
          if (!f.input) continue;
          const value = f.input.read();
          flag(f.input.control, f.param.required && isEmpty(value), missing);
          fields.push([f.param.name, value]);
        }
        return { contentType: type, fields };
      }
      if (!box) return undefined;
      flag(box.text, body.required && !box.text.value.trim(), missing);
      return { contentType: type, text: box.text.value };
    },
  };
}

function field(param: Parameter, ctx: RenderContext, canSubmit: boolean): Field {
  const { row, input } = paramRow(param, ctx, canSubmit);
  return { param, row, input };
}

/** A 3.x form body: one row per property (allOf parts merged), per alternative of a oneOf/anyOf. */
function formView(content: MediaContent, ctx: RenderContext, canSubmit: boolean): FormView {
  const resolver = ctx.model.resolver;
  const s = resolved(content.schema, resolver);
  const alternatives = alternativesOf(s);
  const fieldsOf = (parts: unknown[]): Field[] => {
    const properties = new Map<string, unknown>();
    const required = new Set<string>();
    for (const part of parts) {
      const read = propertiesOf(record(part), resolver);
      for (const [name, prop] of entries(read.properties)) properties.set(name, prop);
      for (const name of read.required) required.add(name);
    }
    return [...properties].map(([name, prop]) =>
      field(
        {
          name,
          in: 'formData',
          required: required.has(name),
          description: textOf(resolver.object(prop)?.description),
          schema: record(prop),
        },
        ctx,
        canSubmit,
      ),
    );
  };
  if (!alternatives?.length) return { variants: [{ fields: fieldsOf([s]) }] };
  // The schema's own properties (and allOf) go with each alternative's.
  const variants = alternatives.map((alternative) => ({ fields: fieldsOf([s, resolved(alternative, resolver)]) }));
  const select = alternativeSelect(alternatives, ctx);
  const row = h(
    'tr',
    { class: 'qv-alternative' },
    h('td', { class: 'qv-param-name' }, h('label', { for: select.id }, t(s.oneOf ? 'One of' : 'Any of'))),
    h('td', null, select),
    h('td', null, ''),
    h('td', null, 'formData'),
    h('td', null, h('span', { class: 'qv-type' }, typeLabel(s, resolver))),
  );
  return { variants, choice: { row, select } };
}

function alternativeSelect(alternatives: readonly unknown[], ctx: RenderContext): HTMLSelectElement {
  const resolver = ctx.model.resolver;
  return h(
    'select',
    { id: uid('qv-alt'), class: 'qv-alternative-select' },
    alternatives.map((alternative, index) =>
      h('option', { value: String(index) }, typeLabel(alternative, resolver) || `${index + 1}`),
    ),
  );
}

interface TextBody {
  row: HTMLTableRowElement;
  text: HTMLTextAreaElement;
  type(): string;
  onTypeChange(listener: () => void): void;
  /** Shows the text box (and its alternative select and editor), or hides them for a form type. */
  showText(shown: boolean): void;
}

/** The body row: text box, media-type select, and the chosen type's model and example. */
function textBody(op: Operation, ctx: RenderContext, canSubmit: boolean): TextBody {
  const resolver = ctx.model.resolver;
  const body = op.requestBody!;
  const id = uid('qv-body');
  const text = h('textarea', {
    id,
    class: 'qv-body-input',
    rows: '8',
    'aria-label': `${t('body')}${body.required ? ` (${t('required')})` : ''}`,
    'aria-required': body.required ? 'true' : undefined,
    readonly: !canSubmit,
  });
  const typeId = uid('qv-ctype');
  const typeSelect = h(
    'select',
    { id: typeId, class: 'qv-content-type' },
    body.contents.map((c) => h('option', { value: c.type }, c.type)),
  );
  const current = () => body.contents[typeSelect.selectedIndex] ?? body.contents[0];
  // The text the viewer last wrote into the box: replaced when the type or alternative changes,
  // unlike what the reader typed.
  let written = '';
  const write = (value: string) => {
    text.value = written = value;
  };
  const fill = (value: string) => {
    if (!text.value.trim()) write(value);
  };
  const typeCell = h('td', null);
  const extras = h('div', { class: 'qv-body-extras' });
  let choice = 0;
  const exampleFor = (c: MediaContent) =>
    exampleText(
      c.schema,
      resolver,
      c.type,
      c.example !== undefined ? c.example : choice ? exampleOfChoice(c.schema, choice, resolver) : undefined,
    );
  const drawTabs = () => {
    const c = current();
    typeCell.textContent = '';
    typeCell.append(
      schemaTabs(
        c.schema,
        resolver,
        ctx.options.defaultModelRendering,
        c.type,
        c.example,
        canSubmit ? fill : undefined,
      ),
    );
  };
  const drawExtras = () => {
    extras.textContent = '';
    const c = current();
    if (isFormType(c.type)) return;
    const alternatives = alternativesOf(resolved(c.schema, resolver));
    const chosenSchema = () => (alternatives?.length ? alternatives[choice] : c.schema);
    const editor = h('div');
    const drawEditor = () => {
      editor.textContent = '';
      if (!canSubmit || !ctx.options.jsonEditor || !/json/i.test(c.type) || !c.schema) return;
      const initial = c.example !== undefined ? c.example : exampleOfChoice(c.schema, choice, resolver);
      editor.append(
        schemaForm(chosenSchema(), resolver, ctx.options.booleanValues, initial, (value) => {
          write(value === undefined ? '' : JSON.stringify(value, null, 2));
        }),
      );
      write(exampleFor(c));
    };
    if (alternatives?.length && canSubmit) {
      const select = alternativeSelect(alternatives, ctx);
      select.selectedIndex = Math.min(choice, alternatives.length - 1);
      select.addEventListener('change', () => {
        choice = select.selectedIndex;
        if (text.value && text.value === written) write(exampleFor(c));
        drawEditor();
      });
      const label = t(resolved(c.schema, resolver).oneOf ? 'One of' : 'Any of');
      extras.append(h('div', { class: 'qv-field' }, h('label', { for: select.id }, label), ' ', select));
    }
    extras.append(editor);
    drawEditor();
  };
  const listeners: (() => void)[] = [];
  typeSelect.addEventListener('change', () => {
    choice = 0;
    const before = text.value;
    drawTabs();
    drawExtras();
    // The example the viewer wrote follows the type; what the reader typed stays.
    if (before && before === written && !isFormType(current().type)) write(exampleFor(current()));
    for (const listener of listeners) listener();
  });
  drawTabs();
  drawExtras();
  const textPart = h('div', { class: 'qv-body-text' }, extras, text);
  const valueCell = h(
    'td',
    null,
    textPart,
    h(
      'div',
      { class: 'qv-field' },
      h('label', { for: typeId, 'data-sw-translate': true }, t('Parameter content type:')),
      ' ',
      typeSelect,
    ),
  );
  const row = h(
    'tr',
    { class: body.required ? 'qv-required' : undefined },
    h(
      'td',
      { class: 'qv-param-name' },
      h('label', { for: id }, 'body'),
      body.required ? h('span', { class: 'qv-sr' }, ` (${t('required')})`) : '',
    ),
    valueCell,
    h('td', { class: 'qv-markdown' }, markdown(body.description, true)),
    h('td', null, 'body'),
    typeCell,
  );
  return {
    row,
    text,
    type: () => current().type,
    onTypeChange: (listener) => listeners.push(listener),
    showText(shown) {
      textPart.hidden = !shown;
    },
  };
}
