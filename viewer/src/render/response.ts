// Shows what a try-it produced, the 2.x way: curl, request URL, request headers (optional),
// response body (JSON pretty, XML indented, HTML as text, images and audio inline, other binary
// as a download), response code and headers.
import { formatXml, highlightInto } from '../highlight.js';
import { t } from '../i18n.js';
import { curlOf, type BuiltRequest, type Outcome } from '../tryit.js';
import { h, tr } from './dom.js';

function section(title: string, ...content: (Node | string)[]) {
  return h('div', { class: 'qv-result-block' }, tr(title, 'h4'), ...content);
}

function headersText(headers: [string, string][]) {
  return headers.map(([k, v]) => `${k}: ${v}`).join('\n');
}

function filenameOf(outcome: Outcome): string {
  const disposition = outcome.headers.find(([k]) => k === 'content-disposition')?.[1] ?? '';
  const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
  return match ? decodeURIComponent(match[1]).replace(/[\\/]/g, '_') : 'download';
}

export function renderOutcome(
  target: HTMLElement,
  request: BuiltRequest,
  outcome: Outcome,
  showRequestHeaders: boolean,
  threshold: number | undefined,
) {
  target.textContent = '';
  target.append(section('Curl', h('pre', { class: 'qv-code qv-curl' }, curlOf(request))));
  target.append(section('Request URL', h('pre', { class: 'qv-code qv-request-url' }, request.url)));
  if (showRequestHeaders) {
    target.append(
      section(
        'Request Headers',
        h(
          'pre',
          { class: 'qv-code qv-request-headers' },
          headersText(Object.entries(request.headers)) || t('no content'),
        ),
      ),
    );
  }

  const body = h('div', { class: 'qv-response-body' });
  if (outcome.networkError) {
    body.append(h('pre', { class: 'qv-code qv-error', role: 'alert' }, outcome.networkError));
  } else if (outcome.blob) {
    const url = URL.createObjectURL(outcome.blob);
    if (/^image\//.test(outcome.contentType) && !/svg/.test(outcome.contentType)) {
      body.append(h('img', { src: url, alt: t('Response image'), class: 'qv-response-image' }));
    } else if (/^audio\//.test(outcome.contentType)) {
      body.append(h('audio', { src: url, controls: true, 'aria-label': t('Response audio') }));
    } else {
      body.append(
        h(
          'a',
          { href: url, download: filenameOf(outcome), class: 'qv-download', 'data-sw-translate': true },
          `${t('Download file')} (${outcome.blob.size} B)`,
        ),
      );
    }
  } else {
    const text = outcome.text ?? '';
    const pre = h('pre', { class: 'qv-code qv-response-text' });
    if (!text) pre.textContent = t('no content');
    else if (/json/i.test(outcome.contentType) || (!outcome.contentType && /^\s*[[{]/.test(text))) {
      let pretty = text;
      try {
        pretty = JSON.stringify(JSON.parse(text), null, 2);
      } catch {
        body.append(tr("can't parse JSON.  Raw result", 'p', { class: 'qv-muted' }));
      }
      highlightInto(pre, pretty, 'json', threshold);
    } else if (/xml/i.test(outcome.contentType)) highlightInto(pre, formatXml(text), 'xml', threshold);
    else pre.textContent = text; // HTML and everything else: shown as text, never parsed
    body.append(pre);
  }
  target.append(section('Response Body', body));
  target.append(section('Response Code', h('pre', { class: 'qv-code qv-response-code' }, String(outcome.status))));
  target.append(
    section(
      'Response Headers',
      h('pre', { class: 'qv-code qv-response-headers' }, headersText(outcome.headers) || t('no content')),
    ),
  );
}
