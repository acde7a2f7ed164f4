// OpenAPI 3.0 and 3.1 → internal model.
import { asArray, entries, isRecord, record, type JsonObject } from '../data.js';
import type { Resolver } from '../refs.js';
import type {
  ApiModel,
  Callback,
  Link,
  MediaContent,
  OAuthFlow,
  Operation,
  Parameter,
  Response,
  Schema,
  SecurityScheme,
} from './model.js';
import {
  absolute,
  assembleModel,
  collectOperations,
  groupByTag,
  mergeParameters,
  namedSchemas,
  text,
  type OperationParts,
} from './common.js';
import { apiKeyScheme, scopesOf, securitySchemesFrom } from './security.js';
import { hasOwn } from '../own.js';

export function normalizeOpenApi3(doc: JsonObject, resolver: Resolver): ApiModel {
  const specUrl = resolver.baseUrl;
  const servers = serversOf(doc.servers, specUrl) ?? [absolute('/', specUrl)];
  const components = record(doc.components);
  const schemas = namedSchemas(components.schemas, resolver);
  // Callbacks are read one level deep: a callback's own callbacks are not shown.
  const describe = (raw: JsonObject, item: JsonObject, nested = false): OperationParts => {
    const parameters = mergeParameters(item.parameters, raw.parameters, resolver).map((p) => parameterOf(p, resolver));
    const body = raw.requestBody ? resolver.object(raw.requestBody) : undefined;
    const responses = responsesOf(raw.responses, resolver);
    return {
      parameters,
      requestBody: body
        ? {
            required: body.required === true,
            description: text(body.description),
            contents: contentsOf(body.content, resolver),
          }
        : undefined,
      responses,
      produces: [...new Set(responses.flatMap((r) => r.contents.map((c) => c.type)))],
      servers: serversOf(raw.servers, specUrl) ?? serversOf(item.servers, specUrl) ?? servers,
      callbacks: nested ? undefined : callbacksOf(raw.callbacks, resolver, (r, i) => describe(r, i, true)),
    };
  };
  const operations = collectOperations(doc.paths, resolver, 'document', describe);
  const webhooks = sentByApi(collectOperations(doc.webhooks, resolver, 'document', describe), 'webhook');
  const model = assembleModel(doc, {
    specVersion: String(doc.openapi),
    servers,
    operations,
    securitySchemes: securitySchemesOf(components.securitySchemes, resolver),
    schemas,
    resolver,
  });
  return webhooks.length ? { ...model, webhooks: groupByTag(webhooks, doc.tags) } : model;
}

/**
 * Requests the API sends (webhooks, callbacks): shown, not tried. Their ids get a prefix so they
 * never equal an id of the paths (ids name DOM elements and deep links).
 */
function sentByApi(operations: Operation[], prefix: string): Operation[] {
  return operations.map((op) => ({ ...op, id: `${prefix}_${op.id}`, sentByApi: true }));
}

