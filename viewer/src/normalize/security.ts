// Reading the security schemes of a description: the loop and the apiKey form are the same in
// 2.0 and 3.x; each version reads the other kinds its own way.
import { entries, isRecord, type JsonObject } from '../data.js';
import { table } from '../own.js';
import { text } from './common.js';
import type { SecurityScheme } from './model.js';

/** The description's security schemes, each read by its version's `read` (after `deref`). */
export function securitySchemesFrom(
  defs: unknown,
  read: (d: JsonObject, base: Pick<SecurityScheme, 'name' | 'description'>) => SecurityScheme,
  deref: (value: unknown) => unknown = (value) => value,
): Record<string, SecurityScheme> {
  const out = table<SecurityScheme>(); // scheme names are the description's
  for (const [name, raw] of entries(defs)) {
    const d = deref(raw);
    if (!isRecord(d)) continue;
    out[name] = read(d, { name, description: text(d.description) });
  }
  return out;
}

/** An OAuth flow's scopes: name → description, in a table without a prototype (the names are the description's). */
export function scopesOf(value: unknown): Record<string, string> {
  const out = table<string>();
  for (const [name, description] of entries(value)) out[name] = text(description) ?? '';
  return out;
}

/** An apiKey scheme; `places` are where this version lets the key go besides a header. */
export function apiKeyScheme(
  d: JsonObject,
  base: Pick<SecurityScheme, 'name' | 'description'>,
  places: readonly ('query' | 'cookie')[],
): SecurityScheme {
  const place = places.find((where) => where === d.in) ?? 'header';
  return { ...base, type: 'apiKey', paramName: text(d.name) ?? base.name, in: place };
}
