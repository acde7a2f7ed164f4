// Swagger 1.2 (and best-effort 1.0/1.1): a resource listing whose `apis` name API declarations
// that are fetched one by one. Like 2.x did, we convert them to a 2.0 document and normalize that.

import { isRecord } from '../data.js';
import { table } from '../own.js';

// 1.x documents are old and loosely written; this converter reads them as they come and only
// builds a 2.0 document, which normalizeSwagger2 then reads through data.ts's narrowing.
// The converter's input and output, read field by field below (the viewer's one `any`).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const PRIMITIVES = new Set(['integer', 'number', 'string', 'boolean', 'object']);

export function isSwagger1(doc: unknown): boolean {
  return (
    isRecord(doc) && !doc.swagger && !doc.openapi && (typeof doc.swaggerVersion === 'string' || Array.isArray(doc.apis))
  );
}

/** Addresses of the API declarations a resource listing names. */
export function declarationUrls(listing: Json, listingUrl: string): string[] {
  const base =
    typeof listing.basePath === 'string' && /^\d?1\.[01]/.test(String(listing.swaggerVersion))
      ? listing.basePath
      : listingUrl;
  return (Array.isArray(listing.apis) ? listing.apis : [])
    .filter((api: Json) => api && typeof api.path === 'string')
    .map((api: Json) => {
      const path = api.path.replace(/\{format\}/g, 'json');
      return /^[a-z]+:\/\//i.test(path) ? path : new URL(base.replace(/\/$/, '') + path, listingUrl).href;
    });
}

/** True for a 1.x document that is itself a declaration (has operations), not a listing. */
export function isDeclaration(doc: Json) {
  return Array.isArray(doc.apis) && doc.apis.some((api: Json) => Array.isArray(api?.operations));
}

