// Fields of data from outside (an upstream's answer, a price feed, a request body, an uploaded file
// or a parser's tree of it): `unknown` until checked, any field may be missing or of another type,
// and only own fields count, so a key such as "constructor" finds nothing.

/** An object or array, whose own fields may then be read with field(). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/** The value of `node[key]` when `node` is an object or array that has it as its own field. */
export function field(node: unknown, key: string): unknown {
  return isRecord(node) && Object.hasOwn(node, key) ? node[key] : undefined;
}

/** The value at a path of fields (`['data', 'amount']`), undefined where one is missing. */
export function fieldAt(node: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>(field, node);
}
