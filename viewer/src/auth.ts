// Authorizations, kept compatible with the 2.x client: `new SwaggerClient.ApiKeyAuthorization(
// name, value, "header"|"query")`, `new SwaggerClient.PasswordAuthorization(user, password)`,
// and `ui.api.clientAuthorizations.add(name, auth)`.
import type { Operation, SecurityRequirement } from './normalize/model.js';
import { table } from './own.js';

/** The request being prepared: authorizations add headers or query parameters to it. */
export interface PendingRequest {
  headers: Record<string, string>;
  query: [string, string][];
  /** Cookies to set before sending (browsers refuse a Cookie header from scripts). */
  cookies?: [string, string][];
}

export interface Authorization {
  apply(request: PendingRequest): void;
}

export class ApiKeyAuthorization implements Authorization {
  readonly type: 'header' | 'query' | 'cookie';
  constructor(
    readonly name: string,
    readonly value: string,
    type: string = 'header',
  ) {
    const where = String(type).toLowerCase();
    this.type = where === 'query' || where === 'cookie' ? where : 'header';
  }
  apply(request: PendingRequest) {
    // Query keys and values are encoded when the URL is built (2.2.10 left keys raw).
    if (this.type === 'query') request.query.push([this.name, this.value]);
    else if (this.type === 'cookie') (request.cookies ??= []).push([this.name, this.value]);
    else request.headers[this.name] = this.value;
  }
}

export class PasswordAuthorization implements Authorization {
  readonly username: string;
  readonly password: string;
  /** Accepts (username, password) and the older (name, username, password). */
  constructor(...args: string[]) {
    [this.username, this.password] = args.length >= 3 ? [args[1], args[2]] : [args[0] ?? '', args[1] ?? ''];
  }
  apply(request: PendingRequest) {
    const bytes = new TextEncoder().encode(`${this.username}:${this.password}`);
    request.headers.Authorization = `Basic ${btoa(String.fromCharCode(...bytes))}`;
  }
}

export class BearerAuthorization implements Authorization {
  constructor(readonly token: string) {}
  apply(request: PendingRequest) {
    request.headers.Authorization = `Bearer ${this.token}`;
  }
}

/** Plain objects in the `authorizations` option: {type:'apiKey', name, value, in} and friends. */
export function toAuthorization(value: unknown): Authorization | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const given = value as Record<string, unknown>;
  if (typeof given.apply === 'function') return value as Authorization;
  if (given.type === 'basic') return new PasswordAuthorization(given.username as string, given.password as string);
  if (given.type === 'bearer' || given.type === 'oauth2') {
    return new BearerAuthorization((given.token ?? given.accessToken) as string);
  }
  if (typeof given.name === 'string' && given.value !== undefined) {
    return new ApiKeyAuthorization(given.name, String(given.value), (given.in ?? given.type) as string);
  }
  return undefined;
}

export class ClientAuthorizations {
  /** By name; the names come from descriptions and pages, so the table has no prototype. */
  authz: Record<string, Authorization> = table();
  private listeners = new Set<() => void>();

  add(name: string | Record<string, Authorization>, auth?: Authorization) {
    if (typeof name === 'object') for (const [key, value] of Object.entries(name)) this.add(key, value);
    else {
      const normalized = toAuthorization(auth);
      if (normalized) this.authz[name] = normalized;
    }
    this.changed();
    return auth;
  }

  remove(name: string) {
    delete this.authz[name];
    this.changed();
  }

  onChange(listener: () => void) {
    this.listeners.add(listener);
  }

  private changed() {
    for (const listener of this.listeners) listener();
  }

  /**
   * Applies the authorizations that concern an operation: those its security names, all when it
   * declares none, and always those registered under a name that is no security scheme (a
   * "header that must go with every request", docs/viewer.md).
   */
  apply(request: PendingRequest, security: SecurityRequirement[] | undefined, schemeNames: Set<string>) {
    const named = security && security.length ? new Set(security.flatMap((alt) => Object.keys(alt))) : undefined;
    for (const [name, auth] of Object.entries(this.authz)) {
      if (!named || named.has(name) || !schemeNames.has(name)) auth.apply(request);
    }
  }

  /** Everything, for the description fetch itself. */
  applyAll(request: PendingRequest) {
    for (const auth of Object.values(this.authz)) auth.apply(request);
  }
}

export function effectiveSecurity(op: Operation, global: SecurityRequirement[] | undefined) {
  return op.security ?? global;
}
