// The run-time configuration (docs/proxy-operator.md, "Run-time configuration"): providers, their
// models and prices, and the node's settings live in the database. A fresh database is seeded from
// PROXY_PROVIDERS_FILE / PROXY_UPSTREAM_URL, PROXY_MODELS_FILE and the environment, once; the same
// seed can be imported again. Rows become the ProviderConfig[] the forward path has always used.
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import type { ProxyConfig } from '../common/config.js';
import { nostrKeyOf, type NostrKey } from '../common/nostr-config.js';
import { defaultPaths, type ProviderConfig, type ProviderKind } from '../common/providers.js';
import {
  allModels,
  allProviders,
  allSettings,
  bumpVersion,
  claimSeed,
  configVersion,
  deleteAllProviders,
  insertProvider,
  type ModelRow,
  type NewProvider,
  type ProviderRow,
  putSetting,
  upsertModel,
} from './store.js';

/** Routstr's provider types this node forwards to, and how (the kind of ../common/providers.ts). */
export const PROVIDER_TYPES: readonly {
  id: string;
  name: string;
  kind: ProviderKind;
  default_base_url: string;
  platform_url: string | null;
}[] = [
  {
    id: 'openai',
    name: 'Openai',
    kind: 'openai',
    default_base_url: 'https://api.openai.com/v1',
    platform_url: 'https://platform.openai.com/api-keys',
  },
  {
    id: 'anthropic',
    name: 'Anthropic',
    kind: 'anthropic',
    default_base_url: 'https://api.anthropic.com/v1',
    platform_url: 'https://console.anthropic.com/settings/keys',
  },
  {
    id: 'openrouter',
    name: 'Openrouter',
    kind: 'openrouter',
    default_base_url: 'https://openrouter.ai/api/v1',
    platform_url: 'https://openrouter.ai/settings/keys',
  },
  // OpenAI-compatible services of Routstr's list, at their OpenAI-compatible addresses.
  ...(
    [
      ['groq', 'Groq', 'https://api.groq.com/openai/v1', 'https://console.groq.com/keys'],
      ['fireworks', 'Fireworks', 'https://api.fireworks.ai/inference/v1', 'https://fireworks.ai/account/api-keys'],
      ['perplexity', 'Perplexity', 'https://api.perplexity.ai', 'https://www.perplexity.ai/settings/api'],
      ['x-ai', 'xAI', 'https://api.x.ai/v1', 'https://console.x.ai'],
      [
        'gemini',
        'Gemini',
        'https://generativelanguage.googleapis.com/v1beta/openai',
        'https://aistudio.google.com/apikey',
      ],
      ['ollama', 'Ollama', 'http://localhost:11434/v1', null],
    ] as const
  ).map(([id, name, url, platform]) => ({
    id,
    name,
    kind: 'openai' as const,
    default_base_url: url,
    platform_url: platform,
  })),
  // Any OpenAI-compatible server (Routstr's `custom` and `generic`); another Routstr (or quartet) node is one.
  { id: 'generic', name: 'Generic', kind: 'openai', default_base_url: '', platform_url: null },
  { id: 'custom', name: 'Custom', kind: 'openai', default_base_url: '', platform_url: null },
  { id: 'routstr', name: 'Routstr', kind: 'openai', default_base_url: '', platform_url: null },
];

export const PROVIDER_TYPE_IDS = PROVIDER_TYPES.map((type) => type.id);

export function kindOfType(type: string): ProviderKind {
  return PROVIDER_TYPES.find((t) => t.id === type)?.kind ?? 'openai';
}

/**
 * The URL requests are sent to: Routstr's base URLs end in /v1 (https://api.openai.com/v1), while
 * callers' paths here carry it (/v1/chat/completions), so a trailing /v1 is dropped.
 */
export function forwardBase(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** A model's price and limits as the models file gives them (billing's Model has this shape). */
export interface ModelSeed {
  id: string;
  name: string;
  contextLength: number | null;
  maxCompletionTokens: number | null;
  usd: Readonly<Partial<Record<(typeof SEEDED_PRICES)[number], string>>>;
}

const SEEDED_PRICES = ['prompt', 'completion', 'request', 'input_cache_read', 'input_cache_write'] as const;

/** The node's settings that live in the database; JSON values by Routstr's key names. */
export interface NodeSettings {
  name: string;
  description: string;
  http_url: string;
  onion_url: string;
  relays: string[];
  /** The Nostr listing's `d` tag; '' derives it from the key. */
  provider_id: string;
  /** The Nostr secret key set through PATCH /admin/api/nsec ('' cleared it); null: NOSTR_NSEC's. */
  nsec: string | null;
}

export const EDITABLE_SETTINGS = ['name', 'description', 'http_url', 'onion_url', 'relays', 'provider_id'] as const;

/** Everything a process builds its providers, prices and settings from. */
export interface RuntimeSnapshot {
  version: number;
  providers: ProviderConfig[];
  settings: NodeSettings;
}