export function convertSwagger1(listing: Json, declarations: unknown[], listingUrl: string): Json {
  // Model ids, paths, methods, property and scheme names are the documents': tables without a prototype.
  const definitions: Json = table();
  const paths: Json = table();
  const tags: Json[] = [];
  let basePathUrl: URL | undefined;

  declarations.forEach((raw, index) => {
    if (!isRecord(raw)) return;
    const decl: Json = raw;
    const listed = Array.isArray(listing.apis) ? listing.apis[index] : undefined;
    const tagName =
      String(decl.resourcePath ?? listed?.path ?? `resource${index}`)
        .replace(/^\//, '')
        .replace(/\.\{format\}$/, '') || 'default';
    tags.push({ name: tagName, description: listed?.description ?? decl.description });
    if (!basePathUrl && typeof decl.basePath === 'string') basePathUrl = new URL(decl.basePath, listingUrl);
    for (const [id, model] of Object.entries<Json>(decl.models ?? {})) definitions[model?.id ?? id] = modelOf(model);
    for (const api of Array.isArray(decl.apis) ? decl.apis : []) {
      if (!api || typeof api.path !== 'string') continue;
      const path = api.path.replace(/\.\{format\}/g, '.json').replace(/\{format\}/g, 'json');
      paths[path] ??= table();
      for (const op of Array.isArray(api.operations) ? api.operations : []) {
        const method = String(op.method ?? op.httpMethod ?? 'get').toLowerCase();
        paths[path][method] = operationOf(op, tagName, decl);
      }
    }
  });

  const base = basePathUrl ?? new URL(listing.basePath ?? '/', listingUrl);
  const info = listing.info ?? {};
  return {
    swagger: '2.0',
    'x-converted-from': String(listing.swaggerVersion ?? '1.x'),
    info: {
      title: info.title ?? 'API',
      version: String(listing.apiVersion ?? ''),
      description: info.description,
      termsOfService: info.termsOfServiceUrl,
      contact: info.contact ? { email: info.contact } : undefined,
      license: info.license ? { name: info.license, url: info.licenseUrl } : undefined,
    },
    host: base.host,
    basePath: base.pathname.replace(/\/$/, ''),
    schemes: [base.protocol.replace(':', '')],
    tags,
    paths,
    definitions,
    securityDefinitions: securityOf(listing.authorizations),
  };
}

function schemaOf(field: Json | undefined): Json | undefined {
  if (!field || typeof field !== 'object') return undefined;
  const type = field.type ?? field.dataType ?? field.responseClass;
  const extras: Json = {};
  for (const key of ['format', 'description', 'minimum', 'maximum']) {
    if (field[key] !== undefined) extras[key] = field[key];
  }
  if (Array.isArray(field.enum)) extras.enum = field.enum;
  else if (field.allowableValues?.values) extras.enum = field.allowableValues.values;
  if (field.defaultValue !== undefined) extras.default = field.defaultValue;
  if (field.$ref) return { $ref: `#/definitions/${field.$ref}`, ...extras };
  if (typeof type !== 'string' || type === 'void') return undefined;
  const listOf = /^(?:List|Array|Set)\[(.+)\]$/.exec(type);
  if (type === 'array' || listOf) {
    const items = field.items ? schemaOf(field.items) : listOf ? schemaOf({ type: listOf[1] }) : { type: 'string' };
    return { type: 'array', items: items ?? { type: 'string' }, ...extras };
  }
  if (type === 'File' || type === 'file') return { type: 'file', ...extras };
  if (PRIMITIVES.has(type)) return { type, ...extras };
  if (['int', 'long'].includes(type)) {
    return { type: 'integer', format: type === 'long' ? 'int64' : 'int32', ...extras };
  }
  if (['float', 'double'].includes(type)) return { type: 'number', format: type, ...extras };
  if (['Date', 'date-time', 'Date-time', 'date'].includes(type)) {
    return { type: 'string', format: type === 'date' ? 'date' : 'date-time', ...extras };
  }
  return { $ref: `#/definitions/${type}`, ...extras };
}

function modelOf(model: Json): Json {
  const properties: Json = table();
  for (const [name, prop] of Object.entries<Json>(model?.properties ?? {})) {
    properties[name] = schemaOf(prop) ?? { type: 'string' };
  }
  return {
    type: 'object',
    description: model?.description,
    required: Array.isArray(model?.required) ? model.required : undefined,
    properties,
  };
}

function operationOf(op: Json, tag: string, decl: Json): Json {
  const parameters = (Array.isArray(op.parameters) ? op.parameters : []).map((p: Json) => {
    const where = p.paramType === 'form' ? 'formData' : p.paramType;
    const schema = schemaOf(p) ?? { type: 'string' };
    if (where === 'body') {
      return { name: p.name ?? 'body', in: 'body', required: !!p.required, description: p.description, schema };
    }
    const param: Json = {
      name: p.name,
      in: where,
      required: where === 'path' || !!p.required,
      description: p.description,
      ...schema,
    };
    if (p.allowMultiple && schema.type !== 'array') {
      Object.assign(param, { type: 'array', items: schema, collectionFormat: 'csv' });
      delete param.enum;
      delete param.format;
    }
    if (param.$ref) {
      delete param.$ref;
      param.type = 'string';
    }
    return param;
  });
  const responses: Json = table();
  const success = schemaOf({ type: op.type ?? op.responseClass, items: op.items, format: op.format });
  const messages = Array.isArray(op.responseMessages)
    ? op.responseMessages
    : Array.isArray(op.errorResponses)
      ? op.errorResponses
      : [];
  if (!messages.some((m: Json) => Number(m.code) >= 200 && Number(m.code) < 300)) {
    responses['200'] = { description: 'Success', ...(success ? { schema: success } : {}) };
  }
  for (const m of messages) {
    const model = m.responseModel ? schemaOf({ type: m.responseModel }) : Number(m.code) < 300 ? success : undefined;
    responses[String(m.code)] = { description: m.message ?? m.reason ?? '', ...(model ? { schema: model } : {}) };
  }
  const security =
    op.authorizations && typeof op.authorizations === 'object'
      ? Object.entries<unknown>(op.authorizations).map(([name, scopes]) => ({
          [name]: Array.isArray(scopes) ? scopes.map((s: Json) => s.scope) : [],
        }))
      : undefined;
  return {
    tags: [tag],
    operationId: op.nickname,
    summary: op.summary,
    description: op.notes,
    deprecated: op.deprecated === true || op.deprecated === 'true',
    produces: op.produces ?? decl.produces,
    consumes: op.consumes ?? decl.consumes,
    parameters,
    responses,
    ...(security && security.length ? { security } : {}),
  };
}

function securityOf(auths: Json | undefined): Json {
  const out: Json = table();
  for (const [name, a] of Object.entries<Json>(auths ?? {})) {
    if (a?.type === 'apiKey') {
      out[name] = { type: 'apiKey', name: a.keyname ?? name, in: a.passAs === 'query' ? 'query' : 'header' };
    } else if (a?.type === 'basicAuth') out[name] = { type: 'basic' };
    else if (a?.type === 'oauth2') {
      const scopes = Object.fromEntries(
        (Array.isArray(a.scopes) ? a.scopes : []).map((s: Json) => [s.scope, s.description ?? '']),
      );
      const code = a.grantTypes?.authorization_code;
      out[name] = code
        ? {
            type: 'oauth2',
            flow: 'accessCode',
            authorizationUrl: code.tokenRequestEndpoint?.url,
            tokenUrl: code.tokenEndpoint?.url,
            scopes,
          }
        : { type: 'oauth2', flow: 'implicit', authorizationUrl: a.grantTypes?.implicit?.loginEndpoint?.url, scopes };
    }
  }
  return out;
}
