// Descriptions, option objects and the answers of servers are data of unknown shape: they are
// typed `unknown` and read through these narrowing functions, so the compiler checks that every
// value is looked at before it is used.

/** A JSON object (not null, not an array). */
export type JsonObject = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value when it is an object, else undefined. */
export function asRecord(value: unknown): JsonObject | undefined {
  return isRecord(value) ? value : undefined;
}

const EMPTY: JsonObject = Object.freeze(Object.create(null));

/** The value when it is an object, else an empty (frozen, prototype-less) one. */
export function record(value: unknown): JsonObject {
  return isRecord(value) ? value : EMPTY;
}

/** The value when it is a string, else undefined. */
export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The value when it is an array, else an empty one. */
export function asArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The strings of an array (other items skipped); an empty array for anything else. */
export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The own enumerable members of an object, [] for anything else. */
export function entries(value: unknown): [string, unknown][] {
  return isRecord(value) ? Object.entries(value) : [];
}
