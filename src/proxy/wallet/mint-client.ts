// The node's HTTP client of a Cashu mint: keysets and keys (NUT-01/02), swap (NUT-03),
// checkstate (NUT-07) and restore (NUT-09). Every answer is checked before use, and every
// failure is classified, because the wallet's safety depends on knowing whether a request
// may have reached the mint.
import {
  COMPRESSED_POINT,
  isProofState,
  keysetIdMatches,
  type BlindedMessage,
  type BlindSignature,
  type CheckStateRequest,
  type Keys,
  type ProofState,
  type RestoreRequest,
  type SwapRequest,
  type WireProof,
} from '../../cashu/index.js';

/** A keyset as the client checked it from GET /v1/keysets. */
export interface KeysetInfo {
  id: string;
  unit: string;
  active: boolean;
  inputFeePpk: number;
  finalExpiry: number | null;
}

export interface KeysetWithKeys extends KeysetInfo {
  keys: Keys;
}

/** The mint could not be reached or did not answer in time. */
export class MintUnreachableError extends Error {
  constructor(
    readonly mintUrl: string,
    /** False only when the request certainly never reached the mint (connection refused…). */
    readonly maybeDelivered: boolean,
    reason: string,
  ) {
    super(`mint ${mintUrl} unreachable: ${reason}`);
    this.name = 'MintUnreachableError';
  }
}

/** The mint answered with an error status. 4xx is a definite refusal; 5xx may hide a done operation. */
export class MintRejectedError extends Error {
  constructor(
    readonly mintUrl: string,
    readonly status: number,
    readonly code: number | null,
    readonly detail: string,
  ) {
    super(`mint ${mintUrl} refused (${status}${code !== null ? `, code ${code}` : ''}): ${detail}`);
    this.name = 'MintRejectedError';
  }
}

/** The mint answered something that is not a valid answer (a lying or broken mint). */
export class MintProtocolError extends Error {
  constructor(
    readonly mintUrl: string,
    problem: string,
  ) {
    super(`mint ${mintUrl} answered nonsense: ${problem}`);
    this.name = 'MintProtocolError';
  }
}

/** Connection errors that prove the request was never delivered. */
const NOT_DELIVERED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const HEX = /^[0-9a-fA-F]+$/;
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const KEYSETS_TTL_MS = 60_000;

