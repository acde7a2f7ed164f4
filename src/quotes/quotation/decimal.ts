// Exact decimal arithmetic for prices: a value is a BigInt count of 10^-scale units, so
// 0.005 × 2013 is exactly 10.065 and rounds half-up to "10.07" (binary floats give 10.06).

export interface Decimal {
  units: bigint;
  scale: number;
}

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** Parses a non-negative decimal written like "0.05" or "12"; throws on anything else. */
export function parseDecimal(text: string): Decimal {
  const match = DECIMAL.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a decimal number like 0.05`);
  const fraction = match[2] ?? '';
  if (fraction.length > 12) throw new Error(`"${text}" has more than 12 decimal places`);
  return { units: BigInt(match[1] + fraction), scale: fraction.length };
}

export function multiplyByInteger(value: Decimal, factor: number | bigint): Decimal {
  return { units: value.units * BigInt(factor), scale: value.scale };
}

export function add(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescaleExact(a, scale) + rescaleExact(b, scale), scale };
}

function rescaleExact(value: Decimal, scale: number): bigint {
  return value.units * 10n ** BigInt(scale - value.scale);
}

/** Rounds half-up (away from zero for these non-negative values) to `places` decimals. */
export function roundHalfUp(value: Decimal, places: number): Decimal {
  if (value.scale <= places) return { units: rescaleExact(value, places), scale: places };
  const divisor = 10n ** BigInt(value.scale - places);
  const sign = value.units < 0n ? -1n : 1n;
  const magnitude = value.units * sign;
  const rounded = (magnitude + divisor / 2n) / divisor;
  return { units: rounded * sign, scale: places };
}

export function formatDecimal(value: Decimal): string {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, '0');
  const whole = digits.slice(0, digits.length - value.scale);
  const fraction = digits.slice(digits.length - value.scale);
  return `${negative ? '-' : ''}${whole}${value.scale ? `.${fraction}` : ''}`;
}

/** Price of `words` at `perWord`, half-up to cents: the quotation's total_cost. */
export function totalCost(perWord: string, words: number): string {
  return formatDecimal(roundHalfUp(multiplyByInteger(parseDecimal(perWord), words), 2));
}
