// What a billed request asks for and what it used: which paths are billed, the model, the
// output cap and streaming flag of a request body, a safe upper bound of its prompt tokens,
// the reservation plan, and the usage read back from the upstream's answer.
import { HttpError, type FieldError } from '../../http/errors.js';
import { jsonTextDeeperThan, tooDeepError } from '../../http/json-depth.js';
import { field, fieldAt } from '../../json-fields.js';
import type { ForwardConfig } from '../common/forward-config.js';
import {
  ceilTimes,
  MAX_AMOUNT,
  promptCeilingPrice,
  unitsAffordable,
  type Cost,
  type Model,
  type Price,
} from './pricing.js';

export type BilledKind = 'chat' | 'completions' | 'embeddings' | 'responses' | 'messages';

/** Billed path suffixes (checked on the normalized path, so /v1/… and /api/v1/… upstreams both work). */
const BILLED_SUFFIXES: [string, BilledKind][] = [
  ['/chat/completions', 'chat'],
  ['/completions', 'completions'],
  ['/embeddings', 'embeddings'],
  ['/responses', 'responses'],
];

/** Slash-separated segments of letters, digits, "-" and "_": a path the URL parser leaves as it is. */
const PLAIN_PATH = /^(?:\/[\w-]+)+$/;

/** The path as matched and forwarded: dot segments resolved, repeated and trailing slashes dropped. */
export function normalizePath(rawUrl: string): { path: string; search: string } {
  // Most paths have nothing to resolve, collapse or encode: no URL parsing for them.
  if (PLAIN_PATH.test(rawUrl)) return { path: rawUrl, search: '' };
  // Appended, not resolved: a raw URL starting with "//" would otherwise name a host.
  const url = new URL(`http://node.invalid${rawUrl.startsWith('/') ? '' : '/'}${rawUrl}`);
  const path = url.pathname.replace(/\/{2,}/g, '/').replace(/(.)\/+$/, '$1');
  return { path, search: url.search };
}

/**
 * Anthropic's Messages API (Claude Code, routstrd): only at /v1/messages itself, since other APIs have
 * paths ending in /messages that use no model (OpenAI's POST /v1/threads/{id}/messages).
 */
const MESSAGES_PATHS = new Set(['/v1/messages', '/messages']);

/** The kind of a model-using request, or null for a path that is not billed by usage. */
export function billedKind(method: string, path: string): BilledKind | null {
  if (method !== 'POST') return null;
  const lower = path.toLowerCase();
  if (MESSAGES_PATHS.has(lower)) return 'messages';
  for (const [suffix, kind] of BILLED_SUFFIXES) if (lower.endsWith(suffix)) return kind;
  return null;
}

/** The body field that caps output tokens, per kind. */
function maxTokensField(kind: BilledKind, body: Record<string, unknown>): string | null {
  switch (kind) {
    case 'chat':
      return Object.hasOwn(body, 'max_completion_tokens') ? 'max_completion_tokens' : 'max_tokens';
    case 'completions':
    case 'messages':
      return 'max_tokens';
    case 'responses':
      return 'max_output_tokens';
    case 'embeddings':
      return null;
  }
}

export interface MeteredRequest {
  kind: BilledKind;
  model: string;
  stream: boolean;
  /** Upper bound of the prompt's tokens (see promptTokenBound): what it may be charged at most. */
  promptBound: number;
  /** The request body as received (forwarded as it is when the node changes nothing). */
  raw: Buffer;
  /** The output cap the caller asked for (per choice), null when it named none. */
  requestedMaxTokens: number | null;
  /** How many completions one request produces (n, best_of): output tokens are per choice. */
  choices: number;
  body: Record<string, unknown>;
}

const IMAGE_TOKENS = 1500;

/**
 * An upper bound of the prompt's tokens: the UTF-8 bytes of the whole body (byte-level BPE
 * tokens are never shorter than a byte, and the JSON framing outweighs the per-message special
 * tokens), with each image counted as IMAGE_TOKENS instead of its URL or base64 bytes.
 */
