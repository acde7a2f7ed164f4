// Reading what a BOLT-11 invoice says without trusting it: its amount (the human-readable part)
// and its payment hash (tagged field `p`). The signature and checksum are not checked: the mint
// that pays or issues the invoice does that; the node only compares amounts and shows the hash.
// https://github.com/lightning/bolts/blob/master/11-payment-encoding.md

const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
/** BOLT-11 multipliers in millisatoshis ('p' = 0.1 msat is handled apart). */
export const BOLT11_MULTIPLIERS: [string, number][] = [
  ['m', 100_000_000],
  ['u', 100_000],
  ['n', 100],
];
/** Longest invoice read (BOLT-11 has no limit; real ones are well under 2 KB). */
const MAX_LENGTH = 7089;
/** 7 words of timestamp, then tagged fields, then a 104-word signature (and 6 of checksum). */
const TIMESTAMP_WORDS = 7;
const TRAILER_WORDS = 104;

function split(request: string): { prefix: string; words: string } | undefined {
  const text = request.trim().toLowerCase();
  if (text.length > MAX_LENGTH) return undefined;
  const separator = text.lastIndexOf('1');
  if (separator < 3 || separator === text.length - 1) return undefined;
  const words = text.slice(separator + 1);
  if (![...words].every((c) => BECH32.includes(c))) return undefined;
  return { prefix: text.slice(0, separator), words };
}

/**
 * The amount a bolt11 invoice asks for: msat, null when it names none, undefined when the string
 * does not look like an invoice at all.
 */
export function invoiceAmountMsat(request: string): number | null | undefined {
  const parts = split(request);
  const match = parts && /^ln[a-z]+?(\d*)([munp]?)$/.exec(parts.prefix);
  if (!match) return undefined;
  const [, digits, multiplier] = match;
  if (digits === '') return null;
  if (digits.startsWith('0') || digits.length > 15) return undefined;
  const value = Number(digits);
  if (multiplier === '') return value * 100_000_000_000;
  if (multiplier === 'p') return value % 10 === 0 ? value / 10 : undefined;
  return value * BOLT11_MULTIPLIERS.find(([m]) => m === multiplier)![1];
}

/** The payment hash (hex) of tagged field `p`, or null when it cannot be read. */
export function invoicePaymentHash(request: string): string | null {
  const parts = split(request);
  if (!parts) return null;
  const words = [...parts.words].map((c) => BECH32.indexOf(c));
  let at = TIMESTAMP_WORDS;
  // Fields end where the signature begins; at most a few dozen fields, each read once.
  while (at + 3 <= words.length - TRAILER_WORDS) {
    const type = words[at];
    const length = words[at + 1] * 32 + words[at + 2];
    const data = words.slice(at + 3, at + 3 + length);
    if (data.length !== length) return null;
    if (type === 1 && length === 52) return wordsToHex(data).slice(0, 64);
    at += 3 + length;
  }
  return null;
}

const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

/**
 * The bytes of a bech32 string (BIP-173) whose checksum holds, with its human-readable part; null
 * otherwise. No length limit of 90 (LNURLs are longer), but at most MAX_LENGTH characters.
 */
export function bech32Decode(text: string): { prefix: string; bytes: Buffer } | null {
  if (text !== text.toLowerCase() && text !== text.toUpperCase()) return null;
  const parts = split(text);
  if (!parts || parts.words.length < 6) return null;
  const words = [...parts.words].map((c) => BECH32.indexOf(c));
  let checksum = 1;
  const expanded = [...[...parts.prefix].map((c) => c.charCodeAt(0) >> 5), 0];
  expanded.push(...[...parts.prefix].map((c) => c.charCodeAt(0) & 31), ...words);
  for (const value of expanded) {
    const top = checksum >>> 25;
    checksum = ((checksum & 0x1ffffff) << 5) ^ value;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) checksum ^= GENERATOR[i];
  }
  if (checksum !== 1) return null;
  return { prefix: parts.prefix, bytes: Buffer.from(wordsToHex(words.slice(0, -6)), 'hex') };
}

function wordsToHex(words: number[]): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const word of words) {
    value = ((value << 5) | word) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      out += ((value >>> (bits - 8)) & 0xff).toString(16).padStart(2, '0');
      bits -= 8;
    }
  }
  return out;
}
