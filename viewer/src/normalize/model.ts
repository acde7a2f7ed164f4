// The one internal model every description version (1.x, 2.0, 3.0, 3.1) is normalized into.
// Schemas stay JSON Schema objects from the description; $refs are resolved lazily by a Resolver
// when something is rendered, so opening a 10 MB description does not walk every schema.
import type { JsonObject } from '../data.js';
import type { Resolver } from '../refs.js';

/** A JSON Schema object as the description wrote it: read through data.ts's narrowing functions. */
export type Schema = JsonObject;

export interface Info {
  title: string;
  version: string;
  description?: string;
  termsOfService?: string;
  contact?: { name?: string; url?: string; email?: string };
  license?: { name?: string; url?: string };
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie' | 'formData' | 'body';
  required: boolean;
  description?: string;
  deprecated?: boolean;
  schema: Schema;
  /** Arrays in query/header/form: how items are joined (csv, multi, ssv, tsv, pipes). */
  collectionFormat?: string;
  example?: unknown;
}

export interface MediaContent {
  type: string;
  schema?: Schema;
  example?: unknown;
}

export interface RequestBody {
  required: boolean;
  description?: string;
  contents: MediaContent[];
}

export interface Response {
  code: string;
  description: string;
  contents: MediaContent[];
  headers: { name: string; description?: string; schema?: Schema }[];
  /** 3.x links: operations a client can call next with values from this response. */
  links?: Link[];
}

export interface Link {
  name: string;
  operationId?: string;
  operationRef?: string;
  /** Parameter name → runtime expression or value, as written. */
  parameters: [string, string][];
  requestBody?: string;
  description?: string;
}

/** A 3.x callback: requests the API sends to a URL taken from the request (expression → operations). */
export interface Callback {
  name: string;
  operations: Operation[];
}

/** One alternative of a security requirement: scheme name → scopes. */
export type SecurityRequirement = Record<string, string[]>;

export interface SecurityScheme {
  name: string;
  type: 'apiKey' | 'basic' | 'bearer' | 'oauth2' | 'openIdConnect' | 'other';
  description?: string;
  /** apiKey: parameter name and where it goes. */
  paramName?: string;
  in?: 'header' | 'query' | 'cookie';
  bearerFormat?: string;
  flows?: OAuthFlow[];
  openIdConnectUrl?: string;
}

export interface OAuthFlow {
  kind: 'implicit' | 'authorizationCode' | 'password' | 'clientCredentials';
  authorizationUrl?: string;
  tokenUrl?: string;
  scopes: Record<string, string>;
}

export interface Operation {
  /** Stable id: operationId when given, else method + path. Used by deep links. */
  id: string;
  operationId?: string;
  tag: string;
  method: string;
  path: string;
  summary?: string;
  description?: string;
  deprecated: boolean;
  parameters: Parameter[];
  requestBody?: RequestBody;
  responses: Response[];
  /** Content types the operation can answer with (Response Content Type select). */
  produces: string[];
  security?: SecurityRequirement[];
  servers: string[];
  callbacks?: Callback[];
  /** A webhook or callback: a request the API sends, shown but not tried. */
  sentByApi?: boolean;
}

export interface Tag {
  name: string;
  description?: string;
  operations: Operation[];
}

export interface ApiModel {
  /** The description's own version string: 1.2, 2.0, 3.0.3, 3.1.0… */
  specVersion: string;
  info: Info;
  /** Base URLs operations are sent to, first is the default. */
  servers: string[];
  tags: Tag[];
  /** 3.1 webhooks grouped by tag (an operation's path is the webhook's name). */
  webhooks?: Tag[];
  securitySchemes: Record<string, SecurityScheme>;
  security?: SecurityRequirement[];
  /** Named models (definitions / components.schemas) for display names. */
  schemas: Map<string, Schema>;
  externalDocs?: { url: string; description?: string };
  resolver: Resolver;
}

/** The media types sent as form fields (multipart or URL-encoded) rather than as one body text. */
export function isFormType(type: string): boolean {
  return /^\s*(multipart\/form-data|application\/x-www-form-urlencoded)\b/i.test(type);
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export function operationKey(method: string, path: string): string {
  return `${method}${path}`.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
}
