// Many rows per statement, written as parameterized SQL directly: an import's thousands of
// strings, a billing batch's dozens of ledger rows. Building a Kysely insert of thousands of rows
// cost about as much as SQLite took to run it (one value node per cell); here the SQL text
// depends only on the table, the columns and the number of rows, so SQLite reuses the prepared
// statement (src/db keeps a cache by SQL text), and the values are always bound parameters.
// - SQLite: multi-row VALUES, at most 32766 bound values a statement;
// - PostgreSQL: one array parameter per column, expanded by unnest (any number of rows).
import { CompiledQuery, type SelectType } from 'kysely';
import type { Dialect, Executor } from './index.js';
import type { DB } from './schema.js';

export type TableName = keyof DB & string;

/** The column names of a table; without one, of every table (distributes over the union). */
export type ColumnName<T extends TableName = TableName> = T extends TableName ? keyof DB[T] & string : never;

/** A column of table T and its PostgreSQL type (for the unnest array's cast). */
export interface Column<T extends TableName> {
  name: ColumnName<T>;
  type: 'bigint' | 'integer' | 'text';
}

/**
 * A column an update sets: to the given value, to the current value plus it ('add'), or to it
 * unless it is null ('unless-null', which keeps the current value).
 */
export interface SetColumn<T extends TableName> extends Column<T> {
  combine?: 'add' | 'unless-null';
}

/** The `returning` columns of a written row, typed as the table selects them. */
export type Returned<T extends TableName, K extends ColumnName<T>> = { [C in K]: SelectType<DB[T][C]> };

export interface UpdateOptions<T extends TableName, K extends ColumnName<T>> {
  /** A further condition on the updated row `t`, as SQL written by the caller (never a value). */
  where?: string;
  /** Columns of the changed rows to return. */
  returning?: readonly K[];
}

/** Columns of `table` in the order given (the order of their values), with their PostgreSQL types. */
export function columnsOf<T extends TableName>(
  _table: T,
  types: { [C in ColumnName<T>]?: Column<T>['type'] },
): Column<T>[] {
  const entries = Object.entries(types) as [ColumnName<T>, Column<T>['type']][];
  return entries.map(([name, type]) => ({ name, type }));
}

const SQLITE_MAX_VALUES = 32766;
// Rows per statement: on SQLite 500 are as fast as more (bench/README.md); 10,000 keep a
// PostgreSQL statement's arrays a few megabytes.
const SQLITE_ROWS = 500;
const POSTGRES_ROWS = 10_000;

const quoted = (name: string) => `"${name}"`;

/**
 * INSERT INTO table (columns) rows, given as their values one after another in column order
 * (one flat array: no array per row for 100,000 rows). Returns the `returning` columns of the
 * new rows.
 */
export async function insertRows<T extends TableName, K extends ColumnName<T> = never>(
  db: Executor,
  dialect: Dialect,
  table: T,
  columns: readonly Column<T>[],
  values: readonly unknown[],
  returning: readonly K[] = [],
): Promise<Returned<T, K>[]> {
  type R = Returned<T, K>;
  const out: R[] = [];
  for (const batch of batches(dialect, columns.length, values)) {
    const text = statementText(columns, `${dialect} insert ${table} ${batch.length} ${returning}`, () => {
      const names = columns.map((column) => quoted(column.name)).join(', ');
      const source =
        dialect === 'postgres'
          ? `select * from ${unnest(columns)}`
          : `values ${sqliteRows(columns.length, batch.length / columns.length)}`;
      return `insert into ${quoted(table)} (${names}) ${source}${returningClause(returning)}`;
    });
    const result = await db.executeQuery<R>(CompiledQuery.raw(text, parameters(dialect, columns.length, batch)));
    out.push(...result.rows);
  }
  return out;
}

/**
 * UPDATE table SET the set columns WHERE the key columns match, for each row; `values` as for
 * insertRows, each row's key values first (null for an 'unless-null' column keeps its value).
 * At least one key: without one every row would match. Returns the `returning` columns of the
 * changed rows.
 */
