// The upstream providers and their models at Routstr's paths (/admin/api/upstream-providers/…,
// /admin/api/provider-types, /admin/api/openrouter-presets), in Routstr's shapes, so that its admin UI
// and routstr-cli manage this node's providers (docs/proxy-operator.md, "Providers and models").
// Every change is one transaction with its audit entry and a bump of the configuration's version:
// this process applies it at once, every other one sharing the database within seconds.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import { request as undiciRequest } from 'undici';
import { writeTransaction } from '../../db/index.js';
import { isUniqueViolation } from '../../db/errors.js';
import { HttpError } from '../../http/errors.js';
import { loadModels, parseDecimal } from '../billing/pricing.js';
import { fetchModelList } from '../forward/provider-models.js';
import { discardBody } from '../forward/forward.js';
import { type ProviderConfig, withProviderKey } from '../common/providers.js';
import {
  modelRow,
  PROVIDER_TYPE_IDS,
  PROVIDER_TYPES,
  providerConfigOf,
  type Seed,
} from '../settings/runtime-config.js';
import {
  bumpVersion,
  deleteModels,
  deleteProvider,
  insertProvider,
  type ModelRow,
  modelOf,
  modelsOf,
  type NewProvider,
  allProviders,
  providerById,
  providerBySlug,
  type ProviderRow,
  providerTwin,
  slugsLike,
  updateProvider,
  upsertModel,
} from '../settings/store.js';
import { recordAudit } from './audit.js';
import { operatorError, operatorOfRequest, type OperatorDeps } from './operator-api.js';
import type { NostrKey } from '../common/nostr-config.js';

/** What the run-time configuration's routes need beyond the API's own parts (built in ../service.ts). */
export interface RuntimeDeps extends OperatorDeps {
  runtime: {
    /** Applies the configuration in this process now (the others poll for it). */
    reload(): Promise<void>;
    /** NOSTR_NSEC's key, used while no nsec is stored. */
    envKey: NostrKey | null;
    /** The files and environment as this process read them at start (POST /admin/api/config/import). */
    startSeed(): Seed;
  };
}

const REDACTED = '[REDACTED]';
/** The longest a provider's check (GET {base}/v1/models) may take before it counts as unreachable. */
const CHECK_TIMEOUT_MS = 5000;
const MAX_MODELS_PER_CALL = 10_000;
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$/;

const ProviderParams = Type.Object({ provider_id: Type.String({ maxLength: 64 }) });
const ModelParams = Type.Object({ provider_id: Type.String({ maxLength: 64 }), '*': Type.String({ maxLength: 500 }) });

/** A price in USD: a JSON number or a decimal string, never negative. */
const Price = Type.Union([
  Type.Number({ minimum: 0, maximum: 1_000_000 }),
  Type.String({ pattern: '^\\s*\\d+(\\.\\d+)?([eE][-+]?\\d+)?\\s*$', maxLength: 64 }),
]);
const JsonObject = Type.Record(Type.String({ maxLength: 200 }), Type.Unknown(), { maxProperties: 100 });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Optional(Type.Union([schema, Type.Null()]));

const ModelBody = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 300 }),
  name: Type.String({ maxLength: 300 }),
  description: Type.String({ maxLength: 20_000 }),
  created: Type.Integer({ minimum: 0 }),
  context_length: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
  architecture: JsonObject,
  pricing: Type.Object(
    {
      prompt: Price,
      completion: Price,
      request: Type.Optional(Price),
      input_cache_read: Type.Optional(Price),
      input_cache_write: Type.Optional(Price),
    },
    { additionalProperties: Type.Union([Price, Type.Null()]), maxProperties: 30 },
  ),
  per_request_limits: Nullable(JsonObject),
  top_provider: Nullable(JsonObject),
  upstream_provider_id: Nullable(Type.Union([Type.Integer(), Type.String({ maxLength: 64 })])),
  canonical_slug: Nullable(Type.String({ maxLength: 300 })),
  alias_ids: Nullable(Type.Array(Type.String({ maxLength: 300 }), { maxItems: 100 })),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  forwarded_model_id: Nullable(Type.String({ maxLength: 300 })),
});
type ModelInput = Static<typeof ModelBody>;

