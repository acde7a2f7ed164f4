// Reading JSON Schema keywords of a description's schemas (typed `unknown` until read here).
import { asArray, isRecord, strings, type JsonObject } from './data.js';
import type { Resolver } from './refs.js';

/** The types a schema names: `type` as one string or a 3.1 array of them. */
export function declaredTypes(s: JsonObject): string[] {
  return typeof s.type === 'string' ? [s.type] : strings(s.type);
}

/** The schema's type other than `null` (3.1 type arrays), as written. */
export function nonNullType(s: JsonObject): string | undefined {
  return declaredTypes(s).find((x) => x !== 'null');
}

/** oneOf, else anyOf: the alternatives, or undefined when there are none. */
export function alternativesOf(s: JsonObject): readonly unknown[] | undefined {
  if (Array.isArray(s.oneOf)) return s.oneOf;
  if (Array.isArray(s.anyOf)) return s.anyOf;
  return s.oneOf || s.anyOf ? [] : undefined;
}

/** The allOf parts (empty when none). */
export function allOfParts(s: JsonObject): readonly unknown[] {
  return asArray(s.allOf);
}

/** The enum values, or undefined when the schema has no enum. */
export function enumOf(s: JsonObject): readonly unknown[] | undefined {
  return Array.isArray(s.enum) ? s.enum : undefined;
}

/** A schema reached through `resolver`, or an empty one (the renderers treat both as "any"). */
export function resolved(schema: unknown, resolver: Resolver): JsonObject {
  return resolver.object(schema) ?? {};
}

/** A schema's own `properties`, when it is an object. */
export function propertiesIn(s: JsonObject): JsonObject | undefined {
  return isRecord(s.properties) ? s.properties : undefined;
}
