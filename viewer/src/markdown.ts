// Markdown from descriptions → sanitized DOM. Descriptions are hostile: marked makes HTML, and
// DOMPurify keeps only inert markup (no scripts, handlers, styles, forms or javascript: links).
import DOMPurify from 'dompurify';
import { marked } from 'marked';

let hooked = false;

function purifier() {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A' && node.getAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
  }
  return DOMPurify;
}

// Text without any markdown or HTML syntax is shown as a text node: most one-line descriptions.
const PLAIN = /^[^<>&*_`[\]!#|~\\\n\r:=+-]*$/;

export function markdown(source: string | undefined, inline = false): DocumentFragment {
  const fragment = document.createDocumentFragment();
  if (!source) return fragment;
  if (PLAIN.test(String(source)) && !/^\s*\d+[.)]\s/.test(String(source))) {
    fragment.append(
      inline ? String(source) : Object.assign(document.createElement('p'), { textContent: String(source) }),
    );
    return fragment;
  }
  const html = inline
    ? (marked.parseInline(String(source), { async: false }) as string)
    : (marked.parse(String(source), { async: false, gfm: true }) as string);
  return purifier().sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
    FORBID_ATTR: ['style', 'id', 'name'],
    ALLOW_DATA_ATTR: false,
  }) as DocumentFragment;
}

/**
 * Runs marked and DOMPurify once on a small sample, in idle time after a description has loaded:
 * their first run compiles their code and patterns (~10 ms), which the first operation the
 * reader opens would otherwise wait for.
 */
export function warmUpMarkdown() {
  const run = () => void markdown('*warm* <b>up</b>\n\n- [x](https://example.com)');
  if (typeof requestIdleCallback === 'function') requestIdleCallback(run, { timeout: 1000 });
  else setTimeout(run, 100);
}
