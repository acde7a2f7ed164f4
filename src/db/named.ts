// Named prepared statements on PostgreSQL: a statement run many times a second (a hot account's
// billing batch) is parsed and planned once per connection instead of at every run, which cost
// the server a fifth of such a batch (bench/README.md, "Group commit of billing"). Kysely hands a
// statement's text and parameters to the pg client; a client of the pool runs a text marked here
// as pg's named statement, every other one as it came.
import type pg from 'pg';

const names = new Map<string, string>();

/** Marks a statement's text (constant, with placeholders only) to be prepared once per connection. */
export function namedStatement(text: string): string {
  if (!names.has(text)) names.set(text, `quartet_${names.size + 1}`);
  return text;
}

type Query = (...args: unknown[]) => unknown;

/** Lets a pool's client run the marked statements by name (call on the pool's 'connect' event). */
export function acceptNamedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  const named: Query = (text, values, ...rest) => {
    const name = typeof text === 'string' && Array.isArray(values) ? names.get(text) : undefined;
    return name === undefined ? query(text, values, ...rest) : query({ name, text, values }, ...rest);
  };
  client.query = named as typeof client.query;
}
