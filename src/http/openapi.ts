// OpenAPI 3.1 documents generated from the same route schemas that validate requests.
// Each service's plugin gets a collector (an onRoute hook in its own scope), so every service
// describes exactly its own routes.
import type { FastifyInstance, RouteOptions } from 'fastify';

type JsonSchema = Record<string, any>;

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
  private operations: { method: string; url: string; schema: JsonSchema }[] = [];

  constructor(
    readonly info: OpenApiInfo,
    private extras: OpenApiExtras = {},
  ) {}

  /** Installs the hook in the service's scope: call first thing in the service plugin. */
  attach(app: FastifyInstance) {
    app.addHook('onRoute', (route: RouteOptions) => {
      const schema = (route.schema ?? {}) as JsonSchema;
      if (schema.hide) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (method === 'HEAD' && methods.length === 1 && route.exposeHeadRoute === undefined) continue;
        this.operations.push({ method: method.toLowerCase(), url: route.url, schema });
      }
    });
  }

  document(): JsonSchema {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const { method, url, schema } of this.operations) {
      if (method === 'head' && this.operations.some((op) => op.url === url && op.method === 'get')) continue;
      const path = openApiPath(url);
      paths[path] ??= {};
      paths[path][method] = operation(schema, url);
    }
    const components: JsonSchema = {};
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

function parameters(schema: JsonSchema | undefined, where: 'query' | 'header' | 'path'): unknown[] {
  if (!schema || typeof schema !== 'object' || !schema.properties) return [];
  const required = new Set<string>(schema.required ?? []);
  return Object.entries(schema.properties as Record<string, JsonSchema>).map(([name, property]) => {
    const { description, ...rest } = plain(property);
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function operation(schema: JsonSchema, url: string): Record<string, unknown> {
  const op: Record<string, unknown> = {};
  for (const key of ['summary', 'description', 'tags', 'operationId', 'deprecated', 'security']) {
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
      ? Object.fromEntries((schema.consumes as string[]).map((type) => [type, { schema: body }]))
      : { 'application/json': { schema: body } };
    op.requestBody = { required: true, content };
  } else if (schema.requestBody) {
    op.requestBody = plain(schema.requestBody);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries((schema.response ?? {}) as Record<string, JsonSchema>)) {
    const value = plain(response);
    if (value && typeof value === 'object' && 'content' in value) {
      responses[status] = { description: value.description ?? statusDescription(status), ...value };
    } else {
      const { description, ...body } = value ?? {};
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
