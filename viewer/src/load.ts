// Fetching and parsing descriptions: JSON or YAML, plus every remote document their $refs name.
import { parse as parseYaml } from 'yaml';
import { externalRefs, Resolver } from './refs.js';
import { t } from './i18n.js';

export interface FetchOptions {
  /** Headers and query parameters from the configured authorizations. */
  headers: Record<string, string>;
  query: [string, string][];
}

export class LoadError extends Error {}

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
    xhr.setRequestHeader('Accept', 'application/json, application/yaml;q=0.9, */*;q=0.8');
    for (const [name, value] of Object.entries(options.headers)) xhr.setRequestHeader(name, value);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.responseText);
      else reject(new LoadError(`${t("Can't read swagger JSON from")} ${url} (${t('server returned')} ${xhr.status})`));
    };
    xhr.onerror = () =>
      reject(
        new LoadError(
          `${t("Can't read from server. It may not have the appropriate access-control-origin settings.")} (${url})`,
        ),
      );
    xhr.send();
  });
}

export function parseDocument(text: string, source: string): any {
  const trimmed = text.trimStart();
  try {
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) return JSON.parse(trimmed);
    return parseYaml(text, { maxAliasCount: 1000 });
  } catch (error) {
    throw new LoadError(`${t('Unable to read api')} ${source}: ${(error as Error).message}`);
  }
}

// A cheap text test saves walking a large document when it has no reference to another file.
const EXTERNAL_REF = /\$ref['"]?\s*:\s*['"]?(?!#)[^\s'"]/;

/** Loads the main document and, transitively, every document referenced by it. */
export async function loadDocument(url: string, options: FetchOptions): Promise<Resolver> {
  const text = await fetchText(url, options);
  const doc = parseDocument(text, url);
  const resolver = new Resolver(url, doc);
  if (EXTERNAL_REF.test(text)) await loadReferenced(resolver, externalRefs(doc, url, false), options);
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
