// Which provider serves which model, and the node's price of each (docs/proxy-billing.md, "Providers").
// A provider serves the models it lists (priced in the providers file, or by PROXY_MODELS_FILE), every
// model of PROXY_MODELS_FILE when it lists none, and those of its own model list when fetched (its
// OpenRouter-format prices times the operator's markup). A model served by several providers is priced
// at the highest of their prices, field by field: a caller pays the same whichever provider answers,
// and no provider costs the node more than the caller pays.
import { request } from 'undici';
import { ConfigError } from '../../env.js';
import type { ForwardConfig } from '../common/forward-config.js';
import { discardBody } from './forward.js';
import { field } from '../../json-fields.js';
import { type Model, parseDecimal, parseModels, type UsdPricing } from '../billing/pricing.js';
import { type ProviderConfig, type ProviderModel, withProviderKey } from '../common/providers.js';

/** The largest model list read from a provider. */
const MAX_LIST_BYTES = 16 * 1024 * 1024;
const MAX_FETCHED = 10_000;
/** The longest a model list may take: the node's start waits for it. */
const LIST_TIMEOUT_MS = 10_000;

interface Served {
  model: Model;
  upstreamId: string;
}

export class ProviderCatalog {
  /** Per provider: the models it serves by the node's id; null: every model of `base`. */
  private served = new Map<string, Map<string, Served> | null>();
  private fetched = new Map<string, Map<string, Served>>();
  private union = new Map<string, Model>();

  constructor(
    private readonly providers: ProviderConfig[],
    private readonly base: Map<string, Model>,
  ) {
    for (const provider of providers) this.served.set(provider.name, this.listed(provider));
    this.rebuild();
  }

  /** Every model some provider serves, at the node's price (the union, see above). */
  get models(): Map<string, Model> {
    return this.union;
  }

  /** The id `provider` expects for the node's model `id`; null when it does not serve it. */
  upstreamId(provider: string, id: string): string | null {
    const own = this.served.get(provider);
    const listed = own === null ? (this.base.has(id) ? { upstreamId: id } : undefined) : own?.get(id);
    return (listed ?? this.fetched.get(provider)?.get(id))?.upstreamId ?? null;
  }

  private listed(provider: ProviderConfig): Map<string, Served> | null {
    if (provider.models === null) return provider.fetchMarkup === null ? null : new Map();
    const served = new Map<string, Served>();
    for (const entry of provider.models) {
      served.set(entry.id, { model: this.priced(provider, entry), upstreamId: entry.upstreamId });
    }
    return served;
  }

  private priced(provider: ProviderConfig, entry: ProviderModel): Model {
    if (entry.entry) {
      const source = `PROXY_PROVIDERS_FILE (${provider.name})`;
      const model = parseModels([entry.entry], source).get(entry.id)!;
      return provider.markup ? withMarkup(model, provider.markup) : model;
    }
    const model = this.base.get(entry.id);
    if (!model) {
      throw new ConfigError(
        'PROXY_PROVIDERS_FILE',
        `${provider.name}: model "${entry.id}" has no "pricing" and is not in PROXY_MODELS_FILE`,
      );
    }
    return model;
  }

  private rebuild() {
    const union = new Map<string, Model>();
    const add = (model: Model) =>
      union.set(model.id, union.has(model.id) ? highest(union.get(model.id)!, model) : model);
    for (const provider of this.providers) {
      const own = this.served.get(provider.name);
      if (own === null) this.base.forEach(add);
      else own?.forEach(({ model }) => add(model));
      this.fetched.get(provider.name)?.forEach(({ model }) => add(model));
    }
    this.union = union;
  }

  /**
   * Takes the model lists `previous` read for the providers that read theirs the same way here (a
   * reload of the run-time configuration need not wait for them); false when some provider here has
   * none yet (then refresh()).
   */
  adoptFetched(previous: ProviderCatalog): boolean {
    const before = new Map(previous.providers.map((p) => [p.name, p]));
    let complete = true;
    for (const provider of this.providers) {
      if (provider.fetchMarkup === null) continue;
      const old = before.get(provider.name);
      const list = previous.fetched.get(provider.name);
      const same =
        old !== undefined &&
        old.baseUrl === provider.baseUrl &&
        old.key === provider.key &&
        old.kind === provider.kind &&
        old.fetchMarkup === provider.fetchMarkup;
      if (same && list) this.fetched.set(provider.name, list);
      else complete = false;
    }
    this.rebuild();
    return complete;
  }

  /** Whether some provider's models are read from its model list (refreshed periodically). */
  get fetches(): boolean {
    return this.providers.some((p) => p.fetchMarkup !== null);
  }

