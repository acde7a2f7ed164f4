// Database errors as both databases report them (pg's SQLSTATE and its client's messages,
// Node's socket codes, better-sqlite3's code), sorted by what a caller should be told.

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code;

/** A unique or primary-key constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A foreign key refused the row: the row it refers to is gone (deleted by a concurrent request). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** PostgreSQL gave up this statement's transaction to let a concurrent one through (deadlock,
 * serialization failure): that transaction was rolled back, and the request may be sent again. */
export function isTransactionConflict(error: unknown): boolean {
  const code = codeOf(error);
  return code === '40P01' || code === '40001';
}

/** What the database's trouble means for a caller: try again soon, or once an operator freed space. */
export type DatabaseOutage = 'unavailable' | 'storage-full';

// PostgreSQL: class 08 (connection exception), the server shutting down or starting (57P01–57P03),
// too many connections (53300), a database not accepting connections (55000 on connect), out of
// memory (53200); disk full is 53100.
const PG_UNAVAILABLE = /^(08...|57P0[1-3]|53[23]00|55000)$/;
// Node's socket errors and pg's own messages for a connection that is gone or could not be made in
// time: they say nothing of where they came from, so only the pool's wrapper reads them (index.ts).
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
]);
const PG_CLIENT_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed|Query read timeout)/;

/** The connection to PostgreSQL failed (not the statement): thrown by the pool's wrapper in index.ts. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the database is unreachable: ${(cause as { message?: string } | null)?.message ?? String(cause)}`, {
      cause,
    });
    this.name = 'DatabaseUnavailableError';
  }
}

/** A pg client's or socket's error that means the connection, not the statement, failed. */
export function isConnectionFailure(error: unknown): boolean {
  const code = codeOf(error);
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && PG_CLIENT_MESSAGES.test(message);
}
// SQLite: a read-only or unreadable file, an I/O error, a lock held past the busy timeout.
const SQLITE_UNAVAILABLE = /^SQLITE_(READONLY|IOERR|CANTOPEN|BUSY|LOCKED|NOMEM|PROTOCOL)/;

/**
 * Whether `error` (or an error it wraps) says the database is gone or full rather than that the
 * request was wrong: null for any other error.
 */
export function databaseOutage(error: unknown): DatabaseOutage | null {
  for (let depth = 0; depth < 4 && error; depth++) {
    const code = codeOf(error);
    if (code === 'SQLITE_FULL' || code === '53100' || code === 'ENOSPC') return 'storage-full';
    if (error instanceof DatabaseUnavailableError) return 'unavailable';
    if (typeof code === 'string' && (PG_UNAVAILABLE.test(code) || SQLITE_UNAVAILABLE.test(code))) return 'unavailable';
    error = (error as { cause?: unknown }).cause;
  }
  return null;
}
