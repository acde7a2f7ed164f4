// Fetching and parsing descriptions: JSON or YAML, plus every remote document their $refs name.
import { parse as parseYaml } from 'yaml';
import { externalRefs, Resolver } from './refs.js';
import { t } from './i18n.js';
import { EXTERNAL_REF, StreamingJson } from './stream.js';
import { StreamingYaml } from './stream-yaml.js';
import { yieldToPage } from './tasks.js';

export interface FetchOptions {
  /** Headers and query parameters from the configured authorizations. */
  headers: Record<string, string>;
  query: [string, string][];
}

export class LoadError extends Error {}

const ACCEPT = 'application/json, application/yaml;q=0.9, */*;q=0.8';
/** Bytes scanned between two looks at what has been read (stream.ts). */
const SLICE = 64 * 1024;
/** Reading yields to the page's other tasks after this long. */
const SLICE_MS = 8;

const statusError = (url: string, status: number) =>
  new LoadError(`${t("Can't read swagger JSON from")} ${url} (${t('server returned')} ${status})`);
const networkError = (url: string) =>
  new LoadError(
    `${t("Can't read from server. It may not have the appropriate access-control-origin settings.")} (${url})`,
  );

export function withQuery(url: string, query: [string, string][]): string {
  if (!query.length) return url;
  const encoded = query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  return url + (url.includes('?') ? '&' : '?') + encoded;
}

/**
 * Reads a description. XMLHttpRequest rather than fetch: for multi-megabyte bodies Chromium
 * hands responseText over about twice as fast as fetch().text() (bench/README.md).
 */
export function fetchText(url: string, options: FetchOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('GET', withQuery(url, options.query));
    xhr.setRequestHeader('Accept', ACCEPT);
    for (const [name, value] of Object.entries(options.headers)) xhr.setRequestHeader(name, value);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.responseText);
      else reject(statusError(url, xhr.status));
    };
    xhr.onerror = () => reject(networkError(url));
    xhr.send();
  });
}

export function parseDocument(text: string, source: string): unknown {
  const trimmed = text.trimStart();
  try {
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) return JSON.parse(trimmed);
    return parseYaml(text, { maxAliasCount: 1000 });
  } catch (error) {
    throw new LoadError(`${t('Unable to read api')} ${source}: ${(error as Error).message}`);
  }
}

export interface StreamOptions {
  /**
   * Called while a JSON description arrives, each time more path items have been read (or all), with the
   * root object so far (see stream.ts); reading goes on when the returned promise settles.
   */
  partial?(root: Record<string, unknown>, pathsDone: boolean): void | Promise<void>;
  signal?: AbortSignal;
}

/**
 * Reads the main description as it arrives (fetch's body stream; stream.ts), so that its first
 * operations can be shown before the rest has been read. Returns the parsed document and whether
 * it may refer to other documents (a cheap text test that saves walking a large document).
 */
async function streamDocument(url: string, options: FetchOptions, stream: StreamOptions) {
  const headers = new Headers({ Accept: ACCEPT });
  for (const [name, value] of Object.entries(options.headers)) headers.append(name, value);
  let response: Response;
  try {
    response = await fetch(withQuery(url, options.query), { headers, signal: stream.signal });
  } catch (error) {
    throw stream.signal?.aborted ? error : networkError(url);
  }
  if (!response.ok) throw statusError(url, response.status);
  // JSON is UTF-8; a server that names another charset gets its text decoded as XHR would.
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(response.headers.get('Content-Type') ?? '')?.[1] ?? 'utf-8';
  const utf8 = /^utf-?8$/i.test(charset);
  const expected = Number(response.headers.get('Content-Length')) || 0;
  let reader: StreamingJson | StreamingYaml | undefined;
  const body = response.body?.getReader();
  // A connection lost halfway is reported as one never made.
  const read = async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    try {
      return body ? await body.read() : { done: true, value: undefined };
    } catch (error) {
      throw stream.signal?.aborted ? error : networkError(url);
    }
  };
  let slice = performance.now();
  for (let next = await read(); !next.done; next = await read()) {
    const chunk = next.value;
    reader ??= readerFor(chunk, utf8, expected);
    for (let at = 0; at < chunk.length;) {
      // Chunks come in up to 2 MB: scanned in slices, the first operations show after the first.
      const end = reader.scanning() ? Math.min(at + SLICE, chunk.length) : chunk.length;
      reader.push(chunk.subarray(at, end));
      at = end;
      if (reader.progressed() && !reader.whole) await stream.partial?.(reader.root, reader.pathsDone);
      // Data already received resolves read() at once: without yielding every few ms, reading
      // it all would be one long task that holds back frames and input.
      if (performance.now() - slice > SLICE_MS) {
        await yieldToPage();
        slice = performance.now();
      }
    }
  }
  reader ??= new StreamingJson(utf8, 0); // an empty body
  // YAML pieces serve the previews only: the document itself is one parse of the whole text, since
  // a text the whole parse refuses can still read as pieces (property tests found `   ---` under
  // `paths`, a stray quote or `#`), and the reader must show that error, not a document.
  const doc = reader instanceof StreamingYaml ? undefined : reader.finish();
  if (doc) return { doc, external: reader.externalRefs };
  const bytes = reader.bytes();
  let text: string;
  try {
    text = new TextDecoder(utf8 ? 'utf-8' : charset).decode(bytes);
  } catch {
    text = new TextDecoder().decode(bytes); // a charset TextDecoder does not know
  }
  return { doc: parseDocument(text, url), external: EXTERNAL_REF.test(text) };
}

/**
 * The reader for a description whose first bytes are `chunk`: JSON when it starts with `{` (or
 * is not UTF-8: then the bytes are only collected), YAML (stream-yaml.ts) when it starts with
 * anything else but `[`.
 */
function readerFor(chunk: Uint8Array, utf8: boolean, expected: number): StreamingJson | StreamingYaml {
  let i = chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
  while (i < chunk.length && (chunk[i] === 0x20 || (chunk[i] >= 0x09 && chunk[i] <= 0x0d))) i++;
  const yaml = utf8 && i < chunk.length && chunk[i] !== 0x7b && chunk[i] !== 0x5b;
  return yaml ? new StreamingYaml() : new StreamingJson(utf8, expected);
}

/** Loads the main document and, transitively, every document referenced by it. */
export async function loadDocument(url: string, options: FetchOptions, stream: StreamOptions = {}): Promise<Resolver> {
  const { doc, external } = await streamDocument(url, options, stream);
  const resolver = new Resolver(url, doc);
  if (external) await loadReferenced(resolver, externalRefs(doc, url, false), options);
  return resolver;
}

export async function resolverForObject(doc: unknown, baseUrl: string, options: FetchOptions): Promise<Resolver> {
  const resolver = new Resolver(baseUrl, doc);
  await loadReferenced(resolver, externalRefs(doc, baseUrl, false), options);
  return resolver;
}

async function loadReferenced(resolver: Resolver, pending: string[], options: FetchOptions) {
  const queue = [...pending];
  let loaded = 0;
  while (queue.length && loaded < 200) {
    const next = queue.shift()!;
    if (resolver.hasDocument(next)) continue;
    loaded++;
    try {
      const doc = parseDocument(await fetchText(next, options), next);
      resolver.addDocument(next, doc);
      queue.push(...externalRefs(doc, next, true));
    } catch {
      // A missing remote document leaves its references shown as unresolved, not a failed page.
      resolver.addDocument(next, undefined);
    }
  }
}
