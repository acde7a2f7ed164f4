// LNURL-pay (LUD-06) through a Lightning address (LUD-16): `user@host` names
// https://host/.well-known/lnurlp/user, whose answer names a callback that returns an invoice for
// an amount. Every answer is checked (tag, limits, the invoice's own amount) before the node pays
// anything. Plain http is allowed only for loopback hosts, and only when the configuration says so
// (tests and local demos).
import { bech32Decode, invoiceAmountMsat } from '../../cashu/index.js';
import { HttpError } from '../../http/errors.js';
import { field } from '../wallet/mint-client.js';

const ADDRESS = /^([a-z0-9._+-]{1,64})@([a-z0-9.-]{1,253}(?::\d{1,5})?|\[[0-9a-f:]{2,39}\](?::\d{1,5})?)$/;
const MAX_ANSWER_BYTES = 64 * 1024;

export interface PayRequest {
  address: string;
  callback: URL;
  minSendableMsat: number;
  maxSendableMsat: number;
}

export interface LnurlOptions {
  timeoutMs: number;
  /** Plain http to loopback hosts (127.0.0.0/8, ::1, localhost): tests and local demos only. */
  allowHttpLoopback: boolean;
}

/**
 * A Lightning address (name@host, LUD-16) or a bech32 LNURL (lnurl1…, LUD-01) as the node keeps
 * it (lower case), or a 400 naming the problem.
 */
export function parseLightningAddress(value: string): string {
  const address = value.trim().toLowerCase();
  if (address.length <= 320 && ADDRESS.test(address)) return address;
  if (address.startsWith('lnurl1') && lnurlTarget(address) !== null) return address;
  throw lnurlError(
    400,
    'invalid_lightning_address',
    'A Lightning address looks like name@host (LUD-16), or an LNURL like lnurl1… (LUD-01)',
  );
}

/** The URL a bech32 LNURL encodes, or null. */
function lnurlTarget(lnurl: string): string | null {
  const decoded = bech32Decode(lnurl);
  if (!decoded || decoded.prefix !== 'lnurl') return null;
  const text = decoded.bytes.toString('utf8');
  return /^https?:\/\/[\x21-\x7e]+$/.test(text) ? text : null;
}

export class Lnurl {
  constructor(private options: LnurlOptions) {}

  /** The time limit of one request to an address's server. */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /** Resolves an address to its pay request (LUD-16, LUD-06). */
  async resolve(given: string): Promise<PayRequest> {
    const address = parseLightningAddress(given);
    const parts = ADDRESS.exec(address);
    const target = parts ? `https://${parts[2]}/.well-known/lnurlp/${parts[1]}` : lnurlTarget(address)!;
    const url = this.checkedUrl(target, 'address');
    const answer = await this.get(url);
    if (field(answer, 'status') === 'ERROR' || field(answer, 'tag') !== 'payRequest') {
      throw lnurlError(502, 'lnurl_error', `${address} does not accept payments (${reasonOf(answer)})`);
    }
    const callback = field(answer, 'callback');
    const min = field(answer, 'minSendable');
    const max = field(answer, 'maxSendable');
    if (typeof callback !== 'string' || !isCount(min) || !isCount(max) || min > max) {
      throw lnurlError(502, 'lnurl_error', `${address} answered an invalid pay request`);
    }
    return {
      address,
      callback: this.checkedUrl(callback, 'callback'),
      minSendableMsat: min,
      maxSendableMsat: max,
    };
  }

  /** An invoice for exactly `amountMsat` from the pay request's callback. */
  async invoice(pay: PayRequest, amountMsat: number): Promise<string> {
    if (amountMsat < pay.minSendableMsat || amountMsat > pay.maxSendableMsat) {
      throw lnurlError(
        400,
        'amount_outside_lnurl_limits',
        `${pay.address} accepts ${pay.minSendableMsat}–${pay.maxSendableMsat} msat; the refund would be ${amountMsat}`,
      );
    }
    const url = new URL(pay.callback);
    url.searchParams.set('amount', String(amountMsat));
    const answer = await this.get(url);
    const pr = field(answer, 'pr');
    if (field(answer, 'status') === 'ERROR' || typeof pr !== 'string') {
      throw lnurlError(502, 'lnurl_error', `${pay.address} gave no invoice (${reasonOf(answer)})`);
    }
    // LUD-06: the wallet must check that the invoice asks for the amount it asked for.
    if (invoiceAmountMsat(pr) !== amountMsat) {
      throw lnurlError(502, 'lnurl_error', `${pay.address} gave an invoice for another amount than asked`);
    }
    return pr;
  }

  private checkedUrl(text: string, what: string): URL {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw lnurlError(502, 'lnurl_error', `The Lightning address gave an invalid ${what} URL`);
    }
    if (this.options.allowHttpLoopback && isLoopback(url.hostname)) url.protocol = 'http:';
    else if (url.protocol !== 'https:') {
      throw lnurlError(502, 'lnurl_error', `The Lightning address's ${what} URL is not https`);
    }
    if (url.username || url.password) throw lnurlError(502, 'lnurl_error', `The ${what} URL carries credentials`);
    return url;
  }

  private async get(url: URL): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.options.timeoutMs),
        redirect: 'error',
      });
    } catch {
      throw lnurlError(502, 'lnurl_unreachable', `${url.host} could not be reached for the Lightning address`);
    }
    const declared = Number(response.headers.get('content-length') ?? '0');
    const body = declared > MAX_ANSWER_BYTES ? null : await response.arrayBuffer().catch(() => null);
    if (!body || body.byteLength > MAX_ANSWER_BYTES) {
      throw lnurlError(502, 'lnurl_error', `${url.host} gave no readable answer`);
    }
    try {
      return JSON.parse(new TextDecoder().decode(body));
    } catch {
      throw lnurlError(502, 'lnurl_error', `${url.host} answered something that is not JSON (HTTP ${response.status})`);
    }
  }
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The reason an LNURL service gave, shortened (it is the caller's to see, not ours to trust). */
function reasonOf(answer: unknown): string {
  const reason = field(answer, 'reason');
  return typeof reason === 'string' ? reason.slice(0, 200) : 'no reason given';
}

function lnurlError(status: number, code: string, message: string): HttpError {
  return new HttpError(status, message, { code, type: status === 400 ? 'invalid_request_error' : 'lnurl_error' });
}
