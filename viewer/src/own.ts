// Descriptions, options and addresses are other people's data: names in them (`__proto__`,
// `constructor`) must stay plain keys. Tables keyed by such names have no prototype, and lookups
// by such names see own properties only.

/** An empty table without a prototype: `table[name] = …` never runs the `__proto__` setter. */
export function table<T>(): Record<string, T> {
  return Object.create(null);
}

/** True when `value` has its own property `name` (Object.hasOwn, for older browsers). */
export function hasOwn(value: object, name: PropertyKey): boolean {
  return Object.prototype.hasOwnProperty.call(value, name);
}

/** The own property `name` of a table, never a member inherited from Object.prototype. */
export function ownValue<T>(value: Record<string, T>, name: string): T | undefined {
  return hasOwn(value, name) ? value[name] : undefined;
}
