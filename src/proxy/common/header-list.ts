// Headers as name, value, name, value… (lower-case names): what undici and Node's writeHead take
// without walking an object, and what is built without a null-prototype dictionary per request.
import type { FastifyReply } from 'fastify';

export type HeaderList = (string | string[])[];

/** Where `name`'s entry is in a list: its index, or -1. */
export function headerIndex(list: HeaderList, name: string): number {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return i;
  return -1;
}

/** Sets a list's headers on a reply Fastify sends. */
export function setHeaderList(reply: FastifyReply, list: HeaderList): void {
  for (let i = 0; i < list.length; i += 2) reply.header(list[i] as string, list[i + 1]);
}