export function promptTokenBound(body: unknown, raw: Buffer, decoded = raw.toString('utf8')): number {
  // Most bodies have no image: their bytes as sent are the bound (an escape only lengthens the
  // text it stands for), found without serializing the body again. An escape (\u…) could spell
  // an image's key, so such bodies are walked below. Searched in the decoded text: a Buffer's
  // includes() crosses into C++ and encodes its needle each time.
  if (!decoded.includes('image_url') && !decoded.includes('data:') && !decoded.includes('\\u')) return raw.length;
  const plain = JSON.stringify(body);
  // The replacer below is slow; most bodies have nothing for it to do.
  if (!plain.includes('image_url') && !plain.includes('data:')) return Buffer.byteLength(plain, 'utf8');
  let images = 0;
  const text = JSON.stringify(body, (key, value) => {
    if (key === 'image_url') images++;
    if (typeof value === 'string' && value.startsWith('data:') && value.length > 256) return '';
    return value;
  });
  return Buffer.byteLength(text, 'utf8') + images * IMAGE_TOKENS;
}

const invalid = (fields: FieldError[]) => new HttpError(422, fields.map((f) => f.msg).join('; '), { fields });

function optionalCount(body: Record<string, unknown>, field: string, min: number): number | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (!Number.isSafeInteger(value) || (value as number) < min) {
    throw invalid([
      {
        loc: ['body', field],
        msg: `Input should be an integer greater than or equal to ${min}`,
        type: 'greater_than_equal',
      },
    ]);
  }
  return value as number;
}

