// What the Swagger 2.0 and OpenAPI 3.x normalizers share: walking the operations, naming the schemas,
// grouping operations by tag, and assembling the model from the parts each version reads its own way.
import { asArray, entries, isRecord, record, type JsonObject } from '../data.js';
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

export function groupByTag(operations: Operation[], declared: unknown): Tag[] {
  const tags = new Map<string, Tag>();
  for (const tag of asArray(declared)) {
    if (isRecord(tag) && typeof tag.name === 'string') {
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
  describe: (raw: JsonObject, item: JsonObject) => OperationParts,
): Operation[] {
  const operations: Operation[] = [];
  const used = new Set<string>();
  for (const [path, rawItem] of entries(paths)) {
    const item = resolver.object(rawItem);
    if (!item) continue;
    for (const method of methodsOf(item, order)) {
      const raw = item[method];
      if (!isRecord(raw)) continue;
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
export function namedSchemas(value: unknown, resolver: Resolver): Map<string, Schema> {
  const schemas = new Map<string, Schema>();
  for (const [name, schema] of entries(value)) {
    if (isRecord(schema)) {
      resolver.nameSchema(schema, name);
      schemas.set(name, schema);
    }
  }
  return schemas;
}

/** Operation parameters override path-level ones with the same name and location. */
export function mergeParameters(shared: unknown, own: unknown, resolver: Resolver): JsonObject[] {
  const out = new Map<string, JsonObject>();
  for (const list of [shared, own]) {
    for (const raw of asArray(list)) {
      const p = resolver.object(raw);
      if (p && typeof p.name === 'string') out.set(`${String(p.in)}:${p.name}`, p);
    }
  }
  return [...out.values()];
}

function security(value: unknown): SecurityRequirement[] | undefined {
  if (!Array.isArray(value)) return undefined;
  // Scheme names are the description's: a Map-like table without a prototype per requirement.
  return value.filter(isRecord).map((alternative) => {
    const out: SecurityRequirement = Object.create(null);
    for (const [name, scopes] of Object.entries(alternative)) out[name] = asArray(scopes).map(String);
    return out;
  });
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
  schemas: Map<string, Schema>;
  resolver: Resolver;
}

/** The fields of the description's root that 2.0 and 3.x share: info, tags, security, externalDocs. */
export function assembleModel(doc: JsonObject, parts: VersionParts): ApiModel {
  const externalDocs = record(doc.externalDocs);
  return {
    specVersion: parts.specVersion,
    info: infoOf(doc.info),
    servers: parts.servers,
    tags: groupByTag(parts.operations, doc.tags),
    securitySchemes: parts.securitySchemes,
    security: security(doc.security),
    schemas: parts.schemas,
    externalDocs: externalDocs.url
      ? { url: String(externalDocs.url), description: text(externalDocs.description) }
      : undefined,
    resolver: parts.resolver,
  };
}

function infoOf(info: unknown): ApiModel['info'] {
  const value = record(info);
  const contact = value.contact;
  const license = value.license;
  return {
    title: text(value.title) ?? '',
    version: text(value.version) ?? '',
    description: text(value.description),
    termsOfService: text(value.termsOfService),
    contact: isRecord(contact)
      ? { name: text(contact.name), url: text(contact.url), email: text(contact.email) }
      : undefined,
    license: isRecord(license) ? { name: text(license.name), url: text(license.url) } : undefined,
  };
}
