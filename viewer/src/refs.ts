import { isRecord, type JsonObject } from './data.js';
import { t } from './i18n.js';
import { hasOwn } from './own.js';

// Lazy $ref resolution over the main description and any remote documents it points to.
// Nothing is copied up front: `deref` follows a reference when the renderer reaches it, which
// keeps recursive schemas finite (the renderer stops at cycles) and large descriptions cheap.

export class Resolver {
  private docs = new Map<string, unknown>();
  private names = new WeakMap<object, string>();
  private cache = new Map<string, unknown>();

  /** @param baseUrl absolute address of the main description (page address for inline specs). */
  constructor(
    readonly baseUrl: string,
    readonly root: unknown,
  ) {
    this.docs.set(stripHash(baseUrl), root);
  }

  addDocument(url: string, doc: unknown) {
    this.docs.set(stripHash(url), doc);
  }

  hasDocument(url: string) {
    return this.docs.has(stripHash(url));
  }

  /** Follows $ref chains; sibling keywords of a $ref (3.1) are laid over the target. */
  deref(node: unknown, base = this.baseUrl): unknown {
    let current = node;
    for (let hops = 0; isRecord(current) && typeof current.$ref === 'string'; hops++) {
      const ref = current.$ref;
      if (hops > 32) return { description: `${t('unresolved $ref')}: ${String((node as JsonObject).$ref)}` };
      const target = this.lookup(ref, base);
      if (target === undefined) return { 'x-unresolved': ref, description: `${t('unresolved $ref')}: ${ref}` };
      const name = refName(ref);
      const { $ref: _ref, ...siblings } = current;
      if (Object.keys(siblings).length && target && typeof target === 'object') {
        // Spread copies every key as an own property (`merged[key] = …` would run `__proto__`'s setter).
        const merged: JsonObject = { ...target, ...siblings };
        if (name) this.names.set(merged, name);
        current = merged;
      } else {
        if (name && target && typeof target === 'object' && !this.names.has(target)) this.names.set(target, name);
        current = target;
      }
    }
    return current;
  }

  /** `deref`, when what it reaches is an object (a schema, parameter, response…); else undefined. */
  object(node: unknown, base = this.baseUrl): JsonObject | undefined {
    const value = this.deref(node, base);
    return isRecord(value) ? value : undefined;
  }

  /** The model name a resolved schema was reached by (e.g. "Pet"), if any. */
  nameOf(schema: unknown): string | undefined {
    return schema && typeof schema === 'object' ? this.names.get(schema) : undefined;
  }

  nameSchema(schema: object, name: string) {
    if (!this.names.has(schema)) this.names.set(schema, name);
  }

  lookup(ref: string, base = this.baseUrl): unknown {
    const key = base === this.baseUrl ? ref : `${base} ${ref}`;
    if (this.cache.has(key)) return this.cache.get(key);
    const found = this.find(ref, base);
    if (found !== undefined) this.cache.set(key, found);
    return found;
  }

  private find(ref: string, base: string): unknown {
    const hash = ref.indexOf('#');
    const docPart = hash === -1 ? ref : ref.slice(0, hash);
    const pointer = hash === -1 ? '' : ref.slice(hash + 1);
    let docUrl: string;
    try {
      docUrl = docPart ? new URL(docPart, base).href : stripHash(base);
    } catch {
      return undefined;
    }
    const doc = this.docs.get(stripHash(docUrl));
    if (doc === undefined) return undefined;
    return resolvePointer(doc, pointer);
  }
}

export function resolvePointer(doc: unknown, pointer: string): unknown {
  if (!pointer) return doc;
  let current: unknown = doc;
  for (const raw of pointer.replace(/^\//, '').split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (current === null || typeof current !== 'object' || !hasOwn(current, key)) return undefined; // not `constructor`
    current = (current as JsonObject)[key]; // arrays too: an index is an own property
  }
  return current;
}

export function refName(ref: string): string | undefined {
  const match = /#\/(?:definitions|components\/schemas|models)\/([^/]+)$/.exec(ref);
  return match ? decodeURIComponent(match[1]).replace(/~1/g, '/').replace(/~0/g, '~') : undefined;
}

export function stripHash(url: string) {
  const hash = url.indexOf('#');
  return hash === -1 ? url : url.slice(0, hash);
}

/**
 * Every document address a description refers to outside itself. Remote documents' own
 * references are rewritten to absolute ones so one base (the main document's) serves all.
 */
export function externalRefs(doc: unknown, docUrl: string, rewrite: boolean): string[] {
  const found = new Set<string>();
  const stack: unknown[] = [doc];
  while (stack.length) {
    const node = stack.pop();
    if (!node || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) if (item && typeof item === 'object') stack.push(item);
      continue;
    }
    const record = node as Record<string, unknown>;
    const ref = record.$ref;
    if (typeof ref === 'string') {
      const hash = ref.indexOf('#');
      const docPart = hash === -1 ? ref : ref.slice(0, hash);
      try {
        const absolute = new URL(docPart || docUrl, docUrl).href;
        if (docPart) found.add(stripHash(absolute));
        if (rewrite) record.$ref = stripHash(absolute) + (hash === -1 ? '' : ref.slice(hash));
      } catch {
        // an unusable address stays as written and shows as unresolved
      }
    }
    for (const value of Object.values(record)) if (value && typeof value === 'object') stack.push(value);
  }
  return [...found];
}
