// One operation: a heading that toggles, and a body built on first expand (instant for any
// description size). The body follows 2.x's layout; try-it lives at its end.
import type { ApiModel, Callback, Link, Operation, Parameter, Schema } from '../normalize/model.js';
import type { ClientAuthorizations } from '../auth.js';
import type { ResolvedOptions } from '../options.js';
import { effectiveSecurity } from '../auth.js';
import { t } from '../i18n.js';
import { markdown } from '../markdown.js';
import { buildRequest, isEmpty, send, type Value } from '../tryit.js';
import { h, tr, uid } from './dom.js';
import type { ParamInput } from './inputs.js';
import { bodyEditor } from './body.js';
import { flag, paramRow } from './params.js';
import { renderOutcome } from './response.js';
import { schemaTabs, typeLabel } from './schema.js';

export interface RenderContext {
  model: ApiModel;
  /** A preview of a description still arriving: bodies need the rest (its components) first. */
  pending?: boolean;
  options: ResolvedOptions;
  auth: ClientAuthorizations;
  schemeNames: Set<string>;
  /** Called when an operation opens or closes (deep links). */
  onToggle(op: Operation, open: boolean): void;
  /** Element ids of operations shown inside another (callbacks) start with their parent's. */
  idScope?: string;
}

export interface OperationView {
  op: Operation;
  element: HTMLLIElement;
  toggle(open?: boolean): void;
  isOpen(): boolean;
  /** Builds the body now (docExpansion "full" does this in idle time). */
  ensureBody(): void;
}

export function domId(op: Operation, scope = op.tag) {
  return `operation-${scope}-${op.id}`.replace(/[^A-Za-z0-9_-]/g, '_');
}

export function renderOperation(op: Operation, ctx: RenderContext): OperationView {
  const id = domId(op, ctx.idScope);
  const bodyId = `${id}-content`;
  const head = h(
    'button',
    { type: 'button', class: 'qv-op-head', 'aria-expanded': 'false', 'aria-controls': bodyId },
    h('span', { class: 'qv-method' }, op.method.toUpperCase()),
    h('span', { class: op.deprecated ? 'qv-path qv-deprecated' : 'qv-path' }, op.path),
    h('span', { class: 'qv-summary' }, op.summary ?? ''),
  );
  const locks = securityNames(op, ctx);
  if (locks.length) {
    head.append(
      h(
        'span',
        {
          class: 'qv-lock',
          title: `${t('Authorization')}: ${locks.join(', ')}`,
          'aria-label': `${t('Authorization')}: ${locks.join(', ')}`,
        },
        '🔒',
      ),
    );
  }
  const body = h('div', { class: 'qv-op-body', id: bodyId, hidden: true });
  const element = h(
    'li',
    { class: `qv-op qv-${op.method}`, id, 'data-op-id': op.id },
    h('h3', { class: 'qv-op-title' }, head),
    body,
  );
  let built = false;
  const ensureBody = () => {
    if (built) return;
    built = true;
    // The page is rendered again when the rest arrives, and this operation opened with its body.
    body.append(ctx.pending ? tr('Loading…', 'p', { class: 'qv-muted', role: 'status' }) : operationBody(op, ctx));
  };
  const view: OperationView = {
    op,
    element,
    ensureBody,
    isOpen: () => !body.hidden,
    toggle(open = body.hidden) {
      if (open) ensureBody();
      body.hidden = !open;
      head.setAttribute('aria-expanded', String(open));
      element.classList.toggle('qv-open', open);
    },
  };
  head.addEventListener('click', () => {
    view.toggle();
    ctx.onToggle(op, view.isOpen());
  });
  return view;
}

function securityNames(op: Operation, ctx: RenderContext): string[] {
  const security = effectiveSecurity(op, ctx.model.security);
  return security ? [...new Set(security.flatMap((alt) => Object.keys(alt)))] : [];
}

/**
 * The Accept choices: for 3.x `*\/*` first (the default, as Swagger UI 5 sends until the reader
 * picks a type: a 3.x response lists the types it may have, not one the server must be asked for),
 * then the response media types; for 2.0 and 1.x `produces`, the first chosen, as 2.2.10 did.
 */
function acceptChoices(op: Operation, model: ApiModel): string[] {
  if (!/^3\./.test(model.specVersion)) return op.produces;
  return ['*/*', ...op.produces.filter((type) => type !== '*/*')];
}

function successResponse(op: Operation) {
  return (
    op.responses.find((r) => /^2/.test(r.code) && r.contents.length) ??
    op.responses.find((r) => r.code === 'default' && r.contents.length)
  );
}

