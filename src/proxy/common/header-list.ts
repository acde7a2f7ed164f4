// Headers as name, value, name, value… (lower-case names): what undici and Node's writeHead take
// without walking an object, and what is built without a null-prototype dictionary per request.

export type HeaderList = (string | string[])[];

/** Where `name`'s entry is in a list: its index, or -1. */
export function headerIndex(list: HeaderList, name: string): number {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return i;
  return -1;
}
