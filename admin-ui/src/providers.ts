// Editing the upstream providers and their models through Routstr's endpoints:
// /admin/api/upstream-providers (list, create, update, delete), /{id}/models (list, add or update,
// delete) and /admin/api/provider-types for the kinds a provider may be.
import { api, get, reason } from './api.js';
import { field, num, rows, text } from './data.js';
import { fill, h, labelled, status, table } from './dom.js';
import { count } from './format.js';
import { input, load, loadInto } from './panel.js';

type Row = Record<string, unknown>;

/** A button that asks again before it acts (no dialog: the question replaces it). */
function confirmButton(label: string, question: string, act: () => Promise<unknown>): HTMLElement {
  const wrap = h('span', { class: 'confirm' });
  const start = h('button', { type: 'button', class: 'danger' }, label);
  const ask = () => {
    const yes = h('button', { type: 'button', class: 'danger' }, `Yes, ${label.toLowerCase()}`);
    const no = h('button', { type: 'button' }, 'Cancel');
    yes.addEventListener('click', () => void act());
    no.addEventListener('click', () => fill(wrap, start));
    fill(wrap, h('span', {}, question), ' ', yes, ' ', no);
  };
  start.addEventListener('click', ask);
  fill(wrap, start);
  return wrap;
}

const float = (value: string): number | null => (value.trim() === '' ? null : Number(value));

