// Prices per model in millisatoshis. The models file gives USD per token (OpenRouter's format,
// decimal strings); a BTC/USD rate (fixed, or from price feeds with fallback and caching)
// turns them into msat per token. All arithmetic is exact (bigint fractions), costs round up.
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { ConfigError } from '../../env.js';
import { HttpError } from '../../http/errors.js';
import type { ForwardConfig } from '../common/forward-config.js';
import { field, fieldAt } from '../../json-fields.js';
import defaultModels from './models.default.json' with { type: 'json' };

/** A non-negative exact fraction. */
export interface Fraction {
  num: bigint;
  den: bigint;
}

export interface Model {
  id: string;
  name: string;
  contextLength: number | null;
  maxCompletionTokens: number | null;
  /** USD per token (per request for `request`), as written in the models file. */
  usd: UsdPricing;
}

/** A model's prices in USD; cached input (Routstr's keys) is priced as input where it has no price. */
export interface UsdPricing {
  prompt: string;
  completion: string;
  request: string;
  input_cache_read?: string;
  input_cache_write?: string;
}

/** The optional prices of cached input: read from the cache, written to it. */
const CACHE_PRICES = ['input_cache_read', 'input_cache_write'] as const;

/** Millisatoshis per prompt token, per completion token and per request. */
export interface Price {
  prompt: Fraction;
  completion: Fraction;
  request: Fraction;
  /** Per input token read from the upstream's cache; the prompt price when the model has none. */
  cacheRead?: Fraction;
  /** Per input token written to the upstream's cache; the prompt price when the model has none. */
  cacheWrite?: Fraction;
}

/** Input tokens the upstream reports as read from or written to its cache (parts of the prompt tokens). */
export interface CachedTokens {
  read?: number;
  write?: number;
}

export interface Cost {
  inputMsat: number;
  outputMsat: number;
  requestMsat: number;
  totalMsat: number;
}

const MSAT_PER_BTC = 100_000_000_000n;

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a;
}

