// The node's settings (/admin/api/settings, Routstr's shape: one flat object): a form of every
// field, found by name; saving sends the changed fields alone (PATCH). Secrets ([REDACTED]) are
// shown as set or not and are changed elsewhere, as Routstr's API refuses them here.
import { api, get, reason } from './api.js';
import { field, isRecord } from './data.js';
import { fill, h, status } from './dom.js';
import { loadInto } from './panel.js';

const REDACTED = '[REDACTED]';
const SECRETS = new Set(['upstream_api_key', 'nsec', 'admin_password']);

type Read = () => { ok: true; value: unknown } | { ok: false; error: string };

/** A control for one setting and how to read its value back. */
function control(name: string, value: unknown): { element: HTMLElement; read: Read } | null {
  if (SECRETS.has(name) || value === REDACTED) return null;
  if (typeof value === 'boolean') {
    const box = h('input', { type: 'checkbox', name });
    box.checked = value;
    return { element: box, read: () => ({ ok: true, value: box.checked }) };
  }
  if (typeof value === 'number') {
    const number = h('input', { type: 'number', step: 'any', name });
    number.value = String(value);
    return {
      element: number,
      read: () => {
        const n = Number(number.value);
        return number.value.trim() !== '' && Number.isFinite(n)
          ? { ok: true, value: n }
          : { ok: false, error: 'not a number' };
      },
    };
  }
  if (typeof value === 'string' || value === null) {
    const line = h('input', { type: 'text', name, size: 48 });
    line.value = value ?? '';
    // A setting that was null stays null when left empty.
    return {
      element: line,
      read: () => ({ ok: true, value: value === null && line.value === '' ? null : line.value }),
    };
  }
  const json = h('textarea', { name, rows: 3, cols: 48, spellcheck: 'false' });
  json.value = JSON.stringify(value, null, 1);
  return {
    element: json,
    read: () => {
      try {
        return { ok: true, value: JSON.parse(json.value) as unknown };
      } catch {
        return { ok: false, error: 'not valid JSON' };
      }
    },
  };
}

export function renderSettings(root: HTMLElement) {
  const message = h('div', { class: 'message', 'aria-live': 'polite' });
  const body = h('div', { class: 'results' });
  const find = h('input', { type: 'search', name: 'find', placeholder: 'Find a setting', size: 30 });
  const show = () =>
    loadInto(root, body, 'The settings', async () => {
      const settings = await get('/admin/api/settings');
      if (!isRecord(settings)) throw new Error('the answer is not an object');
      const names = Object.keys(settings).sort();
      const reads = new Map<string, { read: Read; initial: string }>();
      const rowsOf = names.map((name) => {
        const value = field(settings, name);
        const made = control(name, value);
        const cell = made
          ? made.element
          : h('span', { class: 'muted' }, value ? 'set (changed through its own endpoint)' : 'not set');
        if (made) reads.set(name, { read: made.read, initial: JSON.stringify(value) });
        return h('tr', { 'data-setting': name }, h('th', {}, h('label', {}, name)), h('td', {}, cell));
      });
      const form = h(
        'form',
        { class: 'settings', id: 'settings-form' },
        h('table', { class: 'data settings' }, h('tbody', {}, ...rowsOf)),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save changes')),
      );
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        const changed: Record<string, unknown> = Object.create(null);
        const problems: string[] = [];
        for (const [name, { read, initial }] of reads) {
          const result = read();
          if (!result.ok) problems.push(`${name}: ${result.error}`);
          else if (JSON.stringify(result.value) !== initial) changed[name] = result.value;
        }
        if (problems.length) return void fill(message, status('error', problems.join('; ')));
        const count = Object.keys(changed).length;
        if (count === 0) return void fill(message, status('ok', 'Nothing changed.'));
        void api('PATCH', '/admin/api/settings', changed)
          .then(async () => {
            await show();
            fill(
              message,
              status('ok', `Saved ${count} setting${count === 1 ? '' : 's'}: ${Object.keys(changed).join(', ')}.`),
            );
          })
          .catch((error: unknown) => fill(message, status('error', `Saving failed: ${reason(error)}`)));
      });
      return [form];
    }).then(applyFind);
  function applyFind() {
    const wanted = find.value.trim().toLowerCase();
    for (const row of body.querySelectorAll<HTMLElement>('tr[data-setting]')) {
      row.hidden = wanted !== '' && !(row.dataset.setting ?? '').toLowerCase().includes(wanted);
    }
  }
  find.addEventListener('input', applyFind);
  root.replaceChildren(h('div', { class: 'filters' }, find), message, body);
  return show();
}
