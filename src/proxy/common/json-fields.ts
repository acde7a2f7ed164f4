// Fields of JSON from outside the node (an upstream's answer, a price feed, the models file): any
// may be missing or of another type, and only own fields count, so a key such as "constructor"
// finds nothing.

/** The value of `node[key]` when `node` is an object or array that has it as its own field. */
export function field(node: unknown, key: string): unknown {
  return node !== null && typeof node === 'object' && Object.hasOwn(node, key)
    ? (node as Record<string, unknown>)[key]
    : undefined;
}

/** The value at a path of fields (`['data', 'amount']`), undefined where one is missing. */
export function fieldAt(node: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>(field, node);
}