const parseJson = (text: string | null): unknown => (text === null ? null : (JSON.parse(text) as unknown));

/** A provider's row and enabled models as the forward path's ProviderConfig. */
export function providerConfigOf(row: ProviderRow, models: ModelRow[]): ProviderConfig {
  const kind = kindOfType(row.provider_type);
  const paths = parseJson(row.paths) as string[] | null;
  const fee = row.provider_fee === '1' ? null : row.provider_fee;
  return {
    name: row.slug,
    kind,
    baseUrl: forwardBase(row.base_url),
    key: row.api_key || null,
    weight: row.weight,
    paths: paths ?? defaultPaths(kind),
    models: models
      .filter((model) => model.enabled)
      .map((model) => ({ id: model.id, upstreamId: model.forwarded_model_id ?? model.id, entry: modelEntry(model) })),
    fetchMarkup: row.fetch_models ? row.provider_fee : null,
    connections: row.connections,
    markup: fee,
  };
}

/** A model row in the models file's format (OpenRouter's), which the catalog prices. */
function modelEntry(model: ModelRow): Record<string, unknown> {
  return {
    id: model.id,
    name: model.name,
    context_length: model.context_length || null,
    pricing: parseJson(model.pricing),
    top_provider: parseJson(model.top_provider),
  };
}

export function settingsOf(stored: Map<string, string>, config: ProxyConfig): NodeSettings {
  const read = <T>(key: string, fallback: T): T => (stored.has(key) ? (JSON.parse(stored.get(key)!) as T) : fallback);
  const seeded = seedSettings(config);
  return {
    name: read('name', seeded.name),
    description: read('description', seeded.description),
    http_url: read('http_url', seeded.http_url),
    onion_url: read('onion_url', seeded.onion_url),
    relays: read('relays', seeded.relays),
    provider_id: read('provider_id', seeded.provider_id),
    nsec: read<string | null>('nsec', null),
  };
}

/** The settings as the environment gives them. */
export function seedSettings(config: ProxyConfig): Omit<NodeSettings, 'nsec'> {
  const derived = config.nostr.key?.pubkey.slice(0, 12) ?? null;
  return {
    name: config.name,
    description: config.description,
    http_url: config.httpUrl ?? '',
    onion_url: config.onionUrl ?? '',
    relays: config.nostr.relays,
    provider_id: config.nostr.providerId !== null && config.nostr.providerId !== derived ? config.nostr.providerId : '',
  };
}

/** Reads the whole configuration; null while the database has not been seeded. */
export async function loadSnapshot(db: Executor, config: ProxyConfig): Promise<RuntimeSnapshot | null> {
  const version = await configVersion(db);
  if (version === null) return null;
  const [providers, models, settings] = await Promise.all([allProviders(db), allModels(db), allSettings(db)]);
  const byProvider = new Map<number, ModelRow[]>();
  for (const model of models) {
    const list = byProvider.get(Number(model.provider_id)) ?? [];
    list.push(model);
    byProvider.set(Number(model.provider_id), list);
  }
  return {
    version,
    providers: providers
      .filter((row) => row.enabled)
      .map((row) => providerConfigOf(row, byProvider.get(Number(row.id)) ?? [])),
    settings: settingsOf(settings, config),
  };
}

/** What the files and the environment say: the seed of a fresh database, and what an import writes. */
export interface Seed {
  providers: { row: NewProvider; models: ModelRow[] }[];
  settings: Omit<NodeSettings, 'nsec'>;
}

