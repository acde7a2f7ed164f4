// Building the page: every value from data goes in as text (textContent, attribute values through
// the DOM), never as markup.

type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | number | boolean | null | undefined>;

/** An element with attributes (false/null/undefined ones left out) and children (strings as text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces an element's content. */
export function fill(element: Element, ...children: Child[]): void {
  element.replaceChildren();
  append(element, ...children);
}

/** A table of `rows` (cells are text or nodes); `empty` when there are none. */
export function table(headers: string[], body: Child[][], empty: string, className = 'data'): HTMLElement {
  if (body.length === 0) return h('p', { class: 'muted empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: className },
      h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', {}, header)))),
      h('tbody', {}, ...body.map((cells) => h('tr', {}, ...cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}

/** A panel whose endpoint is missing or failed: says so, and which endpoint. */
export function unavailable(what: string, reason: string): HTMLElement {
  return h('p', { class: 'unavailable', role: 'status' }, `${what} is unavailable: ${reason}`);
}

/** A line that tells the outcome of a change (role=status, so it is announced). */
export function status(kind: 'ok' | 'error', message: string): HTMLElement {
  return h('p', { class: `status ${kind}`, role: 'status' }, message);
}

/** A labelled control. */
export function labelled(label: string, control: HTMLElement): HTMLLabelElement {
  return h('label', {}, h('span', {}, label), control);
}
