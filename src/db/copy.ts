// PostgreSQL's COPY … FROM STDIN through a Kysely connection: an import's 100,000 rows go to the
// server as one stream of text rows instead of statements with array parameters, whose values
// the server parsed one by one (bench/README.md). Kysely hands a statement's text and parameters
// to the pg client of the connection (and so of the transaction) it runs on; a client of the
// pool runs a statement whose only parameter is a CopyInput as COPY, streaming its rows.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Executor } from './index.js';

/** A value of a COPY row: text, a number, or null (SQL NULL). */
export type CopyValue = string | number | null;

type CopyRow = readonly CopyValue[];

/**
 * The rows of a COPY: all at hand, or in batches as they come (an import's rows while its file is
 * still being read: the server writes the first ones meanwhile).
 */
export type CopyRows = Iterable<CopyRow> | AsyncIterable<readonly CopyRow[]>;

/** The rows of a COPY, as the statement's one parameter (never sent as a value). */
export class CopyInput {
  constructor(readonly rows: CopyRows) {}
}

/** A value COPY's text format cannot carry: PostgreSQL's text has no NUL character. */
export class CopyValueError extends Error {}

// The text format's escapes: a backslash, and the tab, newline and carriage return that would
// end a value or a row. Escaping every backslash also means no row reads as the end marker `\.`.
const SPECIAL = /[\\\t\n\r\0]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value in COPY's text format (`\N` is NULL). */
export function copyText(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new CopyValueError(`${value} is not a finite number`);
    return String(value);
  }
  return value.replace(SPECIAL, (c) => {
    if (c === '\0') throw new CopyValueError('the text contains a NUL character, which PostgreSQL cannot store');
    return ESCAPES[c];
  });
}

// Rows are sent in pieces of about this many characters (a few socket writes each).
const PIECE = 64 * 1024;

/** The rows as COPY text, in pieces, made as the socket takes them. */
async function* copyPieces(rows: CopyRows): AsyncGenerator<string> {
  const batches = isAsync(rows) ? rows : [rows];
  let piece = '';
  for await (const batch of batches) {
    for (const row of batch) {
      let line = '';
      for (let i = 0; i < row.length; i++) line += (i ? '\t' : '') + copyText(row[i]);
      piece += line + '\n';
      if (piece.length >= PIECE) {
        yield piece;
        piece = '';
      }
    }
  }
  if (piece) yield piece;
}

function isAsync(rows: CopyRows): rows is AsyncIterable<readonly CopyRow[]> {
  return typeof (rows as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function';
}

type Query = (...args: unknown[]) => unknown;

/**
 * Lets a pool's clients run COPY FROM STDIN for a statement whose only parameter is a CopyInput
 * (call on the pool's 'connect' event). Every other statement goes to pg as it came.
 */
export function acceptCopyInput(client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  const copying: Query = (text, values, ...rest) => {
    const input = Array.isArray(values) && values.length === 1 ? values[0] : undefined;
    if (!(input instanceof CopyInput) || typeof text !== 'string') return query(text, values, ...rest);
    return runCopy(query, text, input);
  };
  client.query = copying as typeof client.query;
}

/** The pg result of a COPY; Kysely passes `rows` on (its row count is only for DML). */
async function runCopy(query: Query, text: string, input: CopyInput) {
  const stream = query(copyFrom(text)) as ReturnType<typeof copyFrom>;
  // A value that cannot be sent fails the stream: pg-copy-streams then sends CopyFail, and the
  // server ends the COPY (the transaction is then aborted, as after any failed statement).
  await pipeline(Readable.from(copyPieces(input.rows)), stream);
  return { command: 'COPY', rowCount: stream.rowCount, rows: [{ copied: stream.rowCount }] };
}

/** `"name"`: the names are the caller's own, never from a request. */
const quoted = (name: string) => `"${name}"`;

/**
 * COPY rows into a table (PostgreSQL only): the values of each row in the order of `columns`.
 * Returns the number of rows copied.
 */
export async function copyRows(
  db: Executor,
  table: string,
  columns: readonly string[],
  rows: CopyRows,
): Promise<number> {
  const text = `copy ${quoted(table)} (${columns.map(quoted).join(', ')}) from stdin`;
  const result = await db.executeQuery<{ copied: number }>(CompiledQuery.raw(text, [new CopyInput(rows)]));
  return result.rows[0]?.copied ?? 0;
}