function operationBody(op: Operation, ctx: RenderContext): DocumentFragment {
  const { model, options } = ctx;
  const resolver = model.resolver;
  const out = document.createDocumentFragment();
  if (op.deprecated) out.append(tr('Warning: Deprecated', 'p', { class: 'qv-warning', role: 'note' }));
  if (op.sentByApi) out.append(tr('Requests the API sends (shown, not tried).', 'p', { class: 'qv-muted' }));
  if (op.description) {
    out.append(tr('Implementation Notes', 'h4'), h('div', { class: 'qv-markdown' }, markdown(op.description)));
  }
  const locks = securityNames(op, ctx);
  if (locks.length) {
    out.append(h('p', { class: 'qv-security' }, tr('Authorization', 'strong'), `: ${locks.join(', ')}`));
  }

  // Response class and the Accept select.
  let accept: HTMLSelectElement | undefined;
  const success = successResponse(op);
  if (success) {
    const content = success.contents[0];
    out.append(h('h4', null, tr('Response Class'), ` (${t('Status')} ${success.code})`));
    if (success.description) out.append(h('div', { class: 'qv-markdown' }, markdown(success.description)));
    out.append(schemaTabs(content.schema, resolver, options.defaultModelRendering, content.type, content.example));
  }
  if (op.produces.length) {
    const id = uid('qv-accept');
    accept = h(
      'select',
      { id, class: 'qv-accept' },
      acceptChoices(op, model).map((type) => h('option', { value: type }, type)),
    );
    out.append(
      h(
        'div',
        { class: 'qv-field' },
        h('label', { for: id, 'data-sw-translate': true }, t('Response Content Type')),
        ' ',
        accept,
      ),
    );
  }
  if (success?.headers.length) out.append(headersTable(success.headers, ctx));

  // Parameters table.
  const canSubmit = options.supportedSubmitMethods.includes(op.method) && !op.sentByApi;
  const inputs = new Map<Parameter, ParamInput>();
  const rows: HTMLTableRowElement[] = [];
  for (const param of op.parameters) {
    if (param.in === 'body' || param.in === 'formData') continue; // the body editor shows them
    const row = paramRow(param, ctx, canSubmit);
    if (row.input) inputs.set(param, row.input);
    rows.push(row.row);
  }
  const body = bodyEditor(op, ctx, canSubmit);
  if (body) rows.push(...body.rows);
  if (rows.length) {
    out.append(
      tr('Parameters', 'h4'),
      h(
        'table',
        { class: 'qv-table qv-params' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Parameter', 'Value', 'Description', 'Parameter Type', 'Data Type'].map((c) =>
              tr(c, 'th', { scope: 'col' }),
            ),
          ),
        ),
        h('tbody', null, rows),
      ),
    );
  }

  // Response messages.
  const messages = op.responses.filter((r) => r !== success);
  if (messages.length) {
    out.append(
      tr('Response Messages', 'h4'),
      h(
        'table',
        { class: 'qv-table qv-messages' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['HTTP Status Code', 'Reason', 'Response Model', 'Headers'].map((c) => tr(c, 'th', { scope: 'col' })),
          ),
        ),
        h(
          'tbody',
          null,
          messages.map((r) =>
            h(
              'tr',
              null,
              h('td', null, r.code),
              h('td', { class: 'qv-markdown' }, markdown(r.description)),
              h('td', null, r.contents[0]?.schema ? lazyModel(r.contents[0].schema, r.contents[0].type, ctx) : ''),
              h('td', null, r.headers.length ? headersTable(r.headers, ctx) : ''),
            ),
          ),
        ),
      ),
    );
  }

  const links = op.responses.flatMap((r) => (r.links ?? []).map((link) => ({ code: r.code, link })));
  if (links.length) out.append(tr('Links', 'h4'), linksTable(links, ctx));
  if (op.callbacks) {
    out.append(
      tr('Callbacks', 'h4'),
      ...op.callbacks.map((callback) => callbackList(callback, domId(op, ctx.idScope), ctx)),
    );
  }

  // Try it out.
  const result = h('div', { class: 'qv-result', hidden: true, 'aria-live': 'polite' });
  if (canSubmit) {
    const submit = h('button', { type: 'button', class: 'qv-submit', 'data-sw-translate': true }, t('Try it out!'));
    const hide = h(
      'button',
      { type: 'button', class: 'qv-link qv-hide-response', hidden: true, 'data-sw-translate': true },
      t('Hide Response'),
    );
    const status = h('span', { class: 'qv-status', role: 'status' });
    hide.addEventListener('click', () => {
      result.hidden = true;
      hide.hidden = true;
    });
    submit.addEventListener('click', async () => {
      const values = new Map<Parameter, Value>();
      const missing: HTMLElement[] = [];
      for (const [param, input] of inputs) {
        const value = input.read();
        values.set(param, value);
        flag(input.control, param.required && isEmpty(value), missing);
      }
      const requestBody = body?.read(missing);
      if (missing.length) {
        status.textContent = t('Please fill in the required fields.');
        missing[0].focus();
        return;
      }
      status.textContent = t('Sending request…');
      submit.disabled = true;
      const server = op.servers[0] ?? model.servers[0] ?? '';
      const request = buildRequest(
        {
          op,
          server,
          values,
          accept: accept?.value,
          body: requestBody,
        },
        (pending) => ctx.auth.apply(pending, effectiveSecurity(op, model.security), ctx.schemeNames),
      );
      try {
        const outcome = await send(request);
        renderOutcome(result, request, outcome, options.showRequestHeaders, options.highlightSizeThreshold);
        status.textContent = outcome.networkError ? t('Request failed.') : `${t('Response Code')}: ${outcome.status}`;
      } finally {
        submit.disabled = false;
      }
      result.hidden = false;
      hide.hidden = false;
    });
    out.append(h('div', { class: 'qv-actions' }, submit, ' ', hide, ' ', status));
  }
  out.append(result);
  return out;
}

