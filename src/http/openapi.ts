// OpenAPI 3.1 documents generated from the same route schemas that validate requests.
// Each service's plugin gets a collector (an onRoute hook in its own scope), so every service
// describes exactly its own routes.
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { field, isRecord } from '../json-fields.js';

type JsonObject = Record<string, unknown>;

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

export interface OpenApiExtras {
  /** components.securitySchemes of the document. */
  securitySchemes?: Record<string, unknown>;
  tags?: { name: string; description?: string }[];
}

export class OpenApiCollector {
  private operations: { method: string; url: string; schema: FastifySchema }[] = [];

  constructor(
    readonly info: OpenApiInfo,
    private extras: OpenApiExtras = {},
  ) {}

  /** Installs the hook in the service's scope: call first thing in the service plugin. */
  attach(app: FastifyInstance) {
    app.addHook('onRoute', (route: RouteOptions) => {
      const schema: FastifySchema = route.schema ?? {};
      if (schema.hide) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (method === 'HEAD' && methods.length === 1 && route.exposeHeadRoute === undefined) continue;
        this.operations.push({ method: method.toLowerCase(), url: route.url, schema });
      }
    });
  }

  document(): JsonObject {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const { method, url, schema } of this.operations) {
      if (method === 'head' && this.operations.some((op) => op.url === url && op.method === 'get')) continue;
      const path = openApiPath(url);
      paths[path] ??= {};
      paths[path][method] = operation(schema, url);
    }
    const components: JsonObject = {};
    if (this.extras.securitySchemes) components.securitySchemes = this.extras.securitySchemes;
    return {
      openapi: '3.1.0',
      info: {
        title: this.info.title,
        version: this.info.version,
        ...(this.info.description ? { description: this.info.description } : {}),
      },
      ...(this.extras.tags ? { tags: this.extras.tags } : {}),
      paths,
      ...(Object.keys(components).length ? { components } : {}),
    };
  }
}

function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

/** Drops TypeBox's symbol keys and other non-JSON parts by a JSON round trip. */
function plain<T>(schema: T): T {
  return JSON.parse(JSON.stringify(schema));
}

/** The parameters an object schema (params, querystring or headers) describes. */
function parameters(schema: unknown, where: 'query' | 'header' | 'path'): unknown[] {
  const properties = field(schema, 'properties');
  if (!isRecord(properties)) return [];
  const names = field(schema, 'required');
  const required = new Set(Array.isArray(names) ? names : []);
  return Object.entries(properties).map(([name, property]) => {
    const copy = plain(property);
    const { description, ...rest } = isRecord(copy) ? copy : {};
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function operation(schema: FastifySchema, url: string): Record<string, unknown> {
  const op: Record<string, unknown> = {};
  for (const key of ['summary', 'description', 'tags', 'operationId', 'deprecated', 'security'] as const) {
    if (schema[key] !== undefined) op[key] = plain(schema[key]);
  }
  const params = [
    ...parameters(schema.params, 'path'),
    ...parameters(schema.querystring, 'query'),
    ...parameters(schema.headers, 'header'),
  ];
  if (!schema.params && url.includes('*')) {
    params.unshift({ name: 'path', in: 'path', required: true, schema: { type: 'string' } });
  }
  if (params.length) op.parameters = params;
  if (schema.body) {
    const body = plain(schema.body);
    const content = schema.consumes
      ? Object.fromEntries(schema.consumes.map((type) => [type, { schema: body }]))
      : { 'application/json': { schema: body } };
    op.requestBody = { required: true, content };
  } else if (schema.requestBody) {
    op.requestBody = plain(schema.requestBody);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(isRecord(schema.response) ? schema.response : {})) {
    const value = plain(response);
    if (isRecord(value) && 'content' in value) {
      responses[status] = { description: value.description ?? statusDescription(status), ...value };
    } else {
      const { description, ...body } = isRecord(value) ? value : {};
      responses[status] = {
        description: description ?? statusDescription(status),
        ...(Object.keys(body).length ? { content: { 'application/json': { schema: body } } } : {}),
      };
    }
  }
  op.responses = Object.keys(responses).length ? responses : { default: { description: 'Response' } };
  return op;
}

function statusDescription(status: string): string {
  const known: Record<string, string> = {
    '200': 'Success',
    '201': 'Created',
    '204': 'No content',
    '400': 'Bad request',
    '401': 'Unauthorized',
    '402': 'Payment required',
    '403': 'Forbidden',
    '404': 'Not found',
    '409': 'Conflict',
    '413': 'Payload too large',
    '422': 'Validation error',
    '429': 'Too many requests',
    '500': 'Server error',
    '502': 'Bad gateway',
    '503': 'Service unavailable',
    '504': 'Gateway timeout',
  };
  return known[status] ?? 'Response';
}

// The OpenAPI keywords a route schema may carry beside its validation schemas.
declare module 'fastify' {
  interface FastifySchema {
    hide?: boolean;
    summary?: string;
    description?: string;
    tags?: string[];
    operationId?: string;
    deprecated?: boolean;
    security?: Record<string, string[]>[];
    consumes?: string[];
    requestBody?: unknown;
  }
}
