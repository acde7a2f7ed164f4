// The column types that differ between SQLite and PostgreSQL, for migrations.
// Conventions: money in integer msat (bigint), times in Unix milliseconds (bigint),
// booleans as 0/1 integers, bytes as blob/bytea.
import type { ColumnDataType, CreateTableBuilder } from 'kysely';
import type { Dialect } from './index.js';

export interface Columns {
  dialect: Dialect;
  bigint: ColumnDataType;
  bytes: ColumnDataType;
  /** Adds an auto-incrementing integer primary key (`id` unless named). */
  autoId<T extends string, C extends string>(
    table: CreateTableBuilder<T, C>,
    name?: string,
  ): CreateTableBuilder<T, string>;
}

export function columnsFor(dialect: Dialect): Columns {
  return {
    dialect,
    bigint: dialect === 'postgres' ? 'bigint' : 'integer',
    bytes: dialect === 'postgres' ? 'bytea' : 'blob',
    autoId: (table, name = 'id') =>
      dialect === 'postgres'
        ? table.addColumn(name, 'bigserial', (col) => col.primaryKey())
        : table.addColumn(name, 'integer', (col) => col.primaryKey().autoIncrement()),
  };
}