/** A slug Routstr's pattern accepts, from a name of the providers file. */
function slugOf(name: string, taken: Set<string>): string {
  let base = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 56);
  if (base.length < 3 || /^\d+$/.test(base)) base = `provider-${base}`.replace(/-+$/, '');
  let slug = base;
  for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`;
  taken.add(slug);
  return slug;
}

/**
 * The seed: each provider of the files (or PROXY_UPSTREAM_URL's one) with every model it serves
 * written out with its price, and the settings of the environment.
 */
export function buildSeed(
  fileProviders: ProviderConfig[],
  baseModels: Map<string, ModelSeed>,
  settings: Omit<NodeSettings, 'nsec'>,
  now: number,
): Seed {
  const taken = new Set<string>();
  const providers = fileProviders.map((provider) => {
    const row: NewProvider = {
      slug: slugOf(provider.name, taken),
      provider_type: provider.kind,
      base_url: provider.baseUrl,
      api_key: provider.key ?? '',
      api_version: null,
      enabled: 1,
      provider_fee: provider.fetchMarkup ?? '1',
      provider_settings: null,
      weight: provider.weight,
      paths: provider.paths === defaultPaths(provider.kind) ? null : JSON.stringify(provider.paths),
      connections: provider.connections,
      fetch_models: provider.fetchMarkup === null ? 0 : 1,
      created_at: now,
      updated_at: now,
    };
    const listed =
      provider.models ??
      (provider.fetchMarkup === null ? [...baseModels.keys()].map((id) => ({ id, upstreamId: id, entry: null })) : []);
    const models = listed.map((model) => {
      const seed = model.entry ? seedFromEntry(model.entry, model.id) : baseModels.get(model.id);
      return modelRow(
        seed ?? { id: model.id, name: model.id, contextLength: null, maxCompletionTokens: null, usd: {} },
        {
          forwarded: model.upstreamId === model.id ? null : model.upstreamId,
          now,
        },
      );
    });
    return { row, models };
  });
  return { providers, settings };
}

function seedFromEntry(entry: Record<string, unknown>, id: string): ModelSeed {
  const pricing = (entry.pricing ?? {}) as Record<string, unknown>;
  const usd: Partial<Record<(typeof SEEDED_PRICES)[number], string>> = {};
  for (const name of SEEDED_PRICES) {
    const value = Object.hasOwn(pricing, name) ? pricing[name] : undefined;
    if (typeof value === 'string' || typeof value === 'number') usd[name] = String(value);
  }
  const top = (entry.top_provider ?? {}) as Record<string, unknown>;
  const positive = (value: unknown) =>
    typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
  return {
    id,
    name: typeof entry.name === 'string' ? entry.name : id,
    contextLength: positive(entry.context_length),
    maxCompletionTokens: positive(top.max_completion_tokens),
    usd,
  };
}

/** A model's row as seeding writes it (and as the operator API's presets show the models file). */
export function modelRow(seed: ModelSeed, { forwarded, now }: { forwarded: string | null; now: number }): ModelRow {
  const pricing: Record<string, string> = {};
  for (const [name, value] of Object.entries(seed.usd)) if (value !== undefined) pricing[name] = value;
  return {
    provider_id: 0,
    id: seed.id,
    name: seed.name,
    description: '',
    created: Math.floor(now / 1000),
    context_length: seed.contextLength ?? 0,
    architecture: JSON.stringify({ modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] }),
    pricing: JSON.stringify(pricing),
    per_request_limits: null,
    top_provider:
      seed.maxCompletionTokens === null ? null : JSON.stringify({ max_completion_tokens: seed.maxCompletionTokens }),
    canonical_slug: null,
    alias_ids: null,
    enabled: 1,
    forwarded_model_id: forwarded,
    updated_at: now,
  };
}

async function writeSeed(trx: Executor, seed: Seed, now: number): Promise<void> {
  for (const { row, models } of seed.providers) {
    const id = await insertProvider(trx, row);
    for (const model of models) await upsertModel(trx, { ...model, provider_id: id });
  }
  for (const key of EDITABLE_SETTINGS) await putSetting(trx, key, JSON.stringify(seed.settings[key]), now);
}

/**
 * Seeds a fresh database (no version row yet) from the files and environment; several processes
 * starting together seed it once (the version row's insert decides). True when this one did.
 */
export async function seedIfFresh(db: Database, seed: () => Seed, now = Date.now()): Promise<boolean> {
  if ((await configVersion(db.kysely)) !== null) return false;
  return writeTransaction(db, async (trx) => {
    if (!(await claimSeed(trx, now))) return false;
    await writeSeed(trx, seed(), now);
    return true;
  });
}

/** Replaces the providers, models and settings with the seed (`quartet` import), in `trx`; the Nostr key stays. */
export async function replaceWithSeed(trx: Executor, seed: Seed, now = Date.now()): Promise<void> {
  await claimSeed(trx, now);
  await deleteAllProviders(trx);
  await writeSeed(trx, seed, now);
  await bumpVersion(trx, now);
}

/**
 * Puts the stored settings on the configuration every part reads (GET /v1/info, the Nostr listing):
 * the same object, its fields replaced. `envKey` is NOSTR_NSEC's key, used while no nsec is stored.
 * True when something the Nostr announcement says changed (it is then started again).
 */
export function applySettings(config: ProxyConfig, settings: NodeSettings, envKey: NostrKey | null): boolean {
  let key = envKey;
  if (settings.nsec !== null) {
    try {
      key = settings.nsec === '' ? null : nostrKeyOf(settings.nsec);
    } catch {
      // Checked before it was stored; a key that still cannot be read leaves the node without one.
      key = null;
    }
  }
  const before = JSON.stringify([config.name, config.description, config.httpUrl, config.onionUrl, config.nostr]);
  config.name = settings.name;
  config.description = settings.description;
  config.httpUrl = settings.http_url || null;
  config.onionUrl = settings.onion_url || null;
  config.nostr.relays = settings.relays;
  config.nostr.key = key;
  config.nostr.providerId = settings.provider_id || (key?.pubkey.slice(0, 12) ?? null);
  return before !== JSON.stringify([config.name, config.description, config.httpUrl, config.onionUrl, config.nostr]);
}
