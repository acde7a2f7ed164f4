// Syntax highlighting of JSON and XML bodies without freezing: the text appears at once, then
// blocks of lines are coloured in time slices (a few ms each), so a multi-megabyte response stays
// scrollable while it colours.
// `threshold` is highlightSizeThreshold: larger bodies are shown as plain text.
import { nextTask } from './tasks.js';

const JSON_TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
const XML_TOKEN = /(<!--[\s\S]*?-->)|(<\/?[A-Za-z_][^\s/>]*)([^>]*?)(\/?>)/g;

export type Language = 'json' | 'xml' | 'plain';

export function highlightInto(
  target: HTMLElement,
  source: string,
  language: Language,
  threshold?: number,
): Promise<void> {
  target.textContent = '';
  if (language === 'plain' || (typeof threshold === 'number' && source.length >= threshold)) {
    target.textContent = source;
    return Promise.resolve();
  }
  target.classList.add('qv-highlighted');
  // The text is shown at once in blocks of lines; each block is then coloured in place. Blocks
  // are separate boxes, so colouring one re-lays out that block only, never the whole body.
  const lines = source.split('\n');
  const blocks: HTMLElement[] = [];
  for (let i = 0; i < lines.length; i += BLOCK_LINES) {
    const block = document.createElement('div');
    block.className = 'hl-block';
    block.textContent = lines.slice(i, i + BLOCK_LINES).join('\n') + (i + BLOCK_LINES < lines.length ? '\n' : '');
    blocks.push(block);
  }
  target.append(...blocks);
  const pattern = new RegExp(language === 'json' ? JSON_TOKEN : XML_TOKEN);
  let index = 0;
  return new Promise((resolve) => {
    const step = () => {
      const start = performance.now();
      while (index < blocks.length && performance.now() - start < 8) colour(blocks[index++], pattern, language);
      if (index < blocks.length) nextTask(step);
      else resolve();
    };
    step();
  });
}

const BLOCK_LINES = 100;

function colour(block: HTMLElement, pattern: RegExp, language: Language) {
  const text = block.textContent ?? '';
  const fragment = document.createDocumentFragment();
  let position = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match.index > position) fragment.appendChild(document.createTextNode(text.slice(position, match.index)));
    appendToken(fragment, match, language);
    position = pattern.lastIndex;
    if (match[0].length === 0) pattern.lastIndex++;
  }
  if (position < text.length) fragment.appendChild(document.createTextNode(text.slice(position)));
  block.replaceChildren(fragment);
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