function reduce(num: bigint, den: bigint): Fraction {
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

/** Parses "0.00000015", "3", "1.5e-7" exactly; null when not a non-negative decimal. */
export function parseDecimal(text: string): Fraction | null {
  const match = /^(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/.exec(text.trim());
  if (!match) return null;
  const [, whole, fraction = '', exponent = '0'] = match;
  const exp = Number(exponent) - fraction.length;
  if (Math.abs(exp) > 60) return null;
  const digits = BigInt(whole + fraction);
  return exp >= 0 ? reduce(digits * 10n ** BigInt(exp), 1n) : reduce(digits, 10n ** BigInt(-exp));
}

/**
 * The largest amount the node computes with (msat, tokens): every such number is an exact double
 * and fits a bigint column. Amounts above it are far beyond any balance (90,000 BTC), so a cost
 * that large is simply more than its reservation.
 */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;
const MAX_AMOUNT_BIG = BigInt(MAX_AMOUNT);

const saturated = (n: bigint): number => (n > MAX_AMOUNT_BIG ? MAX_AMOUNT : Number(n));

/** `msat` in US dollars at `btcUsd`, to the nanodollar (Routstr's `total_usd`, X-Routstr-Cost-Usd). */
export function usdOf(msat: number, btcUsd: Fraction): number {
  const nanoUsd = (BigInt(msat) * btcUsd.num * 1_000_000_000n) / (btcUsd.den * MSAT_PER_BTC);
  return Number(nanoUsd) / 1e9;
}

/** ceil(n × f): what `n` units cost, never rounded in the node's disfavour (at most MAX_AMOUNT). */
export function ceilTimes(n: number, f: Fraction): number {
  const product = BigInt(n) * f.num;
  return saturated((product + f.den - 1n) / f.den);
}

/** How many units `msat` pays for at price `f` (Infinity when they are free). */
export function unitsAffordable(msat: number, f: Fraction): number {
  if (f.num === 0n) return Number.POSITIVE_INFINITY;
  return Number((BigInt(Math.max(0, msat)) * f.den) / f.num);
}

/** ceil(Σ nᵢ × fᵢ), exactly (at most MAX_AMOUNT). */
function ceilSum(terms: [number, Fraction][]): number {
  let num = 0n;
  let den = 1n;
  for (const [n, f] of terms) {
    if (n === 0) continue;
    num = num * f.den + BigInt(n) * f.num * den;
    den *= f.den;
  }
  return saturated((num + den - 1n) / den);
}

/** The dearest of a model's input prices: what a prompt's reservation and ceiling are priced at. */
export function promptCeilingPrice(price: Price): Fraction {
  const dearer = (a: Fraction, b: Fraction | undefined) => (b && b.num * a.den > a.num * b.den ? b : a);
  return dearer(dearer(price.prompt, price.cacheRead), price.cacheWrite);
}

/**
 * What a usage costs: the prompt's cached parts at the cache prices (never more of them than the
 * prompt has), the rest of the prompt at the input price, the output, and the request fee.
 */
export function costOf(price: Price, promptTokens: number, completionTokens: number, cached?: CachedTokens): Cost {
  const read = Math.min(cached?.read ?? 0, promptTokens);
  const write = Math.min(cached?.write ?? 0, promptTokens - read);
  const inputMsat = ceilSum([
    [promptTokens - read - write, price.prompt],
    [read, price.cacheRead ?? price.prompt],
    [write, price.cacheWrite ?? price.prompt],
  ]);
  const outputMsat = ceilTimes(completionTokens, price.completion);
  const requestMsat = ceilTimes(1, price.request);
  const totalMsat = saturated(BigInt(inputMsat) + BigInt(outputMsat) + BigInt(requestMsat));
  return { inputMsat, outputMsat, requestMsat, totalMsat };
}

/** Reads models in OpenRouter's format (`{data:[{id, pricing:{prompt, completion, request?}}]}` or a bare array). */
export function parseModels(json: unknown, source: string): Map<string, Model> {
  const list = Array.isArray(json) ? json : field(json, 'data');
  if (!Array.isArray(list)) {
    throw new ConfigError('PROXY_MODELS_FILE', `${source}: expected {"data":[…]} or an array of models`);
  }
  const models = new Map<string, Model>();
  list.forEach((entry: unknown, index) => {
    const id = field(entry, 'id');
    const where = `${source}: model ${index}${typeof id === 'string' ? ` (${id})` : ''}`;
    if (typeof id !== 'string' || !id) {
      throw new ConfigError('PROXY_MODELS_FILE', `${where}: "id" must be a non-empty string`);
    }
    const usd = {
      prompt: fieldAt(entry, ['pricing', 'prompt']),
      completion: fieldAt(entry, ['pricing', 'completion']),
      request: fieldAt(entry, ['pricing', 'request']) ?? '0',
    };
    for (const [name, value] of Object.entries(usd)) {
      // OpenRouter writes "-1" for routers with variable prices: those cannot be metered.
      if ((typeof value !== 'string' && typeof value !== 'number') || parseDecimal(String(value)) === null) {
        throw new ConfigError(
          'PROXY_MODELS_FILE',
          `${where}: pricing.${name} must be a non-negative USD amount, got ${JSON.stringify(value)}`,
        );
      }
    }
    const cache: Partial<Record<(typeof CACHE_PRICES)[number], string>> = {};
    for (const name of CACHE_PRICES) {
      const value = fieldAt(entry, ['pricing', name]);
      if (value === undefined || value === null) continue;
      if ((typeof value !== 'string' && typeof value !== 'number') || parseDecimal(String(value)) === null) {
        throw new ConfigError(
          'PROXY_MODELS_FILE',
          `${where}: pricing.${name} must be a non-negative USD amount, got ${JSON.stringify(value)}`,
        );
      }
      cache[name] = String(value);
    }
    const positive = (value: unknown) =>
      typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
    const name = field(entry, 'name');
    models.set(id, {
      id,
      name: typeof name === 'string' ? name : id,
      contextLength: positive(field(entry, 'context_length')),
      maxCompletionTokens: positive(fieldAt(entry, ['top_provider', 'max_completion_tokens'])),
      usd: {
        prompt: String(usd.prompt),
        completion: String(usd.completion),
        request: String(usd.request),
        ...cache,
      },
    });
  });
  if (models.size === 0) throw new ConfigError('PROXY_MODELS_FILE', `${source}: names no model`);
  return models;
}

export function loadModels(file: string | null): Map<string, Model> {
  if (file === null) return parseModels(defaultModels, 'models.default.json');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError('PROXY_MODELS_FILE', `cannot read ${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('PROXY_MODELS_FILE', `${file} is not JSON: ${(error as Error).message}`);
  }
  return parseModels(json, file);
}

/** Reads a BTC/USD figure from a feed's JSON: at the URL's #fragment path, else at known places. */
export function rateFromFeed(json: unknown, fragment: string): string | null {
  // Own fields only (src/json-fields.ts): a path such as "constructor" finds nothing in the feed.
  const at = (path: string) => fieldAt(json, path.split('.').filter(Boolean));
  const pairs = at('result');
  const candidates = fragment
    ? [at(fragment)]
    : [
        json,
        at('data.amount'),
        at('price'),
        at('last'),
        at('USD'),
        at('usd'),
        at('bitcoin.usd'),
        at('rate'),
        // Kraken: {"result":{"XXBTZUSD":{"c":["97000.1","0.01"]}}}
        ...(pairs !== null && typeof pairs === 'object' ? Object.values(pairs) : []).map((pair) =>
          fieldAt(pair, ['c', '0']),
        ),
      ];
  for (const value of candidates) {
    if (typeof value === 'number' || typeof value === 'string') {
      const text = typeof value === 'number' ? String(value) : value.trim();
      const n = Number(text);
      // A sanity band: a feed answering nonsense must not set prices.
      if (parseDecimal(text) && n >= 100 && n <= 100_000_000) return text;
    }
  }
  return null;
}

export interface InfoModel<Extra extends object = object> {
  id: string;
  name: string;
  context_length: number | null;
  /** USD per token, as in the models file. */
  pricing: UsdPricing;
  /** Satoshis per token (per request for `request`) at the current rate; null while no rate is known. */
  sats_pricing:
    | ({
        prompt: number;
        completion: number;
        request: number;
        input_cache_read?: number;
        input_cache_write?: number;
      } & Extra)
    | null;
}

interface Rate {
  btcUsd: Fraction;
  text: string;
  source: string;
  at: number;
}

/** A model's prices in msat and the BTC/USD rate they were computed at. */
export interface Quote {
  price: Price;
  btcUsd: Fraction;
}

export class Pricing {
  /** Replaced whole (never changed in place) when the configuration is reloaded. */
  models: Map<string, Model>;
  private rate: Rate | null = null;
  private refreshing: Promise<Rate> | null = null;
  /** After every feed failed: no new attempt before this time (feeds are not hammered in an outage). */
  private retryAt = 0;
  private lastFailure: HttpError | null = null;
  private prices = new Map<string, { rate: Rate; model: Model; price: Price }>();

  constructor(
    private readonly config: ForwardConfig,
    private readonly log?: { warn(obj: object, msg: string): void },
    /** The models the providers serve (../forward/provider-models.ts); by default those of PROXY_MODELS_FILE. */
    models?: Map<string, Model>,
  ) {
    this.models = new Map(models ?? loadModels(config.modelsFile));
    if (config.btcUsd) {
      this.rate = {
        btcUsd: parseDecimal(config.btcUsd)!,
        text: config.btcUsd,
        source: 'PROXY_BTC_USD',
        at: Number.POSITIVE_INFINITY,
      };
    }
  }

  /** Replaces the models (a provider's list was read again, the configuration changed); prices are computed anew. */
  replaceModels(models: Map<string, Model>): void {
    // New maps, not cleared ones: a request that already read a model or its price keeps it.
    this.models = new Map(models);
    this.prices = new Map();
  }

  model(id: string): Model | undefined {
    return this.models.get(id);
  }

  /** The BTC/USD rate in use; 503 when none is configured or every feed has failed for too long. */
  async currentRate(): Promise<Rate> {
    const now = Date.now();
    const rate = this.rate;
    if (rate && now - rate.at < this.config.priceCacheMs) return rate;
    if (rate && now - rate.at < this.config.priceMaxAgeMs) {
      // Still usable: answer now, refresh behind the scenes.
      if (now >= this.retryAt) this.refresh().catch(() => {});
      return rate;
    }
    if (now < this.retryAt && this.lastFailure) throw this.lastFailure;
    return this.refresh();
  }

  private refresh(): Promise<Rate> {
    this.refreshing ??= this.fetchRate().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Tries the feeds in order; the first sane answer wins. */
  private async fetchRate(): Promise<Rate> {
    if (this.config.priceFeeds.length === 0) {
      throw new HttpError(503, 'Pricing is not configured: set PROXY_BTC_USD or PROXY_PRICE_FEEDS', {
        code: 'pricing_unavailable',
        type: 'api_error',
      });
    }
    const problems: string[] = [];
    for (const feed of this.config.priceFeeds) {
      const url = new URL(feed);
      const fragment = decodeURIComponent(url.hash.slice(1));
      url.hash = '';
      try {
        const response = await request(url, {
          headersTimeout: this.config.priceFeedTimeoutMs,
          bodyTimeout: this.config.priceFeedTimeoutMs,
          signal: AbortSignal.timeout(this.config.priceFeedTimeoutMs),
          headers: { accept: 'application/json' },
        });
        const body = await response.body.text();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
        const text = rateFromFeed(JSON.parse(body), fragment);
        if (!text) throw new Error('no BTC/USD figure in its answer');
        const rate = { btcUsd: parseDecimal(text)!, text, source: url.host, at: Date.now() };
        this.rate = rate;
        return rate;
      } catch (error) {
        problems.push(`${url.host}: ${(error as Error).message}`);
      }
    }
    this.log?.warn({ problems }, 'every BTC/USD price feed failed');
    this.retryAt = Date.now() + Math.min(this.config.priceCacheMs, 30_000);
    this.lastFailure = new HttpError(
      503,
      'No BTC/USD rate is available right now (every price feed failed); try again later',
      { code: 'pricing_unavailable', type: 'api_error' },
    );
    const stale = this.rate;
    if (stale && Date.now() - stale.at < this.config.priceMaxAgeMs) return stale;
    throw this.lastFailure;
  }

  /** The model's prices in msat at the current rate. */
  async price(model: Model): Promise<Price> {
    return (await this.quote(model)).price;
  }

  /**
   * quote() with no promise, when the rate is fresh and the model's price already computed at it
   * (nearly every request); null otherwise.
   */
  cachedQuote(model: Model): Quote | null {
    const rate = this.rate;
    if (!rate || Date.now() - rate.at >= this.config.priceCacheMs) return null;
    const cached = this.prices.get(model.id);
    return cached && cached.rate === rate && cached.model === model
      ? { price: cached.price, btcUsd: rate.btcUsd }
      : null;
  }

  /** The model's prices in msat and the BTC/USD rate they were computed at (for costs stated in USD). */
  async quote(model: Model): Promise<Quote> {
    const rate = await this.currentRate();
    const cached = this.prices.get(model.id);
    // The model object too: a price computed across a reload belongs to the model it was computed for.
    if (cached && cached.rate === rate && cached.model === model) return { price: cached.price, btcUsd: rate.btcUsd };
    const toMsat = (usd: string) => {
      const f = parseDecimal(usd)!;
      return reduce(f.num * MSAT_PER_BTC * rate.btcUsd.den, f.den * rate.btcUsd.num);
    };
    const { input_cache_read: cacheRead, input_cache_write: cacheWrite } = model.usd;
    const price: Price = {
      prompt: toMsat(model.usd.prompt),
      completion: toMsat(model.usd.completion),
      request: toMsat(model.usd.request),
      ...(cacheRead === undefined ? {} : { cacheRead: toMsat(cacheRead) }),
      ...(cacheWrite === undefined ? {} : { cacheWrite: toMsat(cacheWrite) }),
    };
    this.prices.set(model.id, { rate, model, price });
    return { price, btcUsd: rate.btcUsd };
  }

  /**
   * The models with their prices, for `GET /` and `GET /v1/models`; sats pricing is null while no rate
   * is known. `extra` adds fields to each model's sats pricing (what one request can cost at most).
   */
  async infoModels<Extra extends object = object>(
    extra?: (model: Model, price: Price) => Extra,
  ): Promise<{ btc_usd: string | null; models: InfoModel<Extra>[] }> {
    const rate = await this.currentRate().catch(() => null);
    const models: InfoModel<Extra>[] = [];
    for (const model of this.models.values()) {
      const price = rate ? await this.price(model) : null;
      const sats = (f: Fraction) => Number(f.num) / Number(f.den) / 1000;
      models.push({
        id: model.id,
        name: model.name,
        context_length: model.contextLength,
        pricing: model.usd,
        sats_pricing: price
          ? {
              prompt: sats(price.prompt),
              completion: sats(price.completion),
              request: sats(price.request),
              ...(price.cacheRead ? { input_cache_read: sats(price.cacheRead) } : {}),
              ...(price.cacheWrite ? { input_cache_write: sats(price.cacheWrite) } : {}),
              ...(extra?.(model, price) as Extra),
            }
          : null,
      });
    }
    return { btc_usd: rate?.text ?? null, models };
  }
}