const ProviderType = Type.Union(PROVIDER_TYPE_IDS.map((id) => Type.Literal(id)));
const BaseUrl = Type.String({ pattern: '^https?://', maxLength: 2000 });
const Fee = Type.Number({ exclusiveMinimum: 0, maximum: 1000 });
/** Quartet's own fields of a provider, beside Routstr's. */
const QuartetFields = {
  weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  paths: Nullable(Type.Array(Type.String({ pattern: '^/', maxLength: 200 }), { maxItems: 50 })),
  connections: Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  fetch_models: Type.Optional(Type.Boolean()),
};
const ProviderUpdateFields = {
  provider_type: Type.Optional(ProviderType),
  base_url: Type.Optional(BaseUrl),
  api_key: Type.Optional(Type.String({ maxLength: 4096 })),
  api_version: Nullable(Type.String({ maxLength: 100 })),
  enabled: Type.Optional(Type.Boolean()),
  provider_fee: Type.Optional(Fee),
  provider_settings: Nullable(JsonObject),
  ...QuartetFields,
};
const ProviderCreate = Type.Object({
  provider_type: ProviderType,
  base_url: BaseUrl,
  api_key: Type.String({ maxLength: 4096 }),
  api_version: Nullable(Type.String({ maxLength: 100 })),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  provider_fee: Type.Optional(Fee),
  provider_settings: Nullable(JsonObject),
  slug: Type.Optional(Type.String({ maxLength: 64 })),
  ...QuartetFields,
});
const ProviderUpdate = Type.Object({ ...ProviderUpdateFields, slug: Nullable(Type.String({ maxLength: 64 })) });
const ProviderUpdateBySlug = Type.Object({
  ...ProviderUpdateFields,
  slug: Type.String({ maxLength: 64 }),
  new_slug: Nullable(Type.String({ maxLength: 64 })),
});
type ProviderChanges = Static<typeof ProviderUpdate>;

const parseJson = (text: string | null): unknown => (text === null ? null : (JSON.parse(text) as unknown));

/** A provider as Routstr answers it (its key masked), with quartet's fields beside. */
function providerAnswer(row: ProviderRow) {
  return {
    id: Number(row.id),
    slug: row.slug,
    provider_type: row.provider_type,
    base_url: row.base_url,
    api_key: row.api_key ? REDACTED : '',
    api_version: row.api_version,
    enabled: Boolean(row.enabled),
    provider_fee: Number(row.provider_fee),
    provider_settings: parseJson(row.provider_settings),
    weight: row.weight,
    paths: parseJson(row.paths),
    connections: row.connections,
    fetch_models: Boolean(row.fetch_models),
  };
}

/** Routstr's pricing keys, answered as numbers (0 where unset, as Routstr's Pricing defaults them). */
const PRICING_KEYS = ['prompt', 'completion', 'request', 'image', 'web_search', 'internal_reasoning'] as const;

function pricingAnswer(stored: Record<string, string>) {
  const answer: Record<string, number> = {
    ...Object.fromEntries(PRICING_KEYS.map((key) => [key, 0])),
    input_cache_read: 0,
    input_cache_write: 0,
  };
  for (const [key, value] of Object.entries(stored)) answer[key] = Number(value);
  return answer;
}

/** A model as Routstr's admin API answers it (its own prices, before the provider's fee). */
function modelAnswer(row: ModelRow) {
  return {
    id: row.id,
    name: row.name,
    created: Number(row.created),
    description: row.description,
    context_length: Number(row.context_length),
    architecture: parseJson(row.architecture),
    pricing: pricingAnswer(parseJson(row.pricing) as Record<string, string>),
    sats_pricing: null,
    per_request_limits: parseJson(row.per_request_limits),
    top_provider: parseJson(row.top_provider),
    enabled: Boolean(row.enabled),
    upstream_provider_id: Number(row.provider_id),
    canonical_slug: row.canonical_slug,
    alias_ids: parseJson(row.alias_ids),
    forwarded_model_id: row.forwarded_model_id,
  };
}

