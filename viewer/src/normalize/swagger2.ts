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
import { absolute, assembleModel, collectOperations, mergeParameters, namedSchemas, text } from './common.js';
import { apiKeyScheme, securitySchemesFrom } from './security.js';
import { ownValue } from '../own.js';

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
  const schemas = namedSchemas(doc.definitions, resolver);
  const operations = collectOperations(doc.paths, resolver, 'alphabetical', (raw, item) => {
    const consumes: string[] = Array.isArray(raw.consumes) ? raw.consumes : globalConsumes;
    const produces: string[] = Array.isArray(raw.produces) ? raw.produces : globalProduces;
    const params = mergeParameters(item.parameters, raw.parameters, resolver);
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
    return {
      parameters,
      requestBody,
      responses: responsesOf(raw.responses, produces, resolver),
      produces,
      servers:
        Array.isArray(raw.schemes) && raw.schemes.length && !raw.schemes.includes(preferred)
          ? [absolute(`${raw.schemes[0]}://${host}${basePath}`, specUrl)]
          : servers,
    };
  });
  return assembleModel(doc, {
    specVersion: String(doc.swagger),
    servers,
    operations,
    securitySchemes: securitySchemesOf(doc.securityDefinitions),
    schemas,
    resolver,
  });
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
  return securitySchemesFrom(defs, readScheme);
}

function readScheme(d: any, base: Pick<SecurityScheme, 'name' | 'description'>): SecurityScheme {
  if (d.type === 'apiKey') return apiKeyScheme(d, base, ['query']);
  if (d.type === 'basic') return { ...base, type: 'basic' };
  if (d.type === 'oauth2') {
    const kind = ownValue(FLOWS, String(d.flow)) ?? 'implicit';
    const flow = {
      kind,
      authorizationUrl: text(d.authorizationUrl),
      tokenUrl: text(d.tokenUrl),
      scopes: d.scopes ?? {},
    };
    return { ...base, type: 'oauth2', flows: [flow] };
  }
  return { ...base, type: 'other' };
}
