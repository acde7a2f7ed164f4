// What the Swagger 2.0 and OpenAPI 3.x normalizers share: walking the operations, naming the schemas,
// grouping operations by tag, and assembling the model from the parts each version reads its own way.
import type { Resolver } from '../refs.js';
import type { ApiModel, Operation, Schema, SecurityRequirement, SecurityScheme, Tag } from './model.js';
import { HTTP_METHODS, operationKey } from './model.js';

/** An operation before it is listed under its tags. */
type UntaggedOperation = Omit<Operation, 'tag' | 'id'>;
/** What each version reads its own way from an operation object. */
export type OperationParts = Pick<
  Operation,
  'parameters' | 'requestBody' | 'responses' | 'produces' | 'servers' | 'callbacks'
>;

export function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : value == null ? undefined : String(value);
}

export function groupByTag(operations: Operation[], declared: { name: string; description?: string }[]): Tag[] {
  const tags = new Map<string, Tag>();
  for (const tag of declared) {
    if (tag && typeof tag.name === 'string') {
      tags.set(tag.name, { name: tag.name, description: text(tag.description), operations: [] });
    }
  }
  for (const op of operations) {
    if (!tags.has(op.tag)) tags.set(op.tag, { name: op.tag, operations: [] });
    tags.get(op.tag)!.operations.push(op);
  }
  return [...tags.values()].filter((tag) => tag.operations.length);
}

/** Gives each operation one tag per listed tag (2.x and 3.x list operations under each tag). */
function perTag(op: UntaggedOperation, tags: unknown, operationId: unknown, used: Set<string>): Operation[] {
  const names = Array.isArray(tags) && tags.length ? tags.filter((t) => typeof t === 'string') : ['default'];
  const baseId = typeof operationId === 'string' && operationId ? operationId : operationKey(op.method, op.path);
  let id = baseId;
  for (let n = 2; used.has(id); n++) id = `${baseId}_${n}`;
  used.add(id);
  return (names.length ? names : ['default']).map((tag) => ({ ...op, tag, id, operationId: text(operationId) }));
}

/**
 * Order of the methods within one path: 2.2.10 listed 2.0 (and converted 1.x) operations
 * alphabetically (its client walks a sorted method list); 3.x viewers keep the document's order.
 */
export type MethodOrder = 'alphabetical' | 'document';
const ALPHABETICAL: readonly string[] = [...HTTP_METHODS].sort();
const METHODS = new Set<string>(HTTP_METHODS);

function methodsOf(item: object, order: MethodOrder): readonly string[] {
  return order === 'alphabetical' ? ALPHABETICAL : Object.keys(item).filter((key) => METHODS.has(key));
}

/**
 * Every operation of `paths` (path items may be references), described by the version's own
 * `describe` and listed once per tag, with ids unique across the description.
 */
export function collectOperations(
  paths: unknown,
  resolver: Resolver,
  order: MethodOrder,
  describe: (raw: any, item: any) => OperationParts,
): Operation[] {
  const operations: Operation[] = [];
  const used = new Set<string>();
  for (const [path, rawItem] of Object.entries(paths && typeof paths === 'object' ? paths : {})) {
    const item = resolver.deref(rawItem);
    if (!item || typeof item !== 'object') continue;
    for (const method of methodsOf(item, order)) {
      const raw = item[method];
      if (!raw || typeof raw !== 'object') continue;
      const op: UntaggedOperation = {
        method,
        path,
        summary: text(raw.summary),
        description: text(raw.description),
        deprecated: raw.deprecated === true,
        security: security(raw.security),
        ...describe(raw, item),
      };
      operations.push(...perTag(op, raw.tags, raw.operationId, used));
    }
  }
  return operations;
}

/** The named models (definitions / components.schemas), each made known to the resolver by its name. */
export function namedSchemas(value: unknown, resolver: Resolver): Record<string, Schema> {
  const schemas = (value && typeof value === 'object' ? value : {}) as Record<string, Schema>;
  for (const [name, schema] of Object.entries(schemas)) {
    if (schema && typeof schema === 'object') resolver.nameSchema(schema, name);
  }
  return schemas;
}

/** Operation parameters override path-level ones with the same name and location. */
export function mergeParameters(shared: unknown, own: unknown, resolver: Resolver): any[] {
  const out = new Map<string, any>();
  for (const list of [shared, own]) {
    if (!Array.isArray(list)) continue;
    for (const raw of list) {
      const p = resolver.deref(raw);
      if (p && typeof p === 'object' && typeof p.name === 'string') out.set(`${p.in}:${p.name}`, p);
    }
  }
  return [...out.values()];
}

function security(value: unknown): SecurityRequirement[] | undefined {
  return Array.isArray(value) ? (value.filter((v) => v && typeof v === 'object') as SecurityRequirement[]) : undefined;
}

/** Absolute address of a server relative to the description (or page) address. */
export function absolute(url: string, base: string): string {
  try {
    return new URL(url, base).href.replace(/\/$/, '');
  } catch {
    return url.replace(/\/$/, '');
  }
}

/** The parts of the model each version reads its own way; the rest is read alike from the document. */
export interface VersionParts {
  specVersion: string;
  servers: string[];
  operations: Operation[];
  securitySchemes: Record<string, SecurityScheme>;
  schemas: Record<string, Schema>;
  resolver: Resolver;
}

/** The fields of the description's root that 2.0 and 3.x share. */
interface CommonRoot {
  info?: unknown;
  tags?: unknown;
  security?: unknown;
  externalDocs?: { url?: unknown; description?: unknown };
}

export function assembleModel(doc: CommonRoot, parts: VersionParts): ApiModel {
  return {
    specVersion: parts.specVersion,
    info: infoOf(doc.info),
    servers: parts.servers,
    tags: groupByTag(parts.operations, Array.isArray(doc.tags) ? doc.tags : []),
    securitySchemes: parts.securitySchemes,
    security: security(doc.security),
    schemas: parts.schemas,
    externalDocs: doc.externalDocs?.url
      ? { url: String(doc.externalDocs.url), description: text(doc.externalDocs.description) }
      : undefined,
    resolver: parts.resolver,
  };
}

function infoOf(info: any): ApiModel['info'] {
  const value = info && typeof info === 'object' ? info : {};
  return {
    title: text(value.title) ?? '',
    version: text(value.version) ?? '',
    description: text(value.description),
    termsOfService: text(value.termsOfService),
    contact:
      value.contact && typeof value.contact === 'object'
        ? { name: text(value.contact.name), url: text(value.contact.url), email: text(value.contact.email) }
        : undefined,
    license:
      value.license && typeof value.license === 'object'
        ? { name: text(value.license.name), url: text(value.license.url) }
        : undefined,
  };
}
