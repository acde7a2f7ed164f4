// Constraint violations as both databases report them (pg's SQLSTATE, better-sqlite3's code).

/** A unique or primary-key constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A foreign key refused the row: the row it refers to is gone (deleted by a concurrent request). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** PostgreSQL gave up this statement's transaction to let a concurrent one through (deadlock,
 * serialization failure): that transaction was rolled back, and the request may be sent again. */
export function isTransactionConflict(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
}
