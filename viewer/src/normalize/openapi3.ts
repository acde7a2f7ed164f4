// OpenAPI 3.0 and 3.1 → internal model.
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
import { apiKeyScheme, securitySchemesFrom } from './security.js';

export function normalizeOpenApi3(doc: any, resolver: Resolver): ApiModel {
  const specUrl = resolver.baseUrl;
  const servers = serversOf(doc.servers, specUrl) ?? [absolute('/', specUrl)];
  const schemas = namedSchemas(doc.components?.schemas, resolver);
  // Callbacks are read one level deep: a callback's own callbacks are not shown.
  const describe = (raw: any, item: any, nested = false): OperationParts => {
    const parameters = mergeParameters(item.parameters, raw.parameters, resolver).map((p) => parameterOf(p, resolver));
    const body = raw.requestBody ? resolver.deref(raw.requestBody) : undefined;
    const responses = responsesOf(raw.responses, resolver);
    return {
      parameters,
      requestBody:
        body && typeof body === 'object'
          ? {
              required: body.required === true,
              description: text(body.description),
              contents: contentsOf(body.content),
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
    securitySchemes: securitySchemesOf(doc.components?.securitySchemes, resolver),
    schemas,
    resolver,
  });
  return webhooks.length
    ? { ...model, webhooks: groupByTag(webhooks, Array.isArray(doc.tags) ? doc.tags : []) }
    : model;
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
  describe: (raw: any, item: any) => OperationParts,
): Callback[] | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const out: Callback[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const expressions = resolver.deref(value);
    if (!expressions || typeof expressions !== 'object') continue;
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
  if (!Array.isArray(list) || !list.length) return undefined;
  const out = list
    .filter((s) => s && typeof s.url === 'string')
    .map((s) =>
      absolute(
        s.url.replace(/\{([^}]+)\}/g, (_: string, name: string) => String(s.variables?.[name]?.default ?? '')),
        specUrl,
      ),
    );
  return out.length ? out : undefined;
}

function parameterOf(p: any, resolver: Resolver): Parameter {
  const schema: Schema = p.schema ?? (p.content ? (Object.values<any>(p.content)[0]?.schema ?? {}) : {});
  const resolved = resolver.deref(schema);
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
    name: p.name,
    in: ['path', 'query', 'header', 'cookie'].includes(p.in) ? p.in : 'query',
    required: p.in === 'path' || p.required === true,
    description: text(p.description),
    deprecated: p.deprecated === true,
    schema,
    collectionFormat,
    example: p.example ?? firstExample(p.examples, resolver),
  };
}

function firstExample(examples: any, resolver: Resolver): unknown {
  if (!examples || typeof examples !== 'object') return undefined;
  const first = Object.values<any>(examples)[0];
  return first === undefined ? undefined : resolver.deref(first)?.value;
}

function contentsOf(content: any): MediaContent[] {
  if (!content || typeof content !== 'object') return [];
  return Object.entries<any>(content).map(([type, media]) => ({
    type,
    schema: media?.schema,
    example: media?.example ?? (media?.examples ? Object.values<any>(media.examples)[0]?.value : undefined),
  }));
}

function responsesOf(responses: any, resolver: Resolver): Response[] {
  const out: Response[] = [];
  for (const [code, raw] of Object.entries<any>(responses ?? {})) {
    const r = resolver.deref(raw);
    if (!r || typeof r !== 'object') continue;
    out.push({
      code,
      description: text(r.description) ?? '',
      contents: contentsOf(r.content),
      headers: Object.entries<any>(r.headers ?? {}).map(([name, raw]) => {
        const h = resolver.deref(raw);
        return { name, description: text(h?.description), schema: h?.schema };
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
  if (!raw || typeof raw !== 'object') return undefined;
  const out: Link[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const link = resolver.deref(value);
    if (!link || typeof link !== 'object') continue;
    out.push({
      name,
      operationId: text(link.operationId),
      operationRef: text(link.operationRef),
      parameters:
        link.parameters && typeof link.parameters === 'object'
          ? Object.entries(link.parameters).map(([param, v]): [string, string] => [param, written(v)])
          : [],
      requestBody: link.requestBody === undefined ? undefined : written(link.requestBody),
      description: text(link.description),
    });
  }
  return out.length ? out : undefined;
}

function securitySchemesOf(defs: any, resolver: Resolver): Record<string, SecurityScheme> {
  return securitySchemesFrom(defs, readScheme, (raw) => resolver.deref(raw));
}

function readScheme(d: any, base: Pick<SecurityScheme, 'name' | 'description'>): SecurityScheme {
  const scheme = d.type === 'http' ? String(d.scheme).toLowerCase() : '';
  if (d.type === 'apiKey') return apiKeyScheme(d, base, ['query', 'cookie']);
  if (scheme === 'basic') return { ...base, type: 'basic' };
  if (scheme === 'bearer') return { ...base, type: 'bearer', bearerFormat: text(d.bearerFormat) };
  if (d.type === 'oauth2') {
    const flows: OAuthFlow[] = [];
    for (const kind of ['authorizationCode', 'implicit', 'password', 'clientCredentials'] as const) {
      const f = d.flows?.[kind];
      if (f && typeof f === 'object') {
        flows.push({
          kind,
          authorizationUrl: text(f.authorizationUrl),
          tokenUrl: text(f.tokenUrl),
          scopes: f.scopes ?? {},
        });
      }
    }
    return { ...base, type: 'oauth2', flows };
  }
  if (d.type === 'openIdConnect') return { ...base, type: 'openIdConnect', openIdConnectUrl: text(d.openIdConnectUrl) };
  return { ...base, type: 'other' };
}