/**
 * A model body as its row. Prices are kept as exact decimal text; a cache price of 0 means none
 * (as in Routstr: cached input is then billed as input), so a client sending back the 0 it was
 * answered for an unset price does not make cached input free.
 */
function modelRowOf(providerId: number, body: ModelInput, existing: ModelRow | undefined, now: number): ModelRow {
  const pricing: Record<string, string> = Object.create(null);
  for (const [key, value] of Object.entries(body.pricing)) {
    if (value === null || value === undefined) continue;
    const text = String(value).trim();
    if (parseDecimal(text) === null) {
      throw new HttpError(422, `pricing.${key} is not a USD amount`, {
        fields: [{ loc: ['body', 'pricing', key], msg: 'Input should be a non-negative decimal', type: 'decimal' }],
      });
    }
    if ((key === 'input_cache_read' || key === 'input_cache_write') && Number(text) === 0) continue;
    pricing[key] = text;
  }
  pricing.request ??= '0';
  const forwarded = body.forwarded_model_id === undefined ? undefined : body.forwarded_model_id?.trim() || null;
  return {
    provider_id: providerId,
    id: body.id,
    name: body.name,
    description: body.description,
    created: body.created,
    context_length: body.context_length,
    architecture: JSON.stringify(body.architecture),
    pricing: JSON.stringify(pricing),
    per_request_limits: body.per_request_limits ? JSON.stringify(body.per_request_limits) : null,
    top_provider: body.top_provider ? JSON.stringify(body.top_provider) : null,
    canonical_slug: body.canonical_slug ?? null,
    alias_ids: body.alias_ids?.length ? JSON.stringify(body.alias_ids) : null,
    enabled: body.enabled === false ? 0 : 1,
    // As Routstr: left as it was unless the body names it.
    forwarded_model_id: forwarded === undefined ? (existing?.forwarded_model_id ?? null) : forwarded,
    updated_at: now,
  };
}

const notFound = () => operatorError(404, 'provider_not_found', 'Provider not found');
const modelNotFound = () => operatorError(404, 'model_not_found', 'Model not found for this provider');
const slugTaken = () => operatorError(409, 'slug_taken', 'Provider with this slug already exists');

function invalidField(loc: string[], msg: string) {
  return new HttpError(422, msg, { fields: [{ loc: ['body', ...loc], msg, type: 'value_error' }] });
}

function validSlug(value: string, field: string): string {
  const slug = value.trim().toLowerCase();
  if (!SLUG.test(slug) || /^\d+$/.test(slug)) {
    throw invalidField(
      [field],
      'slug must be 3-64 chars, lowercase letters/digits/hyphens, not all digits, ' +
        'and may not start or end with a hyphen',
    );
  }
  return slug;
}

function validBaseUrl(value: string): string {
  try {
    const url = new URL(value);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && !url.search && !url.hash && !url.username) {
      return value;
    }
  } catch {
    // Answered below.
  }
  throw invalidField(['base_url'], 'base_url must be an http(s) URL without query, fragment or credentials');
}

/** The provider a path names: its id (digits) or its slug. */
async function providerOf(deps: OperatorDeps, ref: string): Promise<ProviderRow> {
  const db = deps.db.kysely;
  const row = /^\d{1,15}$/.test(ref)
    ? await providerById(db, Number(ref))
    : await providerBySlug(db, ref.toLowerCase());
  if (!row) throw notFound();
  return row;
}

/** A free slug from the provider type: `openai`, `openai-2`, … */
async function allocateSlug(deps: OperatorDeps, type: string): Promise<string> {
  const taken = new Set(await slugsLike(deps.db.kysely, type));
  let slug = type.length >= 3 ? type : `${type}-provider`;
  for (let n = 2; taken.has(slug); n++) slug = `${type}-${n}`;
  return slug;
}