/** Parses a billed request's body: 422 (FastAPI shape) for what the node itself needs and cannot read. */
export function meterRequest(kind: BilledKind, raw: Buffer): MeteredRequest {
  const text = raw.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalid([{ loc: ['body'], msg: 'JSON decode error: the body must be a JSON object', type: 'json_invalid' }]);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw invalid([{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
  }
  // Before anything walks it: the prompt bound and the re-serialized body recurse.
  if (jsonTextDeeperThan(text)) throw tooDeepError();
  const object = body as Record<string, unknown>;
  if (typeof object.model !== 'string' || object.model === '') {
    throw invalid([
      {
        loc: ['body', 'model'],
        msg: object.model === undefined ? 'Field required' : 'Input should be a non-empty string',
        type: object.model === undefined ? 'missing' : 'string_type',
      },
    ]);
  }
  if (object.stream !== undefined && object.stream !== null && typeof object.stream !== 'boolean') {
    throw invalid([{ loc: ['body', 'stream'], msg: 'Input should be a valid boolean', type: 'bool_type' }]);
  }
  const field = maxTokensField(kind, object);
  const requestedMaxTokens = field ? optionalCount(object, field, 0) : null;
  const n = kind === 'chat' || kind === 'completions' ? (optionalCount(object, 'n', 1) ?? 1) : 1;
  const bestOf = kind === 'completions' ? (optionalCount(object, 'best_of', 1) ?? 1) : 1;
  return {
    kind,
    model: object.model,
    stream: object.stream === true && kind !== 'embeddings',
    promptBound: promptTokenBound(object, raw, text),
    raw,
    requestedMaxTokens,
    choices: Math.max(n, bestOf),
    body: object,
  };
}

export interface ReservationPlan {
  reserveMsat: number;
  /**
   * The most the request may be charged: its prompt at the bound, its output at the cap. Above the
   * reservation the charge draws on the account's available balance (billing.ts).
   */
  ceilingMsat: number;
  /** Output tokens per choice the upstream is allowed (sent as the cap); null for embeddings. */
  maxTokens: number | null;
  /** The caller's balance was too small for its cap: the cap was lowered to what it affords. */
  clamped: boolean;
}

/** A request's reservation, and its cost with the full output cap and with the least one. */
export interface ReservationPlanning {
  /** Null: not even the minimum is affordable. */
  plan: ReservationPlan | null;
  fullMsat: number;
  minimumMsat: number;
}

export interface OutputLimits {
  maxOutputTokens: number;
  minOutputTokens: number;
  modelMaxTokens: number | null;
  /** The model's context length: no prompt is longer, whatever its bytes (see promptTokenBound). */
  modelContextLength?: number | null;
}

/** The limits of a request to `model` under the operator's settings. */
export function outputLimits(model: Model, config: ForwardConfig): OutputLimits {
  return {
    maxOutputTokens: config.maxOutputTokens,
    minOutputTokens: config.minOutputTokens,
    modelMaxTokens: model.maxCompletionTokens,
    modelContextLength: model.contextLength,
  };
}

/**
 * A prompt's tokens as reserved: a third of its bound (about what Routstr's node and clients
 * estimate, and above what a tokenizer makes of most text, about four bytes a token). The bound
 * itself stays the most it may be charged.
 */
export function promptEstimate(promptBound: number): number {
  return Math.ceil(promptBound / 3);
}

/**
 * The reservation for a request: the prompt's estimate (never above the model's context length)
 * plus the output cap (the caller's max_tokens, else PROXY_MAX_OUTPUT_TOKENS, never above the model's
 * own limit) at the model's prices. When the balance cannot cover it but covers the prompt and at
 * least `minOutputTokens`, the cap is lowered to what the balance affords and the whole available
 * balance is reserved. The ceiling prices the prompt at its bound instead: a request that used more
 * than its reservation is charged up to it from what the account has available then.
 * Null: not even that is affordable (the 402 then states `minimumMsat`).
 */
export function planReservation(
  metered: MeteredRequest,
  price: Price,
  availableMsat: number,
  limits: OutputLimits,
): ReservationPlanning {
  const context = limits.modelContextLength ?? null;
  const bound = context === null ? metered.promptBound : Math.min(metered.promptBound, context);
  // Cached input may cost more than input (a cache write): the prompt is reserved at the dearest.
  const promptPrice = promptCeilingPrice(price);
  const fixed = ceilTimes(promptEstimate(bound), promptPrice) + ceilTimes(1, price.request);
  const fixedCeiling = ceilTimes(bound, promptPrice) + ceilTimes(1, price.request);
  if (metered.kind === 'embeddings') {
    return {
      plan:
        fixed <= availableMsat
          ? { reserveMsat: fixed, ceilingMsat: fixedCeiling, maxTokens: null, clamped: false }
          : null,
      fullMsat: fixed,
      minimumMsat: fixed,
    };
  }
  let cap = metered.requestedMaxTokens ?? limits.maxOutputTokens;
  if (limits.modelMaxTokens !== null) cap = Math.min(cap, limits.modelMaxTokens);
  const outputCost = (tokens: number) => ceilTimes(tokens * metered.choices, price.completion);
  const fullMsat = fixed + outputCost(cap);
  const floor = Math.min(cap, limits.minOutputTokens);
  const minimumMsat = fixed + outputCost(floor);
  const planFor = (maxTokens: number, clamped: boolean): ReservationPlan => ({
    reserveMsat: fixed + outputCost(maxTokens),
    ceilingMsat: fixedCeiling + outputCost(maxTokens),
    maxTokens,
    clamped,
  });
  if (fullMsat <= availableMsat) return { plan: planFor(cap, false), fullMsat, minimumMsat };
  if (minimumMsat > availableMsat) return { plan: null, fullMsat, minimumMsat };
  const affordable = Math.min(
    cap,
    Math.floor(unitsAffordable(availableMsat - fixed, price.completion) / metered.choices),
  );
  return { plan: planFor(affordable, true), fullMsat, minimumMsat };
}

/** The most one request can cost, in msat: its prompt, its output and the whole (with the request fee). */
export interface MaximalCost {
  promptMsat: number;
  completionMsat: number;
  totalMsat: number;
}

/**
 * What the node reserves for the largest request `model` takes: a prompt filling its context (without
 * one, the largest body, PROXY_MAX_BODY_BYTES, whose bytes bound its tokens) and the longest output it
 * allows (its own limit, else its context length, else PROXY_MAX_OUTPUT_TOKENS). A caller holding this
 * much is never refused for a request's cost (GET /v1/models, `max_cost`).
 */
export function maximalCost(model: Model, price: Price, config: ForwardConfig): MaximalCost {
  const maximal: MeteredRequest = {
    kind: 'chat',
    model: model.id,
    stream: false,
    promptBound: model.contextLength ?? config.maxBodyBytes,
    raw: Buffer.alloc(0),
    requestedMaxTokens: model.maxCompletionTokens ?? model.contextLength ?? config.maxOutputTokens,
    choices: 1,
    body: {},
  };
  const { plan, fullMsat } = planReservation(maximal, price, MAX_AMOUNT, outputLimits(model, config));
  const promptMsat = ceilTimes(promptEstimate(maximal.promptBound), promptCeilingPrice(price));
  return { promptMsat, completionMsat: ceilTimes(plan?.maxTokens ?? 0, price.completion), totalMsat: fullMsat };
}

/** The body sent upstream: the output cap the reservation covers, and usage forced on streams. */
export function upstreamBody(metered: MeteredRequest, plan: ReservationPlan): Buffer {
  const field = maxTokensField(metered.kind, metered.body);
  const capped = field !== null && plan.maxTokens !== null && metered.body[field] !== plan.maxTokens;
  const given = metered.body.stream_options;
  const options = (given && typeof given === 'object' ? given : {}) as Record<string, unknown>;
  const asksUsage =
    metered.stream && (metered.kind === 'chat' || metered.kind === 'completions') && options.include_usage !== true;
  // Most bodies go as they came: no copy made to find that out.
  if (!capped && !asksUsage) return metered.raw;
  const body = { ...metered.body };
  if (capped) body[field] = plan.maxTokens;
  if (asksUsage) body.stream_options = { ...options, include_usage: true };
  return Buffer.from(JSON.stringify(body));
}

export interface Usage {
  /** Every input token, its cached parts included. */
  promptTokens: number;
  completionTokens: number;
  /** Input tokens read from the upstream's cache (part of promptTokens), where it reports them. */
  cacheReadTokens?: number;
  /** Input tokens written to the upstream's cache (part of promptTokens), where it reports them. */
  cacheWriteTokens?: number;
}

/** The usage an upstream reported: a count it left out or sent unreadable is null. */
export interface ReportedUsage {
  promptTokens: number | null;
  completionTokens: number | null;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/**
 * A reported token count: a JSON number of at least 0, fractions rounded up, anything above
 * MAX_AMOUNT (1e300, or 1e999 which parses as Infinity) taken as MAX_AMOUNT. Negative or not a
 * number: null. The upstream is trusted up to the reservation: the charge never exceeds it.
 */
function tokenCount(value: unknown): number | null {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) return null;
  return value >= MAX_AMOUNT ? MAX_AMOUNT : Math.ceil(value) + 0; // + 0: never -0
}

/**
 * Usage of an OpenAI-style answer: `usage` (chat, completions, embeddings) or `response.usage`
 * (responses API); null when the answer reports none (no such field, or null). Embeddings
 * produce no output tokens, so a missing completion count is 0 there.
 */
export function readUsage(json: unknown, kind: BilledKind): ReportedUsage | null {
  if (!json || typeof json !== 'object') return null;
  const usage = field(json, 'usage') ?? field(field(json, 'response'), 'usage');
  if (usage === undefined || usage === null) return null;
  const completion = field(usage, 'completion_tokens') ?? field(usage, 'output_tokens');
  return {
    promptTokens:
      kind === 'messages'
        ? anthropicInputTokens(usage)
        : tokenCount(field(usage, 'prompt_tokens') ?? field(usage, 'input_tokens')),
    completionTokens: completion === undefined && kind === 'embeddings' ? 0 : tokenCount(completion),
    ...cachedTokens(usage, kind),
  };
}

/**
 * The cached parts of the input, where the upstream reports them: Anthropic's cache reads and
 * writes; OpenAI's cached tokens (`prompt_tokens_details`, the Responses API's `input_tokens_details`).
 */
function cachedTokens(usage: unknown, kind: BilledKind): { cacheReadTokens?: number; cacheWriteTokens?: number } {
  const read =
    kind === 'messages'
      ? tokenCount(field(usage, 'cache_read_input_tokens'))
      : tokenCount(
          fieldAt(usage, ['prompt_tokens_details', 'cached_tokens']) ??
            fieldAt(usage, ['input_tokens_details', 'cached_tokens']),
        );
  const write = kind === 'messages' ? tokenCount(field(usage, 'cache_creation_input_tokens')) : null;
  return { ...(read ? { cacheReadTokens: read } : {}), ...(write ? { cacheWriteTokens: write } : {}) };
}

/**
 * Anthropic counts cached input apart from `input_tokens` (cache writes and reads): all of it is
 * input the request used (priced at the cache prices where the model has them, see costOf).
 */
export function anthropicInputTokens(usage: unknown): number | null {
  const input = tokenCount(field(usage, 'input_tokens'));
  if (input === null) return null;
  const cached = ['cache_creation_input_tokens', 'cache_read_input_tokens'].map(
    (name) => tokenCount(field(usage, name)) ?? 0,
  );
  return Math.min(MAX_AMOUNT, input + cached[0] + cached[1]);
}

/** When the upstream reports no usage: about four bytes a token, for the prompt and for what was delivered. */
export function estimateUsage(promptBytes: number, outputBytes: number): Usage {
  return { promptTokens: Math.ceil(promptBytes / 4), completionTokens: Math.ceil(outputBytes / 4) };
}

/**
 * The usage billed: the upstream's counts where it reported readable ones, the estimate for the
 * rest (source 'estimate' then), so an upstream sending garbage never makes a request free.
 */
export function billedUsage(
  reported: ReportedUsage | null,
  estimate: () => Usage,
): { usage: Usage; source: 'upstream' | 'estimate' } {
  const prompt = reported?.promptTokens ?? null;
  const completion = reported?.completionTokens ?? null;
  // Cached parts count only with the upstream's own prompt count they are part of.
  const cached =
    prompt === null
      ? {}
      : {
          ...(reported?.cacheReadTokens ? { cacheReadTokens: reported.cacheReadTokens } : {}),
          ...(reported?.cacheWriteTokens ? { cacheWriteTokens: reported.cacheWriteTokens } : {}),
        };
  if (prompt !== null && completion !== null) {
    return { usage: { promptTokens: prompt, completionTokens: completion, ...cached }, source: 'upstream' };
  }
  const guess = estimate();
  const usage = {
    promptTokens: prompt ?? guess.promptTokens,
    completionTokens: completion ?? guess.completionTokens,
    ...cached,
  };
  return { usage, source: 'estimate' };
}

/**
 * Sets `cost` in the parsed answer's own `usage` object (Routstr's `usage.cost`; a spread copy of it
 * showed in profiles of every answer) and returns that field to write; nothing when it has no usage object.
 */
export function withUsageCost(json: object, cost: object): object {
  const usage = field(json, 'usage');
  if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return {};
  (usage as Record<string, unknown>).cost = cost;
  return { usage };
}

/**
 * The cost object added to JSON answers and to a stream's usage chunk, as `cost` and as `usage.cost`:
 * quartet's fields and Routstr's (`*_msats`, `total_usd`, what its clients read).
 */
export function costJson({
  cost,
  charged: chargedMsat,
  chargedUsd,
}: {
  cost: Cost;
  charged: number;
  chargedUsd: number;
}) {
  return {
    total_msat: chargedMsat,
    input_msat: cost.inputMsat,
    output_msat: cost.outputMsat,
    request_msat: cost.requestMsat,
    // Above the reservation the node absorbs the rest; X-Cashu payments round up to whole sats.
    ...(chargedMsat < cost.totalMsat ? { uncharged_msat: cost.totalMsat - chargedMsat } : {}),
    ...(chargedMsat > cost.totalMsat ? { rounding_msat: chargedMsat - cost.totalMsat } : {}),
    total_msats: chargedMsat,
    input_msats: cost.inputMsat,
    output_msats: cost.outputMsat,
    total_usd: chargedUsd,
  };
}
