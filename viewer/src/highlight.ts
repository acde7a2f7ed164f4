// Syntax highlighting of JSON and XML bodies without freezing: tokens are turned into spans in
// time slices (a few ms each), so a multi-megabyte response stays scrollable while it colours.
// `threshold` is highlightSizeThreshold: larger bodies are shown as plain text.

const JSON_TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
const XML_TOKEN = /(<!--[\s\S]*?-->)|(<\/?[A-Za-z_][^\s/>]*)([^>]*?)(\/?>)/g;

export type Language = 'json' | 'xml' | 'plain';

export function highlightInto(target: HTMLElement, source: string, language: Language, threshold?: number): Promise<void> {
  target.textContent = '';
  if (language === 'plain' || (typeof threshold === 'number' && source.length >= threshold)) {
    target.textContent = source;
    return Promise.resolve();
  }
  target.classList.add('qv-highlighted');
  const pattern = new RegExp(language === 'json' ? JSON_TOKEN : XML_TOKEN);
  let position = 0;
  return new Promise((resolve) => {
    const step = () => {
      const fragment = document.createDocumentFragment();
      const start = performance.now();
      let done = false;
      while (performance.now() - start < 8) {
        const match = pattern.exec(source);
        if (!match) {
          done = true;
          break;
        }
        if (match.index > position) fragment.appendChild(document.createTextNode(source.slice(position, match.index)));
        appendToken(fragment, match, language);
        position = pattern.lastIndex;
        if (match[0].length === 0) pattern.lastIndex++;
      }
      if (done && position < source.length) fragment.appendChild(document.createTextNode(source.slice(position)));
      target.appendChild(fragment);
      if (done) resolve();
      else setTimeout(step, 0);
    };
    step();
  });
}

function span(cls: string, text: string) {
  const el = document.createElement('span');
  el.className = cls;
  el.textContent = text;
  return el;
}

function appendToken(fragment: DocumentFragment, m: RegExpExecArray, language: Language) {
  if (language === 'json') {
    if (m[1] !== undefined) {
      fragment.appendChild(span(m[2] ? 'hl-key' : 'hl-string', m[1]));
      if (m[2]) fragment.appendChild(document.createTextNode(m[2]));
    } else if (m[3] !== undefined) fragment.appendChild(span('hl-number', m[3]));
    else fragment.appendChild(span('hl-literal', m[4]));
    return;
  }
  if (m[1] !== undefined) {
    fragment.appendChild(span('hl-comment', m[1]));
    return;
  }
  fragment.appendChild(span('hl-tag', m[2]));
  if (m[3]) fragment.appendChild(span('hl-attr', m[3]));
  fragment.appendChild(span('hl-tag', m[4]));
}

/** Indents XML one element per line (the 2.x response body did the same). */
export function formatXml(xml: string): string {
  const lines = xml.replace(/>\s*</g, '>\n<').split('\n');
  let depth = 0;
  return lines
    .map((line) => {
      if (/^<\//.test(line)) depth = Math.max(0, depth - 1);
      const out = '  '.repeat(depth) + line;
      if (/^<[^!?/][^>]*[^/]>$/.test(line) && !/<\/[^>]+>$/.test(line)) depth++;
      return out;
    })
    .join('\n');
}
