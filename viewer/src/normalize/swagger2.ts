// Swagger 2.0 → internal model.
import type { Resolver } from '../refs.js';
import type {
  ApiModel,
  MediaContent,
  OAuthFlow,
  Operation,
  Parameter,
  Response,
  Schema,
  SecurityScheme,
} from './model.js';
import { HTTP_METHODS } from './model.js';
import { absolute, groupByTag, perTag, security, text } from './common.js';
import { ownValue, table } from '../own.js';

const FLOWS: Record<string, OAuthFlow['kind']> = {
  implicit: 'implicit',
  accessCode: 'authorizationCode',
  password: 'password',
  application: 'clientCredentials',
};

export function normalizeSwagger2(doc: any, resolver: Resolver): ApiModel {
  const specUrl = resolver.baseUrl;
  const origin = new URL(specUrl);
  const schemes: string[] =
    Array.isArray(doc.schemes) && doc.schemes.length ? doc.schemes : [origin.protocol.replace(':', '')];
  const host = typeof doc.host === 'string' ? doc.host : origin.host;
  const basePath = typeof doc.basePath === 'string' ? doc.basePath : '';
  const preferred = schemes.includes(origin.protocol.replace(':', '')) ? origin.protocol.replace(':', '') : schemes[0];
  const servers =
    origin.protocol === 'file:' && !doc.host
      ? [basePath || '/']
      : [absolute(`${preferred}://${host}${basePath}`, specUrl)];

  const globalProduces: string[] = Array.isArray(doc.produces) ? doc.produces : [];
  const globalConsumes: string[] = Array.isArray(doc.consumes) ? doc.consumes : [];
  const schemas: Record<string, Schema> = doc.definitions && typeof doc.definitions === 'object' ? doc.definitions : {};
  for (const [name, schema] of Object.entries(schemas)) {
    if (schema && typeof schema === 'object') resolver.nameSchema(schema, name);
  }

  const operations: Operation[] = [];
  const used = new Set<string>();
  for (const [path, rawItem] of Object.entries<any>(doc.paths ?? {})) {
    const item = resolver.deref(rawItem);
    if (!item || typeof item !== 'object') continue;
    const shared: any[] = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of HTTP_METHODS) {
      const raw = item[method];
      if (!raw || typeof raw !== 'object') continue;
      const consumes: string[] = Array.isArray(raw.consumes) ? raw.consumes : globalConsumes;
      const produces: string[] = Array.isArray(raw.produces) ? raw.produces : globalProduces;
      const params = mergeParameters(shared, raw.parameters, resolver);
      const parameters: Parameter[] = [];
      let requestBody: Operation['requestBody'];
      const formParams: Parameter[] = [];
      for (const p of params) {
        if (p.in === 'body') {
          const types = consumes.length ? consumes : ['application/json'];
          requestBody = {
            required: !!p.required,
            description: text(p.description),
            contents: types.map((type) => ({ type, schema: p.schema ?? {} })),
          };
          parameters.push({
            name: p.name ?? 'body',
            in: 'body',
            required: !!p.required,
            description: text(p.description),
            schema: p.schema ?? {},
          });
        } else {
          const param = parameterOf(p);
          parameters.push(param);
          if (param.in === 'formData') formParams.push(param);
        }
      }
      if (formParams.length && !requestBody) {
        const type =
          consumes.find((c) => /multipart|urlencoded/.test(c)) ??
          (formParams.some((p) => p.schema.type === 'file')
            ? 'multipart/form-data'
            : 'application/x-www-form-urlencoded');
        requestBody = { required: false, contents: [{ type }] };
      }
      operations.push(
        ...perTag(
          {
            method,
            path,
            summary: text(raw.summary),
            description: text(raw.description),
            deprecated: raw.deprecated === true,
            parameters,
            requestBody,
            responses: responsesOf(raw.responses, produces, resolver),
            produces,
            security: security(raw.security),
            servers:
              Array.isArray(raw.schemes) && raw.schemes.length && !raw.schemes.includes(preferred)
                ? [absolute(`${raw.schemes[0]}://${host}${basePath}`, specUrl)]
                : servers,
          },
          raw.tags,
          raw.operationId,
          used,
        ),
      );
    }
  }

  return {
    specVersion: String(doc.swagger),
    info: infoOf(doc.info),
    servers,
    tags: groupByTag(operations, Array.isArray(doc.tags) ? doc.tags : []),
    securitySchemes: securitySchemesOf(doc.securityDefinitions),
    security: security(doc.security),
    schemas,
    externalDocs: doc.externalDocs?.url
      ? { url: String(doc.externalDocs.url), description: text(doc.externalDocs.description) }
      : undefined,
    resolver,
  };
}

export function infoOf(info: any): ApiModel['info'] {
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

/** A 2.0 non-body parameter keeps its type keywords; they become the parameter's schema. */
function parameterOf(p: any): Parameter {
  const { name, in: where, required, description, collectionFormat, allowEmptyValue: _allowEmptyValue, ...schema } = p;
  return {
    name,
    in: where,
    required: where === 'path' || required === true,
    description: text(description),
    schema: schema as Schema,
    collectionFormat: collectionFormat ?? (schema.type === 'array' ? 'csv' : undefined),
    example: p['x-example'],
  };
}

function responsesOf(responses: any, produces: string[], resolver: Resolver): Response[] {
  const out: Response[] = [];
  for (const [code, raw] of Object.entries<any>(responses ?? {})) {
    const r = resolver.deref(raw);
    if (!r || typeof r !== 'object') continue;
    const examples = r.examples && typeof r.examples === 'object' ? r.examples : {};
    const types = produces.length ? produces : ['application/json'];
    const contents: MediaContent[] = r.schema
      ? types.map((type) => ({ type, schema: r.schema, example: examples[type] }))
      : [];
    out.push({
      code,
      description: text(r.description) ?? '',
      contents,
      headers: Object.entries<any>(r.headers ?? {}).map(([name, h]) => ({
        name,
        description: text(h?.description),
        schema: h,
      })),
    });
  }
  return out;
}

function securitySchemesOf(defs: any): Record<string, SecurityScheme> {
  const out = table<SecurityScheme>(); // scheme names are the description's
  for (const [name, d] of Object.entries<any>(defs ?? {})) {
    if (!d || typeof d !== 'object') continue;
    const base = { name, description: text(d.description) };
    if (d.type === 'apiKey') {
      out[name] = {
        ...base,
        type: 'apiKey',
        paramName: text(d.name) ?? name,
        in: d.in === 'query' ? 'query' : 'header',
      };
    } else if (d.type === 'basic') out[name] = { ...base, type: 'basic' };
    else if (d.type === 'oauth2') {
      const kind = ownValue(FLOWS, String(d.flow)) ?? 'implicit';
      out[name] = {
        ...base,
        type: 'oauth2',
        flows: [
          { kind, authorizationUrl: text(d.authorizationUrl), tokenUrl: text(d.tokenUrl), scopes: d.scopes ?? {} },
        ],
      };
    } else out[name] = { ...base, type: 'other' };
  }
  return out;
}
