// Queries on hot paths, built and compiled by Kysely once and then run with new values.
// Building and compiling a Kysely query costs several times what SQLite takes to run it
// (bench/README.md, Measurements behind the code), so a query that runs on every request is
// written once like this:
//
//   const byId = prepared((p: Params<{ id: number }>, db) => db.selectFrom('t').selectAll().where('id', '=', p.id));
//   const { rows } = await byId.run(executor, { id: 7 });
//
// Each parameter is a placeholder object while the query is built; Kysely passes it on as a bound
// value, and `run` swaps every placeholder for the value of that name. Values stay bound
// parameters: nothing is ever interpolated into the SQL.
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { DB } from './schema.js';

class Placeholder {
  constructor(readonly name: string) {}
}

/** The parameters as the query builder sees them (typed as their values, placeholders at run time). */
export type Params<P> = { readonly [K in keyof P]: P[K] };

export interface PreparedQuery<P, R> {
  run(db: Kysely<DB>, values: P): Promise<QueryResult<R>>;
}

export function prepared<P extends Record<string, unknown>, R>(
  build: (params: Params<P>, db: Kysely<DB>) => Compilable<R>,
): PreparedQuery<P, R> {
  // One compiled form per database (the dialects differ), found through any executor of it.
  const compiledFor = new WeakMap<object, { compiled: CompiledQuery<R>; slots: (string | null)[] }>();
  const params = new Proxy({} as Params<P>, {
    get: (_target, name) => new Placeholder(String(name)),
  });
  return {
    async run(db, values) {
      const key = db.getExecutor().adapter;
      let entry = compiledFor.get(key);
      if (!entry) {
        const compiled = build(params, db).compile();
        const slots = compiled.parameters.map((value) => (value instanceof Placeholder ? value.name : null));
        entry = { compiled, slots };
        compiledFor.set(key, entry);
      }
      const { compiled, slots } = entry;
      const parameters = compiled.parameters.map((value, i) => {
        const name = slots[i];
        if (name === null) return value;
        if (!(name in values)) throw new Error(`prepared query: no value for parameter "${name}"`);
        return values[name];
      });
      const { query, queryId, sql } = compiled;
      return db.executeQuery<R>({ query, queryId, sql, parameters });
    },
  };
}