/** An operation's callbacks: name → {expression: path item}, each expression read like a path. */
function callbacksOf(
  raw: unknown,
  resolver: Resolver,
  describe: (raw: JsonObject, item: JsonObject) => OperationParts,
): Callback[] | undefined {
  if (!isRecord(raw)) return undefined;
  const out: Callback[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const expressions = resolver.object(value);
    if (!expressions) continue;
    // Listed once each, not once per tag: they are shown inside their operation.
    const seen = new Set<string>();
    const operations = collectOperations(expressions, resolver, 'document', describe).filter((op) => {
      const key = `${op.method} ${op.path}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (operations.length) out.push({ name, operations: sentByApi(operations, `callback_${name}`) });
  }
  return out.length ? out : undefined;
}

/** Server URLs with their variables set to the defaults, made absolute against the description. */
function serversOf(list: unknown, specUrl: string): string[] | undefined {
  const out: string[] = [];
  for (const server of asArray(list)) {
    if (!isRecord(server) || typeof server.url !== 'string') continue;
    const variables = record(server.variables);
    const url = server.url.replace(/\{([^}]+)\}/g, (_: string, name: string) =>
      String(hasOwn(variables, name) ? (record(variables[name]).default ?? '') : ''),
    );
    out.push(absolute(url, specUrl));
  }
  return out.length ? out : undefined;
}

const LOCATIONS = new Set<unknown>(['path', 'query', 'header', 'cookie']);

function parameterOf(p: JsonObject, resolver: Resolver): Parameter {
  const schema = isRecord(p.schema) ? p.schema : (record(entries(p.content)[0]?.[1]).schema ?? {});
  const resolved = resolver.object(schema);
  const style = p.style ?? (p.in === 'query' || p.in === 'cookie' ? 'form' : 'simple');
  const explode = p.explode ?? style === 'form';
  let collectionFormat: string | undefined;
  if (resolved?.type === 'array' || (Array.isArray(resolved?.type) && resolved.type.includes('array'))) {
    collectionFormat =
      style === 'form'
        ? explode
          ? 'multi'
          : 'csv'
        : style === 'spaceDelimited'
          ? 'ssv'
          : style === 'pipeDelimited'
            ? 'pipes'
            : 'csv';
  }
  return {
    name: String(p.name),
    in: LOCATIONS.has(p.in) ? (p.in as Parameter['in']) : 'query',
    required: p.in === 'path' || p.required === true,
    description: text(p.description),
    deprecated: p.deprecated === true,
    schema: isRecord(schema) ? schema : {},
    collectionFormat,
    example: p.example ?? firstExample(p.examples, resolver),
  };
}

function firstExample(examples: unknown, resolver: Resolver): unknown {
  const first = entries(examples)[0];
  return first === undefined ? undefined : resolver.object(first[1])?.value;
}

/** A media type object's schema when it is one (references stay references, resolved when shown). */
function schemaOf(value: unknown): Schema | undefined {
  return isRecord(value) ? value : undefined;
}

function contentsOf(content: unknown, resolver: Resolver): MediaContent[] {
  return entries(content).map(([type, raw]) => {
    const media = record(raw);
    return { type, schema: schemaOf(media.schema), example: media.example ?? firstExample(media.examples, resolver) };
  });
}

function responsesOf(responses: unknown, resolver: Resolver): Response[] {
  const out: Response[] = [];
  for (const [code, raw] of entries(responses)) {
    const r = resolver.object(raw);
    if (!r) continue;
    out.push({
      code,
      description: text(r.description) ?? '',
      contents: contentsOf(r.content, resolver),
      headers: entries(r.headers).map(([name, raw]) => {
        const h = resolver.object(raw);
        return { name, description: text(h?.description), schema: schemaOf(h?.schema) };
      }),
      links: linksOf(r.links, resolver),
    });
  }
  return out;
}

/** Expressions and values are shown as written; objects (a literal requestBody) as JSON. */
function written(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function linksOf(raw: unknown, resolver: Resolver): Link[] | undefined {
  if (!isRecord(raw)) return undefined;
  const out: Link[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const link = resolver.object(value);
    if (!link) continue;
    out.push({
      name,
      operationId: text(link.operationId),
      operationRef: text(link.operationRef),
      parameters: entries(link.parameters).map(([param, v]): [string, string] => [param, written(v)]),
      requestBody: link.requestBody === undefined ? undefined : written(link.requestBody),
      description: text(link.description),
    });
  }
  return out.length ? out : undefined;
}

function securitySchemesOf(defs: unknown, resolver: Resolver): Record<string, SecurityScheme> {
  return securitySchemesFrom(defs, readScheme, (raw) => resolver.deref(raw));
}

function readScheme(d: JsonObject, base: Pick<SecurityScheme, 'name' | 'description'>): SecurityScheme {
  const scheme = d.type === 'http' ? String(d.scheme).toLowerCase() : '';
  if (d.type === 'apiKey') return apiKeyScheme(d, base, ['query', 'cookie']);
  if (scheme === 'basic') return { ...base, type: 'basic' };
  if (scheme === 'bearer') return { ...base, type: 'bearer', bearerFormat: text(d.bearerFormat) };
  if (d.type === 'oauth2') {
    const flows: OAuthFlow[] = [];
    const declared = record(d.flows);
    for (const kind of ['authorizationCode', 'implicit', 'password', 'clientCredentials'] as const) {
      const f = hasOwn(declared, kind) ? declared[kind] : undefined;
      if (isRecord(f)) {
        flows.push({
          kind,
          authorizationUrl: text(f.authorizationUrl),
          tokenUrl: text(f.tokenUrl),
          scopes: scopesOf(f.scopes),
        });
      }
    }
    return { ...base, type: 'oauth2', flows };
  }
  if (d.type === 'openIdConnect') return { ...base, type: 'openIdConnect', openIdConnectUrl: text(d.openIdConnectUrl) };
  return { ...base, type: 'other' };
}