/**
 * Checks a provider before it is saved: `GET {base}/v1/models` with its key must answer 2xx within
 * a few seconds. Unreachable, refused key or any other answer: 400 with the reason, nothing saved.
 */
async function checkProvider(row: NewProvider): Promise<void> {
  const provider = providerConfigOf({ ...row, id: 0 }, []);
  const url = `${provider.baseUrl.replace(/\/+$/, '')}/v1/models`;
  let status: number;
  try {
    const response = await undiciRequest(url, {
      headers: withProviderKey(provider, ['accept', 'application/json'], false),
      headersTimeout: CHECK_TIMEOUT_MS,
      bodyTimeout: CHECK_TIMEOUT_MS,
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
    status = response.statusCode;
    discardBody(response.body);
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `no answer within ${CHECK_TIMEOUT_MS / 1000} s`
        : (error as Error).message;
    throw operatorError(400, 'provider_unreachable', `The provider cannot be reached at ${url}: ${reason}`);
  }
  if (status === 401 || status === 403) {
    throw operatorError(
      400,
      'provider_key_refused',
      `The provider refused the API key (GET ${url} answered ${status})`,
    );
  }
  if (status < 200 || status > 299) {
    throw operatorError(400, 'provider_check_failed', `The provider answered ${status} to GET ${url}`);
  }
}

/** Runs a change, its audit entry and the version bump in one transaction; then applies it here. */
export async function change<T>(
  deps: RuntimeDeps,
  work: (trx: Parameters<Parameters<typeof writeTransaction>[1]>[0], now: number) => Promise<T>,
): Promise<T> {
  const now = Date.now();
  let result: T;
  try {
    result = await writeTransaction(deps.db, async (trx) => {
      const value = await work(trx, now);
      await bumpVersion(trx, now);
      return value;
    });
  } catch (error) {
    // Two changes racing for one slug: the unique index decides.
    if (isUniqueViolation(error)) throw slugTaken();
    throw error;
  }
  await deps.runtime.reload();
  return result;
}

/** The provider row a create or update makes, from the body over `base`. */
function providerRowOf(base: NewProvider, body: ProviderChanges, now: number): NewProvider {
  const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));
  return {
    ...base,
    ...(body.provider_type !== undefined ? { provider_type: body.provider_type } : {}),
    ...(body.base_url !== undefined ? { base_url: validBaseUrl(body.base_url) } : {}),
    ...(body.api_key !== undefined ? { api_key: body.api_key } : {}),
    ...(body.api_version !== undefined ? { api_version: body.api_version } : {}),
    ...(body.enabled !== undefined ? { enabled: body.enabled ? 1 : 0 } : {}),
    ...(body.provider_fee !== undefined ? { provider_fee: String(body.provider_fee) } : {}),
    ...(body.provider_settings !== undefined ? { provider_settings: json(body.provider_settings) } : {}),
    ...(body.weight !== undefined ? { weight: body.weight } : {}),
    ...(body.paths !== undefined ? { paths: json(body.paths) } : {}),
    ...(body.connections !== undefined ? { connections: body.connections } : {}),
    ...(body.fetch_models !== undefined ? { fetch_models: body.fetch_models ? 1 : 0 } : {}),
    updated_at: now,
  };
}

