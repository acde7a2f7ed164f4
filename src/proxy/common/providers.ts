// The upstream providers (docs/proxy-billing.md, "Providers"): read from PROXY_PROVIDERS_FILE, or one
// implicit provider from PROXY_UPSTREAM_URL and PROXY_UPSTREAM_KEY. Each has a base URL, a key, a kind
// (how the key is sent), the paths it serves, the models it serves (with its own prices, the prices of
// PROXY_MODELS_FILE, or its model list fetched with a markup), a weight and its own connection limit.
import { readFileSync } from 'node:fs';
import { ConfigError, type Env } from '../../env.js';
import { field } from '../../json-fields.js';
import { headerIndex, type HeaderList } from './header-list.js';

export const PROVIDER_KINDS = ['openai', 'anthropic', 'openrouter'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** A model as one provider lists it. */
export interface ProviderModel {
  /** The node's id for the model (what callers send). */
  id: string;
  /** The id this provider expects in the body; the node's id when the same. */
  upstreamId: string;
  /** The model's entry in OpenRouter's format when the provider prices it; null: PROXY_MODELS_FILE's price. */
  entry: Record<string, unknown> | null;
}

export interface ProviderConfig {
  name: string;
  kind: ProviderKind;
  /** The caller's path is appended to this URL's path. */
  baseUrl: string;
  key: string | null;
  weight: number;
  /** Path prefixes served; null: every path. */
  paths: string[] | null;
  /** Null: every model of PROXY_MODELS_FILE. */
  models: ProviderModel[] | null;
  /** Models fetched from `GET {baseUrl}/v1/models` at start, their prices times this markup (decimal text). */
  fetchMarkup: string | null;
  /** Most requests in flight to this provider; null: PROXY_UPSTREAM_CONNECTIONS. */
  connections: number | null;
  /** The prices of its listed models times this (Routstr's provider_fee, ../settings/); unset: as listed. */
  markup?: string | null;
}

const VARIABLE = 'PROXY_PROVIDERS_FILE';
/** Bounds on what the file may hold: it is the operator's, but a typo must not exhaust memory. */
const MAX_PROVIDERS = 64;
const MAX_MODELS = 10_000;
const ANTHROPIC_PATHS = ['/v1/messages', '/v1/models'];

/** The single provider of a node configured with PROXY_UPSTREAM_URL alone. */
export function implicitProvider(url: string, key: string | null): ProviderConfig {
  return {
    name: 'upstream',
    kind: 'openai',
    baseUrl: url,
    key,
    weight: 1,
    paths: null,
    models: null,
    fetchMarkup: null,
    connections: null,
  };
}

const fail = (where: string, message: string) => new ConfigError(VARIABLE, `${where}: ${message}`);

function httpBase(value: unknown, where: string): string {
  if (typeof value !== 'string') throw fail(where, '"base_url" must be an http(s) URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail(where, `"base_url" is not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail(where, '"base_url" must be http(s)');
  if (url.search || url.hash) throw fail(where, '"base_url" takes no query or fragment');
  return value;
}

function markup(value: unknown, where: string): string {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^\d+(\.\d+)?$/.test(text) || Number(text) <= 0) {
    throw fail(where, `"fetch_models.markup" must be a positive decimal, got ${JSON.stringify(value)}`);
  }
  return text;
}

function providerModels(value: unknown, where: string): ProviderModel[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length > MAX_MODELS) {
    throw fail(where, `"models" must be an array of at most ${MAX_MODELS} model ids or objects`);
  }
  return value.map((entry: unknown, index) => {
    if (typeof entry === 'string' && entry) return { id: entry, upstreamId: entry, entry: null };
    const id = field(entry, 'id');
    if (typeof id !== 'string' || !id) throw fail(where, `models[${index}] needs a non-empty "id"`);
    const upstreamId = field(entry, 'upstream_id') ?? id;
    if (typeof upstreamId !== 'string' || !upstreamId) {
      throw fail(where, `models[${index}] ("${id}"): "upstream_id" must be a non-empty string`);
    }
    const priced = field(entry, 'pricing') !== undefined;
    return { id, upstreamId, entry: priced ? (entry as Record<string, unknown>) : null };
  });
}

/** The paths a provider of `kind` serves unless it lists its own. */
export const defaultPaths = (kind: ProviderKind): string[] | null => (kind === 'anthropic' ? ANTHROPIC_PATHS : null);

function paths(value: unknown, where: string, kind: ProviderKind): string[] | null {
  if (value === undefined || value === null) return defaultPaths(kind);
  if (!Array.isArray(value) || value.some((path) => typeof path !== 'string' || !path.startsWith('/'))) {
    throw fail(where, '"paths" must be an array of path prefixes starting with "/"');
  }
  return value.map((path: string) => path.replace(/\/+$/, '') || '/');
}

