// A panel of the dashboard: a box the page reserves (data-panel) that a renderer fills from the
// operator API. A renderer that fails leaves the panel saying what is unavailable and why; the
// rest of the page goes on.
import { reason } from './api.js';
import { fill, h, unavailable } from './dom.js';

/** Fills the panel `root` with what `render` builds; on failure, an "unavailable" notice naming `what`. */
export const load = (root: HTMLElement, what: string, render: () => Promise<Node[]>) =>
  loadInto(root, root, what, render);

/**
 * Fills `into`, a part of the panel `root` (the list below the panel's own filters, kept across
 * loads), as `load` does. Either way the root tells the state of its latest load in data-state
 * (loading, ready, unavailable): a reader waits on one attribute per panel.
 */
export async function loadInto(
  root: HTMLElement,
  into: HTMLElement,
  what: string,
  render: () => Promise<Node[]>,
): Promise<void> {
  root.dataset.state = 'loading';
  root.setAttribute('aria-busy', 'true');
  try {
    const nodes = await render();
    fill(into, ...nodes);
    root.dataset.state = 'ready';
  } catch (error) {
    fill(into, unavailable(what, reason(error)));
    root.dataset.state = 'unavailable';
  } finally {
    root.removeAttribute('aria-busy');
  }
}

/** A form of filters: submitting it (or changing a select) calls `apply`. */
export function filterForm(controls: HTMLElement[], apply: () => void, button = 'Search'): HTMLFormElement {
  const form = h('form', { class: 'filters' }, ...controls, h('button', { type: 'submit' }, button));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  for (const select of form.querySelectorAll('select')) select.addEventListener('change', apply);
  return form;
}

/** A select of `options` ([value, label]); '' is "any". */
export function select(name: string, options: [string, string][], value = ''): HTMLSelectElement {
  const element = h('select', { name }, ...options.map(([v, label]) => h('option', { value: v }, label)));
  element.value = value;
  return element;
}

export const input = (name: string, attributes: Record<string, string | number | boolean> = {}) =>
  h('input', { name, ...attributes });