export function providerRoutes(deps: RuntimeDeps) {
  const db = deps.db.kysely;

  /** An update by id or by slug: checked when where or how it is reached changed, then saved and audited. */
  const update = async (actor: string, row: ProviderRow, body: ProviderChanges, newSlug: string | null) => {
    const id = Number(row.id);
    const { id: _id, ...base } = row;
    const next = providerRowOf(base, body, Date.now());
    if (newSlug !== null) next.slug = validSlug(newSlug, 'slug');
    const reached =
      next.base_url !== row.base_url || next.api_key !== row.api_key || next.provider_type !== row.provider_type;
    if (reached || (next.enabled && !row.enabled)) await checkProvider(next);
    await change(deps, async (trx) => {
      if (next.slug !== row.slug && (await providerBySlug(trx, next.slug))) throw slugTaken();
      if (!(await providerById(trx, id))) throw notFound();
      await updateProvider(trx, id, next);
      await recordAudit(trx, {
        actor,
        action: 'provider.update',
        target: `provider:${id}`,
        before: providerAnswer(row),
        after: providerAnswer({ ...next, id }),
      });
    });
    return providerAnswer({ ...next, id });
  };

  /** Inserts or replaces models of a provider, audited. */
  const upsertModels = async (actor: string, provider: ProviderRow, bodies: ModelInput[]) => {
    const providerId = Number(provider.id);
    return change(deps, async (trx, now) => {
      const rows: ModelRow[] = [];
      for (const body of bodies) {
        const existing = await modelOf(trx, providerId, body.id);
        const row = modelRowOf(providerId, body, existing, now);
        await upsertModel(trx, row);
        await recordAudit(trx, {
          actor,
          action: existing ? 'model.update' : 'model.create',
          target: `provider:${providerId}/model:${body.id}`,
          before: existing ? modelAnswer(existing) : undefined,
          after: modelAnswer(row),
        });
        rows.push(row);
      }
      return rows;
    });
  };

  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/admin/api/upstream-providers',
      { schema: { summary: 'The upstream providers (keys masked)' } },
      async () => (await allProviders(db)).map(providerAnswer),
    );

    app.post(
      '/admin/api/upstream-providers',
      {
        schema: {
          summary: 'Add an upstream provider (checked first: it must answer GET /v1/models with its key)',
          body: ProviderCreate,
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const body = request.body;
        const now = Date.now();
        const slug = body.slug ? validSlug(body.slug, 'slug') : await allocateSlug(deps, body.provider_type);
        const row = providerRowOf(
          {
            slug,
            provider_type: body.provider_type,
            base_url: validBaseUrl(body.base_url),
            api_key: body.api_key,
            api_version: null,
            enabled: 1,
            provider_fee: '1',
            provider_settings: null,
            weight: 1,
            paths: null,
            connections: null,
            fetch_models: 0,
            created_at: now,
            updated_at: now,
          },
          body,
          now,
        );
        if (await providerTwin(db, row.base_url, row.api_key, null)) {
          throw operatorError(409, 'provider_exists', 'Provider with this base URL and API key already exists');
        }
        if (await providerBySlug(db, slug)) throw slugTaken();
        await checkProvider(row);
        const id = await change(deps, async (trx) => {
          if (await providerBySlug(trx, slug)) throw slugTaken();
          const id = await insertProvider(trx, row);
          await recordAudit(trx, {
            actor,
            action: 'provider.create',
            target: `provider:${id}`,
            after: providerAnswer({ ...row, id }),
          });
          return id;
        });
        return providerAnswer({ ...row, id });
      },
    );

    app.get(
      '/admin/api/upstream-providers/:provider_id',
      { schema: { summary: 'One upstream provider, by id or slug', params: ProviderParams } },
      async (request) => providerAnswer(await providerOf(deps, request.params.provider_id)),
    );

    app.patch(
      '/admin/api/upstream-providers/:provider_id',
      {
        schema: {
          summary: 'Change an upstream provider (checked again when its URL, key or type change)',
          params: ProviderParams,
          body: ProviderUpdate,
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const row = await providerOf(deps, request.params.provider_id);
        return update(actor, row, request.body, request.body.slug ?? null);
      },
    );

    app.patch(
      '/admin/api/upstream-providers',
      { schema: { summary: 'Change an upstream provider named by its slug', body: ProviderUpdateBySlug } },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const row = await providerBySlug(db, validSlug(request.body.slug, 'slug'));
        if (!row) throw notFound();
        return update(actor, row, { ...request.body, slug: undefined }, request.body.new_slug ?? null);
      },
    );

    app.delete(
      '/admin/api/upstream-providers/:provider_id',
      { schema: { summary: 'Remove an upstream provider and its models', params: ProviderParams } },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const row = await providerOf(deps, request.params.provider_id);
        const id = Number(row.id);
        await change(deps, async (trx) => {
          await deleteProvider(trx, id);
          await recordAudit(trx, {
            actor,
            action: 'provider.delete',
            target: `provider:${id}`,
            before: providerAnswer(row),
          });
        });
        return { ok: true, deleted_id: id };
      },
    );

    app.get(
      '/admin/api/provider-types',
      { schema: { summary: 'The provider types this node forwards to' } },
      async () =>
        PROVIDER_TYPES.map((type) => ({
          id: type.id,
          name: type.name,
          default_base_url: type.default_base_url,
          fixed_base_url: false,
          platform_url: type.platform_url,
          can_create_account: false,
          can_topup: false,
          can_show_balance: false,
        })),
    );

    // Routstr fetches OpenRouter's public list here; this node never reaches the network unasked, so
    // its presets are the models of PROXY_MODELS_FILE (OpenRouter's format; the bundled list by default).
    app.get(
      '/admin/api/openrouter-presets',
      { schema: { summary: 'Model presets: the models of PROXY_MODELS_FILE' } },
      async () => {
        const now = Date.now();
        return [...loadModels(deps.config.forward.modelsFile).values()].map((model) =>
          modelAnswer(modelRow(model, { forwarded: null, now })),
        );
      },
    );

    app.get(
      '/admin/api/upstream-providers/:provider_id/models',
      {
        schema: {
          summary: "A provider's models here (db_models) and those its own list offers besides (remote_models)",
          params: ProviderParams,
        },
      },
      async (request) => {
        const row = await providerOf(deps, request.params.provider_id);
        const models = await modelsOf(db, Number(row.id));
        const known = new Set(models.map((model) => model.id));
        let remote: ReturnType<typeof modelAnswer>[] = [];
        try {
          const config: ProviderConfig = providerConfigOf(row, []);
          const listed = await fetchModelList(config, { ...deps.config.forward, upstreamTimeoutMs: CHECK_TIMEOUT_MS });
          const now = Math.floor(Date.now() / 1000);
          remote = [...listed.values()]
            .filter((model) => !known.has(model.id))
            .map((model) =>
              modelAnswer({
                provider_id: Number(row.id),
                id: model.id,
                name: model.name,
                description: '',
                created: now,
                context_length: model.contextLength ?? 0,
                architecture: '{}',
                pricing: JSON.stringify(model.usd),
                per_request_limits: null,
                top_provider: null,
                canonical_slug: null,
                alias_ids: null,
                enabled: 1,
                forwarded_model_id: null,
                updated_at: 0,
              }),
            );
        } catch (error) {
          // As Routstr: the list is left empty when the provider's cannot be read.
          request.log.warn(
            { provider: row.slug, err: (error as Error).message },
            'reading a provider model list failed',
          );
        }
        return {
          provider: { id: Number(row.id), provider_type: row.provider_type, base_url: row.base_url },
          db_models: models.map(modelAnswer),
          remote_models: remote,
        };
      },
    );

    const upsertSchema = {
      summary: "Add or replace one of a provider's models (with its prices, USD per token)",
      params: ProviderParams,
      body: ModelBody,
    };
    app.post('/admin/api/upstream-providers/:provider_id/models', { schema: upsertSchema }, async (request) => {
      const { actor } = operatorOfRequest(request);
      const provider = await providerOf(deps, request.params.provider_id);
      const [row] = await upsertModels(actor, provider, [request.body]);
      return modelAnswer(row);
    });
    // Routstr's older PATCH: the same upsert, the model named by the body.
    app.patch(
      '/admin/api/upstream-providers/:provider_id/models/*',
      { schema: { ...upsertSchema, params: ModelParams } },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const provider = await providerOf(deps, request.params.provider_id);
        const [row] = await upsertModels(actor, provider, [request.body]);
        return modelAnswer(row);
      },
    );

    app.get(
      '/admin/api/upstream-providers/:provider_id/models/*',
      { schema: { summary: "One of a provider's models", params: ModelParams } },
      async (request) => {
        const provider = await providerOf(deps, request.params.provider_id);
        const row = await modelOf(db, Number(provider.id), request.params['*']);
        if (!row) throw modelNotFound();
        return modelAnswer(row);
      },
    );

    app.delete(
      '/admin/api/upstream-providers/:provider_id/models/*',
      { schema: { summary: "Remove one of a provider's models", params: ModelParams } },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const provider = await providerOf(deps, request.params.provider_id);
        const providerId = Number(provider.id);
        const id = request.params['*'];
        await change(deps, async (trx) => {
          const existing = await modelOf(trx, providerId, id);
          if (!existing) throw modelNotFound();
          await deleteModels(trx, providerId, id);
          await recordAudit(trx, {
            actor,
            action: 'model.delete',
            target: `provider:${providerId}/model:${id}`,
            before: modelAnswer(existing),
          });
        });
        return { ok: true, deleted_id: id };
      },
    );

    app.delete(
      '/admin/api/upstream-providers/:provider_id/models',
      { schema: { summary: "Remove every one of a provider's models", params: ProviderParams } },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const provider = await providerOf(deps, request.params.provider_id);
        const providerId = Number(provider.id);
        const deleted = await change(deps, async (trx) => {
          const count = await deleteModels(trx, providerId, null);
          await recordAudit(trx, {
            actor,
            action: 'model.delete_all',
            target: `provider:${providerId}`,
            before: { deleted: count },
          });
          return count;
        });
        return { ok: true, deleted };
      },
    );

    app.post(
      '/admin/api/upstream-providers/:provider_id/batch-override',
      {
        schema: {
          summary: "Add or replace many of a provider's models at once (one transaction)",
          params: ProviderParams,
          body: Type.Object({ models: Type.Array(ModelBody, { maxItems: MAX_MODELS_PER_CALL }) }),
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const provider = await providerOf(deps, request.params.provider_id);
        const rows = await upsertModels(actor, provider, request.body.models);
        return { ok: true, count: rows.length, message: `Successfully batch overridden ${rows.length} models` };
      },
    );

    // Provider accounts (balances, top-ups, account creation, PPQ's auto top-up, a Routstr upstream's
    // refund) are features of provider types this node does not run: answered 400 in the API's
    // error shape, as Routstr answers a provider type without them (404 for an unknown provider).
    const unsupported = (message: string) => async (request: { params: { provider_id: string } }) => {
      await providerOf(deps, request.params.provider_id);
      throw operatorError(400, 'not_supported', message);
    };
    const accountRoutes: [method: 'get' | 'post', path: string, message: string][] = [
      ['get', 'balance', 'Provider does not support balance checking'],
      ['post', 'topup', 'Provider does not support top-up'],
      ['post', 'topup-token', 'Provider does not support top-up with a token'],
      ['get', 'topup/:invoice_id/status', 'Provider does not support top-up status checking'],
      ['get', 'ppq-auto-topup', 'Provider is not PPQ'],
      ['post', 'ppq-auto-topup/release', 'Provider is not PPQ'],
      ['post', 'routstr/refund', 'Refund from an upstream provider is not supported by this node'],
    ];
    for (const [method, path, message] of accountRoutes) {
      app[method](
        `/admin/api/upstream-providers/:provider_id/${path}`,
        {
          schema: {
            summary: `Not supported here: ${message}`,
            params: Type.Object({ provider_id: Type.String({ maxLength: 64 }) }, { additionalProperties: true }),
          },
        },
        unsupported(message),
      );
    }
    app.post(
      '/admin/api/upstream-providers/create-account',
      {
        schema: {
          summary: 'Not supported here: account creation with a provider',
          body: Type.Object({ provider_type: Type.String({ maxLength: 100 }) }),
        },
      },
      async (request) => {
        if (!PROVIDER_TYPE_IDS.includes(request.body.provider_type)) {
          throw operatorError(404, 'provider_type_not_found', 'Provider type not found');
        }
        throw operatorError(400, 'not_supported', 'Provider does not support account creation');
      },
    );
  };
}