/** Where a link leads: the operation named by operationId, or by an operationRef into this description's paths. */
function linkTarget(link: Link, model: ApiModel): Operation | undefined {
  const all = model.tags.flatMap((tag) => tag.operations);
  if (link.operationId) return all.find((op) => op.operationId === link.operationId);
  const ref = /^#\/paths\/([^/]+)\/([a-z]+)$/.exec(link.operationRef ?? '');
  if (!ref) return undefined;
  const path = decodeURIComponent(ref[1]).replace(/~1/g, '/').replace(/~0/g, '~');
  return all.find((op) => op.path === path && op.method === ref[2]);
}

function linksTable(links: { code: string; link: Link }[], ctx: RenderContext) {
  return h(
    'table',
    { class: 'qv-table qv-links' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['HTTP Status Code', 'Link', 'Operation', 'Parameters', 'Description'].map((c) =>
          tr(c, 'th', { scope: 'col' }),
        ),
      ),
    ),
    h(
      'tbody',
      null,
      links.map(({ code, link }) => {
        const target = linkTarget(link, ctx.model);
        const values =
          link.requestBody === undefined ? link.parameters : [...link.parameters, ['body', link.requestBody]];
        return h(
          'tr',
          null,
          h('td', null, code),
          h('td', null, link.name),
          h(
            'td',
            null,
            target
              ? h(
                  'a',
                  {
                    class: 'qv-link-target',
                    href: `#!/${encodeURIComponent(target.tag)}/${encodeURIComponent(target.id)}`,
                  },
                  `${target.method.toUpperCase()} ${target.path}`,
                )
              : (link.operationId ?? link.operationRef ?? ''),
          ),
          h(
            'td',
            null,
            values.length
              ? h(
                  'ul',
                  { class: 'qv-link-params' },
                  values.map(([name, value]) => h('li', null, h('code', null, name), ': ', h('code', null, value))),
                )
              : '',
          ),
          h('td', { class: 'qv-markdown' }, markdown(link.description, true)),
        );
      }),
    ),
  );
}

/** A callback's operations, shown (not tried) like any other, inside the operation that registers them. */
function callbackList(callback: Callback, parentId: string, ctx: RenderContext) {
  const inner: RenderContext = { ...ctx, idScope: `${parentId}-${callback.name}`, onToggle: () => {} };
  return h(
    'div',
    { class: 'qv-callback' },
    h('h5', null, callback.name),
    h(
      'ul',
      { class: 'qv-ops', 'aria-label': callback.name },
      callback.operations.map((op) => renderOperation(op, inner).element),
    ),
  );
}

function lazyModel(schema: Schema, mediaType: string, ctx: RenderContext) {
  const label = typeLabel(schema, ctx.model.resolver) || t('Model');
  const details = h('details', { class: 'qv-nested' }, h('summary', null, label));
  details.addEventListener('toggle', () => {
    if (details.open && details.children.length === 1) {
      details.append(schemaTabs(schema, ctx.model.resolver, ctx.options.defaultModelRendering, mediaType));
    }
  });
  return details;
}

function headersTable(headers: { name: string; description?: string; schema?: Schema }[], ctx: RenderContext) {
  return h(
    'table',
    { class: 'qv-table qv-headers' },
    h('caption', { 'data-sw-translate': true }, t('Headers')),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['Header', 'Description', 'Type'].map((c) => tr(c, 'th', { scope: 'col' })),
      ),
    ),
    h(
      'tbody',
      null,
      headers.map((hd) =>
        h(
          'tr',
          null,
          h('td', null, hd.name),
          h('td', { class: 'qv-markdown' }, markdown(hd.description, true)),
          h('td', null, typeLabel(hd.schema, ctx.model.resolver)),
        ),
      ),
    ),
  );
}