function positiveInt(value: unknown, where: string, name: string, max: number): number | null {
  if (value === undefined || value === null) return null;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max) {
    throw fail(where, `"${name}" must be an integer from 1 to ${max}`);
  }
  return value as number;
}

/** Parses the providers file's JSON; keys named by `api_key_env` are read from `env`. */
export function parseProviders(json: unknown, source: string, env: Env): ProviderConfig[] {
  const list = Array.isArray(json) ? json : field(json, 'providers');
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_PROVIDERS) {
    throw fail(source, `expected {"providers":[…]} with 1 to ${MAX_PROVIDERS} providers`);
  }
  const names = new Set<string>();
  return list.map((entry: unknown, index) => {
    const name = field(entry, 'name') ?? `provider ${index}`;
    const where = `${source}: ${typeof name === 'string' ? name : `provider ${index}`}`;
    if (typeof name !== 'string' || !/^[\w.-]{1,64}$/.test(name)) {
      throw fail(where, '"name" must be 1 to 64 letters, digits, ".", "_" or "-"');
    }
    if (names.has(name)) throw fail(where, 'two providers have this name');
    names.add(name);
    const kind = field(entry, 'kind') ?? 'openai';
    if (!PROVIDER_KINDS.includes(kind as ProviderKind)) {
      throw fail(where, `"kind" must be one of ${PROVIDER_KINDS.join(', ')}, got ${JSON.stringify(kind)}`);
    }
    const key = providerKey(entry, where, env);
    const weight = positiveInt(field(entry, 'weight'), where, 'weight', 1_000_000) ?? 1;
    const fetch = field(entry, 'fetch_models');
    const fetchMarkup =
      fetch === undefined || fetch === null || fetch === false
        ? null
        : markup(fetch === true ? '1' : (field(fetch, 'markup') ?? '1'), where);
    return {
      name,
      kind: kind as ProviderKind,
      baseUrl: httpBase(field(entry, 'base_url'), where),
      key,
      weight,
      paths: paths(field(entry, 'paths'), where, kind as ProviderKind),
      models: providerModels(field(entry, 'models'), where),
      fetchMarkup,
      connections: positiveInt(field(entry, 'connections'), where, 'connections', 1_000_000),
    };
  });
}

/** The key: `api_key` in the file, or the variable `api_key_env` names (keeps secrets out of the file). */
function providerKey(entry: unknown, where: string, env: Env): string | null {
  const literal = field(entry, 'api_key');
  const variable = field(entry, 'api_key_env');
  if (literal !== undefined && variable !== undefined) throw fail(where, 'give "api_key" or "api_key_env", not both');
  if (variable !== undefined) {
    if (typeof variable !== 'string' || !variable) throw fail(where, '"api_key_env" must name a variable');
    const value = env[variable];
    if (!value) throw fail(where, `"api_key_env" names ${variable}, which is not set`);
    return value;
  }
  if (literal === undefined || literal === null) return null;
  if (typeof literal !== 'string' || !literal) throw fail(where, '"api_key" must be a non-empty string');
  return literal;
}

export function loadProviders(file: string, env: Env): ProviderConfig[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(VARIABLE, `cannot read ${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(VARIABLE, `${file} is not JSON: ${(error as Error).message}`);
  }
  return parseProviders(json, file, env);
}

/** Whether `provider` serves `path` (a normalized path, without its query). */
export function servesPath(provider: ProviderConfig, path: string): boolean {
  if (provider.paths === null) return true;
  const lower = path.toLowerCase();
  return provider.paths.some((prefix) => {
    const p = prefix.toLowerCase();
    return p === '/' || lower === p || lower.startsWith(`${p}/`);
  });
}

/**
 * Puts the provider's key on a request's headers, as its kind expects: Anthropic reads `x-api-key`
 * (and needs `anthropic-version`); OpenAI-compatible ones read a Bearer token, and also `x-api-key`
 * when the caller used that header (an Anthropic-style client through a compatible upstream).
 */
export function withProviderKey<List extends HeaderList>(
  provider: ProviderConfig,
  headers: List,
  callerUsedXApiKey: boolean,
): List {
  const out = [] as unknown as List;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== 'authorization' && headers[i] !== 'x-api-key') out.push(headers[i], headers[i + 1]);
  }
  if (provider.kind === 'anthropic') {
    if (provider.key) out.push('x-api-key', provider.key);
    if (headerIndex(out, 'anthropic-version') < 0) out.push('anthropic-version', '2023-06-01');
    return out;
  }
  if (provider.key) {
    out.push('authorization', `Bearer ${provider.key}`);
    if (callerUsedXApiKey) out.push('x-api-key', provider.key);
  }
  return out;
}
