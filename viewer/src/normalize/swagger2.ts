// Swagger 2.0 → internal model.
import { asRecord, entries, isRecord, record, strings, type JsonObject } from '../data.js';
import type { Resolver } from '../refs.js';
import type { ApiModel, MediaContent, OAuthFlow, Operation, Parameter, Response, SecurityScheme } from './model.js';
import { isFormType } from './model.js';
import { absolute, assembleModel, collectOperations, mergeParameters, namedSchemas, text } from './common.js';
import { apiKeyScheme, scopesOf, securitySchemesFrom } from './security.js';
import { hasOwn, ownValue } from '../own.js';

const FLOWS: Record<string, OAuthFlow['kind']> = {
  implicit: 'implicit',
  accessCode: 'authorizationCode',
  password: 'password',
  application: 'clientCredentials',
};

export function normalizeSwagger2(doc: JsonObject, resolver: Resolver): ApiModel {
  const specUrl = resolver.baseUrl;
  const origin = new URL(specUrl);
  const schemes = strings(doc.schemes).length ? strings(doc.schemes) : [origin.protocol.replace(':', '')];
  const host = typeof doc.host === 'string' ? doc.host : origin.host;
  const basePath = typeof doc.basePath === 'string' ? doc.basePath : '';
  const preferred = schemes.includes(origin.protocol.replace(':', '')) ? origin.protocol.replace(':', '') : schemes[0];
  const servers =
    origin.protocol === 'file:' && !doc.host
      ? [basePath || '/']
      : [absolute(`${preferred}://${host}${basePath}`, specUrl)];

  const globalProduces = strings(doc.produces);
  const globalConsumes = strings(doc.consumes);
  const schemas = namedSchemas(doc.definitions, resolver);
  const operations = collectOperations(doc.paths, resolver, 'alphabetical', (raw, item) => {
    const consumes = Array.isArray(raw.consumes) ? strings(raw.consumes) : globalConsumes;
    const produces = Array.isArray(raw.produces) ? strings(raw.produces) : globalProduces;
    const params = mergeParameters(item.parameters, raw.parameters, resolver);
    const parameters: Parameter[] = [];
    let requestBody: Operation['requestBody'];
    const formParams: Parameter[] = [];
    for (const p of params) {
      if (p.in === 'body') {
        // A body parameter is a body whatever `consumes` lists: its form types are for formData.
        const bodyTypes = consumes.filter((type) => !isFormType(type));
        const types = bodyTypes.length ? bodyTypes : ['application/json'];
        const schema = record(p.schema);
        requestBody = {
          required: !!p.required,
          description: text(p.description),
          contents: types.map((type) => ({ type, schema })),
        };
        parameters.push({
          name: text(p.name) ?? 'body',
          in: 'body',
          required: !!p.required,
          description: text(p.description),
          schema,
        });
      } else {
        const param = parameterOf(p);
        parameters.push(param);
        if (param.in === 'formData') formParams.push(param);
      }
    }
    if (formParams.length && !requestBody) {
      // formData parameters are fields, sent as each form type `consumes` lists (in its order).
      const formTypes = consumes.filter(isFormType);
      const fallback = formParams.some((p) => p.schema.type === 'file')
        ? 'multipart/form-data'
        : 'application/x-www-form-urlencoded';
      const types = formTypes.length ? formTypes : [fallback];
      requestBody = { required: false, contents: types.map((type) => ({ type })) };
    }
    return {
      parameters,
      requestBody,
      responses: responsesOf(raw.responses, produces, resolver),
      produces,
      servers:
        strings(raw.schemes).length && !strings(raw.schemes).includes(preferred)
          ? [absolute(`${strings(raw.schemes)[0]}://${host}${basePath}`, specUrl)]
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
const LOCATIONS = new Set<unknown>(['path', 'query', 'header', 'formData']);

function parameterOf(p: JsonObject): Parameter {
  const { name, in: where, required, description, collectionFormat, allowEmptyValue: _allowEmptyValue, ...schema } = p;
  return {
    name: String(name),
    in: LOCATIONS.has(where) ? (where as Parameter['in']) : 'query',
    required: where === 'path' || required === true,
    description: text(description),
    schema,
    collectionFormat: text(collectionFormat) ?? (schema.type === 'array' ? 'csv' : undefined),
    example: p['x-example'],
  };
}

function responsesOf(responses: unknown, produces: string[], resolver: Resolver): Response[] {
  const out: Response[] = [];
  for (const [code, raw] of entries(responses)) {
    const r = resolver.object(raw);
    if (!r) continue;
    const examples = record(r.examples);
    const types = produces.length ? produces : ['application/json'];
    const schema = r.schema;
    const contents: MediaContent[] = isRecord(schema)
      ? types.map((type) => ({ type, schema, example: hasOwn(examples, type) ? examples[type] : undefined }))
      : [];
    out.push({
      code,
      description: text(r.description) ?? '',
      contents,
      headers: entries(r.headers).map(([name, h]) => ({
        name,
        description: text(record(h).description),
        schema: asRecord(h),
      })),
    });
  }
  return out;
}

function securitySchemesOf(defs: unknown): Record<string, SecurityScheme> {
  return securitySchemesFrom(defs, readScheme);
}

function readScheme(d: JsonObject, base: Pick<SecurityScheme, 'name' | 'description'>): SecurityScheme {
  if (d.type === 'apiKey') return apiKeyScheme(d, base, ['query']);
  if (d.type === 'basic') return { ...base, type: 'basic' };
  if (d.type === 'oauth2') {
    const kind = ownValue(FLOWS, String(d.flow)) ?? 'implicit';
    const flow = {
      kind,
      authorizationUrl: text(d.authorizationUrl),
      tokenUrl: text(d.tokenUrl),
      scopes: scopesOf(d.scopes),
    };
    return { ...base, type: 'oauth2', flows: [flow] };
  }
  return { ...base, type: 'other' };
}