/** One canonical spelling of a mint URL, to compare a token's mint with PROXY_MINTS. */
export function normalizeMintUrl(url: string): string {
  const parsed = new URL(url.trim());
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not an http(s) URL');
  return `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
}

export class MintClient {
  private keysetsCache: { at: number; value: KeysetInfo[] } | null = null;
  private keysCache = new Map<string, KeysetWithKeys>();

  constructor(
    readonly url: string,
    private timeoutMs: number,
  ) {}

  /** All keysets of the mint (active and inactive), cached for a minute. */
  async keysets(fresh = false): Promise<KeysetInfo[]> {
    if (!fresh && this.keysetsCache && Date.now() - this.keysetsCache.at < KEYSETS_TTL_MS) {
      return this.keysetsCache.value;
    }
    const body = await this.request('GET', '/v1/keysets');
    const list = field(body, 'keysets');
    if (!Array.isArray(list)) throw new MintProtocolError(this.url, 'keysets is not a list');
    const value = list.map((item): KeysetInfo => {
      const id = field(item, 'id');
      const unit = field(item, 'unit');
      const active = field(item, 'active');
      const fee = field(item, 'input_fee_ppk') ?? 0;
      const expiry = field(item, 'final_expiry') ?? null;
      if (
        typeof id !== 'string' ||
        !HEX.test(id) ||
        typeof unit !== 'string' ||
        typeof active !== 'boolean' ||
        !isSafeInteger(fee) ||
        fee < 0 ||
        (expiry !== null && !isSafeInteger(expiry))
      ) {
        throw new MintProtocolError(this.url, 'malformed keyset entry');
      }
      return { id, unit, active, inputFeePpk: fee, finalExpiry: expiry };
    });
    this.keysetsCache = { at: Date.now(), value };
    return value;
  }

  /** The keys of one keyset, checked against its id (NUT-02) so a mint cannot swap keys. */
  async keys(id: string): Promise<KeysetWithKeys> {
    const cached = this.keysCache.get(id);
    if (cached) return cached;
    const info = (await this.keysets()).find((k) => k.id === id) ?? (await this.keysets(true)).find((k) => k.id === id);
    if (!info) throw new MintProtocolError(this.url, `keyset ${id} is not listed`);
    const body = await this.request('GET', `/v1/keys/${encodeURIComponent(id)}`);
    const list = field(body, 'keysets');
    const entry = Array.isArray(list) ? list.find((k) => field(k, 'id') === id) : undefined;
    const keys = field(entry, 'keys');
    if (!keys || typeof keys !== 'object' || Object.keys(keys).length === 0) {
      throw new MintProtocolError(this.url, `no keys for keyset ${id}`);
    }
    for (const [amount, key] of Object.entries(keys as Record<string, unknown>)) {
      if (!/^[1-9]\d*$/.test(amount) || typeof key !== 'string' || !COMPRESSED_POINT.test(key)) {
        throw new MintProtocolError(this.url, `malformed key in keyset ${id}`);
      }
    }
    const withKeys: KeysetWithKeys = { ...info, keys: keys as Keys };
    if (!keysetIdMatches(id, withKeys)) throw new MintProtocolError(this.url, `keys do not match keyset id ${id}`);
    this.keysCache.set(id, withKeys);
    return withKeys;
  }

  /** The active keyset of a unit with the lowest input fee, with its keys. */
  async activeKeyset(unit: string): Promise<KeysetWithKeys> {
    const candidates = (await this.keysets())
      .filter((k) => k.active && k.unit === unit)
      .sort((a, b) => a.inputFeePpk - b.inputFeePpk);
    if (candidates.length === 0) throw new MintProtocolError(this.url, `no active keyset for unit ${unit}`);
    return this.keys(candidates[0].id);
  }

  /** NUT-03: exchanges the inputs for blind signatures on the outputs, in output order. */
  async swap(inputs: WireProof[], outputs: BlindedMessage[]): Promise<BlindSignature[]> {
    let body: unknown;
    try {
      const request: SwapRequest = { inputs, outputs };
      body = await this.request('POST', '/v1/swap', request);
    } catch (error) {
      // A refusal may come from a rotated keyset or changed fees: read them again next time.
      if (error instanceof MintRejectedError) this.keysetsCache = null;
      throw error;
    }
    return this.signatures(field(body, 'signatures'), outputs.length);
  }

  /** NUT-07: the state of each proof, by its Y, in the order asked. */
  async checkState(ys: string[]): Promise<ProofState[]> {
    const request: CheckStateRequest = { Ys: ys };
    const body = await this.request('POST', '/v1/checkstate', request);
    const states = field(body, 'states');
    if (!Array.isArray(states)) throw new MintProtocolError(this.url, 'checkstate: states is not a list');
    const byY = new Map<string, ProofState>();
    for (const entry of states) {
      const y = field(entry, 'Y');
      const state = field(entry, 'state');
      if (typeof y !== 'string' || !isProofState(state)) {
        throw new MintProtocolError(this.url, 'checkstate: malformed entry');
      }
      byY.set(y.toLowerCase(), state);
    }
    return ys.map((y) => {
      const state = byY.get(y.toLowerCase());
      if (!state) throw new MintProtocolError(this.url, 'checkstate: a proof is missing from the answer');
      return state;
    });
  }

  /**
   * NUT-09: the signatures the mint issued earlier on these outputs. Returns one entry per
   * output, null where the mint signed nothing.
   */
  async restore(outputs: BlindedMessage[]): Promise<(BlindSignature | null)[]> {
    const request: RestoreRequest = { outputs };
    const body = await this.request('POST', '/v1/restore', request);
    const echoed = field(body, 'outputs');
    const sigs = field(body, 'signatures') ?? field(body, 'promises');
    if (!Array.isArray(echoed) || !Array.isArray(sigs) || echoed.length !== sigs.length) {
      throw new MintProtocolError(this.url, 'restore: outputs and signatures do not pair up');
    }
    const parsed = this.signatures(sigs, sigs.length);
    const byB = new Map<string, BlindSignature>();
    echoed.forEach((output, index) => {
      const b = field(output, 'B_');
      if (typeof b !== 'string') throw new MintProtocolError(this.url, 'restore: output without B_');
      byB.set(b.toLowerCase(), parsed[index]);
    });
    return outputs.map((output) => byB.get(output.B_.toLowerCase()) ?? null);
  }

  /** Checks a list of blind signatures (the mint's answer to outputs) before use. */
  signatures(value: unknown, expected: number): BlindSignature[] {
    if (!Array.isArray(value) || value.length !== expected) {
      throw new MintProtocolError(this.url, `expected ${expected} signatures`);
    }
    return value.map((item): BlindSignature => {
      const id = field(item, 'id');
      const amount = field(item, 'amount');
      const c = field(item, 'C_');
      const dleq = field(item, 'dleq');
      if (
        typeof id !== 'string' ||
        !isSafeInteger(amount) ||
        amount <= 0 ||
        typeof c !== 'string' ||
        !COMPRESSED_POINT.test(c)
      ) {
        throw new MintProtocolError(this.url, 'malformed blind signature');
      }
      const signature: BlindSignature = { id, amount, C_: c };
      if (dleq !== undefined && dleq !== null) {
        const e = field(dleq, 'e');
        const s = field(dleq, 's');
        if (typeof e !== 'string' || typeof s !== 'string' || !HEX.test(e) || !HEX.test(s)) {
          throw new MintProtocolError(this.url, 'malformed DLEQ proof');
        }
        signature.dleq = { e, s };
      }
      return signature;
    });
  }

  /** One request to the mint, its failure classified (used by ./lightning-mint.ts too). */
  async request(method: 'GET' | 'POST', path: string, payload?: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(this.url + path, {
        method,
        headers:
          payload === undefined
            ? { accept: 'application/json' }
            : { accept: 'application/json', 'content-type': 'application/json' },
        body: payload === undefined ? undefined : JSON.stringify(payload),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      throw this.unreachable(error);
    }
    let text: string;
    try {
      text = await readLimited(response);
    } catch (error) {
      if (error instanceof MintProtocolError) throw error;
      throw this.unreachable(error, true);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (response.ok) throw new MintProtocolError(this.url, `${path}: the answer is not JSON`);
      throw new MintRejectedError(this.url, response.status, null, text.slice(0, 200) || response.statusText);
    }
    if (!response.ok) {
      const code = field(body, 'code');
      const detail = field(body, 'detail');
      throw new MintRejectedError(
        this.url,
        response.status,
        isSafeInteger(code) ? code : null,
        typeof detail === 'string' ? detail.slice(0, 300) : `HTTP ${response.status}`,
      );
    }
    return body;
  }

  private unreachable(error: unknown, afterHeaders = false): MintUnreachableError {
    const err = error as {
      name?: string;
      code?: string;
      cause?: { code?: string; message?: string };
      message?: string;
    };
    if (err?.name === 'TimeoutError' || err?.name === 'AbortError') {
      return new MintUnreachableError(this.url, true, `no answer within ${this.timeoutMs} ms`);
    }
    const code = err?.cause?.code ?? err?.code;
    const delivered = afterHeaders || !code || !NOT_DELIVERED.has(code);
    return new MintUnreachableError(
      this.url,
      delivered,
      code ?? err?.cause?.message ?? err?.message ?? 'network error',
    );
  }
}

async function readLimited(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > MAX_RESPONSE_BYTES) throw new MintProtocolError(response.url, 'answer too large');
  const buffer = await response.arrayBuffer();
  if (buffer.byteLength > MAX_RESPONSE_BYTES) throw new MintProtocolError(response.url, 'answer too large');
  return new TextDecoder().decode(buffer);
}

/** Reads one property of a parsed JSON value without trusting its shape. */
export function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

function isSafeInteger(value: unknown): value is number {
  return Number.isSafeInteger(value);
}