  /**
   * Reads the model list of every provider with `fetch_models`; a provider that cannot be read keeps
   * what it served before (logged).
   */
  async refresh(config: ForwardConfig, log: { warn(obj: object, msg: string): void }): Promise<void> {
    for (const provider of this.providers) {
      if (provider.fetchMarkup === null) continue;
      try {
        const models = await fetchModelList(provider, config);
        const served = new Map<string, Served>();
        for (const model of models.values()) {
          served.set(model.id, { model: withMarkup(model, provider.fetchMarkup), upstreamId: model.id });
        }
        this.fetched.set(provider.name, served);
      } catch (error) {
        log.warn({ provider: provider.name, err: (error as Error).message }, 'reading a provider model list failed');
      }
    }
    this.rebuild();
  }
}

/** Per field, the higher of two prices of one model (and the larger limits, which the reservation covers). */
function highest(a: Model, b: Model): Model {
  const more = (x: string, y: string) => {
    const fx = parseDecimal(x)!;
    const fy = parseDecimal(y)!;
    return fx.num * fy.den >= fy.num * fx.den ? x : y;
  };
  const cachePrice = (name: 'input_cache_read' | 'input_cache_write') =>
    a.usd[name] === undefined && b.usd[name] === undefined
      ? {}
      : { [name]: more(a.usd[name] ?? a.usd.prompt, b.usd[name] ?? b.usd.prompt) };
  const larger = (x: number | null, y: number | null) => (x === null || y === null ? null : Math.max(x, y));
  return {
    ...a,
    contextLength: larger(a.contextLength, b.contextLength),
    maxCompletionTokens: larger(a.maxCompletionTokens, b.maxCompletionTokens),
    usd: {
      prompt: more(a.usd.prompt, b.usd.prompt),
      completion: more(a.usd.completion, b.usd.completion),
      request: more(a.usd.request, b.usd.request),
      // A provider without a cache price charges cached input as input.
      ...cachePrice('input_cache_read'),
      ...cachePrice('input_cache_write'),
    },
  };
}

/** `a × b` for non-negative decimals as text, exactly (a product of finite decimals is a finite decimal). */
export function multiplyDecimal(a: string, b: string): string {
  const split = (text: string) => {
    const fraction = parseDecimal(text)!;
    // A finite decimal's reduced denominator divides 10^k; find k.
    let scale = 0;
    while (10n ** BigInt(scale) % fraction.den !== 0n) scale++;
    return { digits: (fraction.num * 10n ** BigInt(scale)) / fraction.den, scale };
  };
  const x = split(a);
  const y = split(b);
  const digits = (x.digits * y.digits).toString();
  const scale = x.scale + y.scale;
  if (scale === 0) return digits;
  const padded = digits.padStart(scale + 1, '0');
  const text = `${padded.slice(0, -scale)}.${padded.slice(-scale)}`.replace(/0+$/, '').replace(/\.$/, '');
  return text;
}

function withMarkup(model: Model, markup: string): Model {
  if (markup === '1') return model;
  const entries = Object.entries(model.usd).map(([name, value]) => [name, multiplyDecimal(value as string, markup)]);
  return { ...model, usd: Object.fromEntries(entries) as UsdPricing };
}

/**
 * `GET {base_url}/v1/models` in OpenRouter's format; entries without a usable price (OpenRouter's
 * "-1" for routers, lists without pricing such as OpenAI's) are left out, since they cannot be billed.
 */
export async function fetchModelList(provider: ProviderConfig, config: ForwardConfig): Promise<Map<string, Model>> {
  const url = `${provider.baseUrl.replace(/\/+$/, '')}/v1/models`;
  const timeout = Math.min(config.upstreamTimeoutMs, LIST_TIMEOUT_MS);
  const response = await request(url, {
    headers: withProviderKey(provider, ['accept', 'application/json'], false),
    headersTimeout: timeout,
    bodyTimeout: timeout,
    signal: AbortSignal.timeout(timeout),
  });
  const declared = Number(response.headers['content-length']);
  if (response.statusCode !== 200 || declared > MAX_LIST_BYTES) {
    discardBody(response.body);
    throw new Error(`status ${response.statusCode}${declared > MAX_LIST_BYTES ? ', list too large' : ''}`);
  }
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length;
    if (size > MAX_LIST_BYTES) {
      discardBody(response.body);
      throw new Error('list too large');
    }
    chunks.push(chunk as Buffer);
  }
  const list = field(JSON.parse(Buffer.concat(chunks).toString('utf8')), 'data');
  if (!Array.isArray(list)) throw new Error('no "data" list in its answer');
  const usable = list.slice(0, MAX_FETCHED).filter((entry: unknown) => {
    try {
      parseModels([entry], provider.name);
      return true;
    } catch {
      return false;
    }
  });
  if (usable.length === 0) throw new Error('no model with a usable price in its list');
  return parseModels(usable, provider.name);
}