export async function updateRows<T extends TableName, K extends ColumnName<T> = never>(
  db: Executor,
  dialect: Dialect,
  table: T,
  keys: readonly [Column<T>, ...Column<T>[]],
  set: readonly SetColumn<T>[],
  values: readonly unknown[],
  options: UpdateOptions<T, K> = {},
): Promise<Returned<T, K>[]> {
  type R = Returned<T, K>;
  const columns = [...keys, ...set];
  const out: R[] = [];
  for (const batch of batches(dialect, columns.length, values)) {
    const text = statementText(
      set,
      `${dialect} update ${table} ${keys.map((key) => key.name)} ${batch.length} ${options.where} ${options.returning}`,
      () => {
        // SQLite names the columns of a VALUES list column1, column2, …
        const ref = (i: number) => (dialect === 'postgres' ? `v.${quoted(columns[i].name)}` : `v.column${i + 1}`);
        const assignments = set
          .map((column, i) => {
            const value = ref(keys.length + i);
            const current = `t.${quoted(column.name)}`;
            const expression =
              column.combine === 'add'
                ? `${current} + ${value}`
                : column.combine === 'unless-null'
                  ? `coalesce(${value}, ${current})`
                  : value;
            return `${quoted(column.name)} = ${expression}`;
          })
          .join(', ');
        const match = [
          ...keys.map((column, i) => `t.${quoted(column.name)} = ${ref(i)}`),
          ...(options.where ? [`(${options.where})`] : []),
        ].join(' and ');
        const source =
          dialect === 'postgres'
            ? unnest(columns)
            : `(values ${sqliteRows(columns.length, batch.length / columns.length)}) as v`;
        const returning = returningClause(options.returning ?? [], dialect === 'postgres' ? 't.' : '');
        return `update ${quoted(table)} as t set ${assignments} from ${source} where ${match}${returning}`;
      },
    );
    const result = await db.executeQuery<R>(CompiledQuery.raw(text, parameters(dialect, columns.length, batch)));
    out.push(...result.rows);
  }
  return out;
}

/**
 * The SQL text of a statement, made once per column list (by identity) and shape: a billing
 * batch of one row runs these statements for every request, and rebuilding their text cost
 * about as much as SQLite took to run them.
 */
const texts = new WeakMap<object, Map<string, string>>();
function statementText(columns: object, shape: string, make: () => string): string {
  let byShape = texts.get(columns);
  if (!byShape) texts.set(columns, (byShape = new Map()));
  let text = byShape.get(shape);
  if (text === undefined) {
    text = make();
    if (byShape.size < 1000) byShape.set(shape, text);
  }
  return text;
}

/** ` returning a, b` (PostgreSQL needs the updated table's alias where v has the same names). */
function returningClause(columns: readonly string[], prefix = ''): string {
  return columns.length ? ` returning ${columns.map((name) => `${prefix}${quoted(name)}`).join(', ')}` : '';
}

/** The values in slices of whole rows, as many rows as one statement takes. */
function batches(dialect: Dialect, width: number, values: readonly unknown[]): (readonly unknown[])[] {
  const rows = dialect === 'postgres' ? POSTGRES_ROWS : Math.min(SQLITE_ROWS, Math.floor(SQLITE_MAX_VALUES / width));
  if (values.length <= rows * width) return values.length ? [values] : [];
  const out: (readonly unknown[])[] = [];
  for (let i = 0; i < values.length; i += rows * width) out.push(values.slice(i, i + rows * width));
  return out;
}

/** `unnest($1::type[], …) as v(columns)` */
function unnest(columns: readonly { name: string; type: string }[]): string {
  const arrays = columns.map((column, i) => `$${i + 1}::${column.type}[]`).join(', ');
  return `unnest(${arrays}) as v(${columns.map((column) => quoted(column.name)).join(', ')})`;
}

/** `(?, ?), (?, ?)` for `rows` rows of `width` values. */
function sqliteRows(width: number, rows: number): string {
  const row = `(${new Array(width).fill('?').join(', ')})`;
  return new Array(rows).fill(row).join(', ');
}

/** SQLite: the values as they are; PostgreSQL: one array per column. */
function parameters(dialect: Dialect, width: number, values: readonly unknown[]): unknown[] {
  if (dialect !== 'postgres') return [...values];
  return Array.from({ length: width }, (_, column) => values.filter((_, i) => i % width === column));
}