export function renderProviders(root: HTMLElement) {
  const message = h('div', { class: 'message', 'aria-live': 'polite' });
  const list = h('div', { class: 'results' });
  const editor = h('div', { class: 'editor' });
  let types: Row[] = [];

  const tell = (kind: 'ok' | 'error', text: string) => fill(message, status(kind, text));
  /** Runs a change; says how it went and shows the list again. True when it was made. */
  async function change(what: string, act: () => Promise<unknown>): Promise<boolean> {
    try {
      await act();
    } catch (error) {
      tell('error', `${what.replace(/\.$/, '')} failed: ${reason(error)}`);
      return false;
    }
    tell('ok', what);
    fill(editor);
    await show();
    return true;
  }

  function providerForm(existing: Row | null) {
    const id = existing ? text(field(existing, 'id')) : null;
    const typeNames = types.map((t) => text(field(t, 'id')));
    const current = existing ? text(field(existing, 'provider_type')) : (typeNames[0] ?? 'openai');
    const type =
      typeNames.length > 0
        ? h(
            'select',
            { name: 'provider_type' },
            ...[...new Set([...typeNames, current])].map((name) => {
              const t = types.find((candidate) => text(field(candidate, 'id')) === name);
              return h('option', { value: name }, t ? text(field(t, 'name')) : name);
            }),
          )
        : input('provider_type', { required: true });
    type.value = current;
    const baseUrl = input('base_url', { type: 'url', required: true, size: 40 });
    baseUrl.value = existing ? text(field(existing, 'base_url')) : '';
    const fillDefault = () => {
      const t = types.find((candidate) => text(field(candidate, 'id')) === type.value);
      const url = field(t, 'default_base_url');
      if (!existing && typeof url === 'string') baseUrl.value = url;
    };
    type.addEventListener('change', fillDefault);
    if (!existing) fillDefault();
    const apiKey = input('api_key', {
      type: 'password',
      autocomplete: 'off',
      size: 30,
      placeholder: existing ? 'unchanged' : '',
      required: !existing,
    });
    const apiVersion = input('api_version', { size: 12 });
    apiVersion.value = existing && field(existing, 'api_version') ? text(field(existing, 'api_version')) : '';
    // Browsers compile a pattern with the v flag, which refuses an unescaped '-' in a class.
    const slug = input('slug', { size: 16, pattern: '[a-z0-9][a-z0-9\\-]*' });
    slug.value = existing && field(existing, 'slug') ? text(field(existing, 'slug')) : '';
    const fee = input('provider_fee', { type: 'number', step: '0.001', min: '0', size: 8 });
    fee.value = String(existing ? (num(field(existing, 'provider_fee')) ?? 1.01) : 1.01);
    const enabled = input('enabled', { type: 'checkbox' });
    enabled.checked = existing ? field(existing, 'enabled') !== false : true;
    const form = h(
      'form',
      { class: 'edit', id: existing ? `provider-form-${id}` : 'provider-form-new' },
      h('h3', {}, existing ? `Edit provider ${id}` : 'Add a provider'),
      labelled('Type', type),
      labelled('Base URL', baseUrl),
      labelled('API key', apiKey),
      labelled('API version', apiVersion),
      labelled('Slug', slug),
      labelled('Fee factor', fee),
      labelled('Enabled', enabled),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, existing ? 'Save' : 'Add provider')),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const body: Row = {
        provider_type: type.value,
        base_url: baseUrl.value.trim(),
        api_version: apiVersion.value.trim() || null,
        enabled: enabled.checked,
        provider_fee: float(fee.value) ?? 1.01,
      };
      if (slug.value.trim()) body.slug = slug.value.trim();
      if (apiKey.value) body.api_key = apiKey.value;
      void change(existing ? `Provider ${id} saved.` : 'Provider added.', () =>
        existing
          ? api('PATCH', `/admin/api/upstream-providers/${id}`, body)
          : api('POST', '/admin/api/upstream-providers', body),
      );
    });
    fill(editor, form);
    type.focus();
  }

  async function models(provider: Row) {
    const id = text(field(provider, 'id'));
    const base = `/admin/api/upstream-providers/${encodeURIComponent(id)}/models`;
    const box = h('div', { class: 'models', id: `models-${id}` });
    /** A change of the models: shown again once made. */
    const changeModels = async (what: string, act: () => Promise<unknown>) => {
      if (await change(what, act)) await models(provider);
    };
    fill(editor, box);
    await load(box, `The models of provider ${id}`, async () => {
      const data = await get(base);
      const list = rows(field(data, 'db_models'));
      const remote = rows(field(data, 'remote_models'));
      const price = (m: Row, name: string) => text(field(field(m, 'pricing'), name));
      const modelId = input('id', { required: true, size: 28 });
      const name = input('name', { size: 24 });
      const prompt = input('prompt', { type: 'number', step: 'any', min: '0', size: 12 });
      const completion = input('completion', { type: 'number', step: 'any', min: '0', size: 12 });
      const context = input('context_length', { type: 'number', min: '0', step: '1', size: 10 });
      const forwarded = input('forwarded_model_id', { size: 24 });
      const enabled = input('enabled', { type: 'checkbox' });
      enabled.checked = true;
      const heading = h('h4', {}, 'Add a model');
      /** Puts a stored model in the form: saved under the same id, it replaces that model. */
      const edit = (m: Row) => {
        const pricing = field(m, 'pricing');
        const value = (v: unknown) => (v === null || v === undefined ? '' : String(v));
        modelId.value = text(field(m, 'id'));
        name.value = value(field(m, 'name'));
        prompt.value = value(num(field(pricing, 'prompt')));
        completion.value = value(num(field(pricing, 'completion')));
        context.value = value(num(field(m, 'context_length')));
        forwarded.value = value(field(m, 'forwarded_model_id'));
        enabled.checked = field(m, 'enabled') !== false;
        heading.textContent = `Edit model ${modelId.value}`;
        name.focus();
      };
      const form = h(
        'form',
        { class: 'edit', id: `model-form-${id}` },
        heading,
        labelled('Model id', modelId),
        labelled('Name', name),
        labelled('Prompt price (USD per token)', prompt),
        labelled('Completion price (USD per token)', completion),
        labelled('Context length', context),
        labelled('Upstream model id', forwarded),
        labelled('Enabled', enabled),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save model')),
      );
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        const body = {
          id: modelId.value.trim(),
          name: name.value.trim() || modelId.value.trim(),
          description: '',
          created: Math.floor(Date.now() / 1000),
          context_length: Number(context.value || 0),
          architecture: {
            modality: 'text->text',
            input_modalities: ['text'],
            output_modalities: ['text'],
            tokenizer: '',
            instruct_type: null,
          },
          pricing: { prompt: float(prompt.value) ?? 0, completion: float(completion.value) ?? 0, request: 0 },
          enabled: enabled.checked,
          forwarded_model_id: forwarded.value.trim() || null,
        };
        void changeModels(`Model ${body.id} saved.`, () => api('POST', base, body));
      });
      return [
        h('h3', {}, `Models of provider ${id} (${text(field(provider, 'base_url'))})`),
        table(
          ['Model', 'Name', 'Enabled', 'Prompt', 'Completion', 'Upstream id', ''],
          list.map((m) => {
            const mid = text(field(m, 'id'));
            const editButton = h('button', { type: 'button', 'data-edit-model': mid }, 'Edit');
            editButton.addEventListener('click', () => edit(m));
            return [
              h('code', {}, mid),
              text(field(m, 'name')),
              field(m, 'enabled') === false ? 'no' : 'yes',
              price(m, 'prompt'),
              price(m, 'completion'),
              text(field(m, 'forwarded_model_id')),
              h(
                'span',
                { class: 'row-actions' },
                editButton,
                ' ',
                confirmButton('Delete', `Delete ${mid}?`, () =>
                  changeModels(`Model ${mid} deleted.`, () => api('DELETE', `${base}/${encodeURIComponent(mid)}`)),
                ),
              ),
            ];
          }),
          'No model of this provider is stored here.',
        ),
        remote.length ? h('p', { class: 'muted' }, `${count(remote.length)} more models offered by the provider.`) : '',
        form,
      ].filter((node): node is HTMLElement => node !== '');
    });
  }

  const show = () =>
    loadInto(root, list, 'The providers', async () => {
      const [providers, kinds] = await Promise.all([
        get('/admin/api/upstream-providers'),
        get('/admin/api/provider-types').catch(() => []),
      ]);
      types = rows(kinds);
      const add = h('button', { type: 'button', id: 'provider-add' }, 'Add a provider');
      add.addEventListener('click', () => providerForm(null));
      return [
        table(
          ['#', 'Slug', 'Type', 'Base URL', 'Enabled', 'Fee', 'API key', ''],
          rows(providers).map((p) => {
            const id = text(field(p, 'id'));
            const edit = h('button', { type: 'button', 'data-edit': id }, 'Edit');
            edit.addEventListener('click', () => providerForm(p));
            const modelsButton = h('button', { type: 'button', 'data-models': id }, 'Models');
            modelsButton.addEventListener('click', () => void models(p));
            return [
              id,
              text(field(p, 'slug')),
              text(field(p, 'provider_type')),
              text(field(p, 'base_url')),
              field(p, 'enabled') === false ? 'no' : 'yes',
              text(field(p, 'provider_fee')),
              field(p, 'api_key') ? 'set' : '–',
              h(
                'span',
                { class: 'row-actions' },
                edit,
                ' ',
                modelsButton,
                ' ',
                confirmButton('Delete', `Delete provider ${id}?`, () =>
                  change(`Provider ${id} deleted.`, () =>
                    api('DELETE', `/admin/api/upstream-providers/${encodeURIComponent(id)}`),
                  ),
                ),
              ),
            ];
          }),
          'No provider is stored yet.',
          'data providers',
        ),
        add,
      ];
    });
  root.replaceChildren(message, list, editor);
  return show();
}
