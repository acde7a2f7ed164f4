// NUT-01: a mint's public keys (one per amount) and the currency units quartet handles.
// https://github.com/cashubtc/nuts/blob/main/01.md
export type { Keys } from '@cashu/cashu-ts';

export const UNITS = ['sat', 'msat'] as const;
export type Unit = (typeof UNITS)[number];

export function isUnit(value: string): value is Unit {
  return (UNITS as readonly string[]).includes(value);
}

/** Converts an amount of a mint unit to msat; throws when the unit is not supported. */
export function unitToMsat(amount: number, unit: string): number {
  if (unit === 'sat') return amount * 1000;
  if (unit === 'msat') return amount;
  throw new Error(`unsupported unit ${unit}`);
}

/** The whole units of `unit` that fit in `amountMsat` (sat: rounded down). */
export function msatToUnit(amountMsat: number, unit: string): number {
  if (unit === 'sat') return Math.floor(amountMsat / 1000);
  if (unit === 'msat') return amountMsat;
  throw new Error(`unsupported unit ${unit}`);
}
