// The one way the viewer builds DOM: elements with text nodes. Nothing from a description is
// ever assigned to innerHTML here; sanitized markdown is the only HTML (see markdown.ts).
import { t } from '../i18n.js';

export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined | ((event: Event) => void);

const URL_ATTRS = new Set(['href', 'src', 'action', 'formaction', 'xlink:href']);

/** http(s), mailto, blob and relative addresses; anything else (javascript:, data:…) becomes inert. */
export function safeUrl(url: string): string {
  const trimmed = String(url).trim();
  if (/^(https?:|mailto:|blob:)/i.test(trimmed)) return trimmed;
  if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed.replace(/[\u0000-\u001f\s]/g, ''))) return '#';
  return trimmed;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Record<string, AttrValue> | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (typeof value === 'function') el.addEventListener(key.replace(/^on/, ''), value);
      else if (value === true) el.setAttribute(key, '');
      else el.setAttribute(key, URL_ATTRS.has(key) ? safeUrl(String(value)) : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** A fixed viewer phrase: translated now, and marked so a 2.x page's translate() finds it. */
export function tr(
  phrase: string,
  tag: 'span' | 'strong' | 'label' | 'h2' | 'h4' | 'th' | 'div' | 'p' = 'span',
  attrs: Record<string, AttrValue> = {},
) {
  return h(tag, { ...attrs, 'data-sw-translate': true }, t(phrase));
}

let counter = 0;
export function uid(prefix: string) {
  return `${prefix}-${++counter}`;
}

/** Runs work in small slices between frames so long lists never freeze the page. */
export function inChunks<T>(items: T[], each: (item: T) => void, budgetMs = 12): Promise<void> {
  return new Promise((resolve) => {
    let index = 0;
    // Absent in Safari: looked up, not assumed.
    const idle = (globalThis as { requestIdleCallback?: (cb: () => void) => number }).requestIdleCallback;
    const step = () => {
      const start = performance.now();
      while (index < items.length && performance.now() - start < budgetMs) each(items[index++]);
      if (index < items.length) {
        if (idle) idle(step);
        else setTimeout(step, 0);
      } else resolve();
    };
    step();
  });
}
