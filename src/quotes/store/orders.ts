// SQL of orders, their assignments and the translators' backlog.
import { sql, type Selectable } from 'kysely';
import type { Dialect, Executor } from '../../db/index.js';
import type { QuoteAssignmentRow } from '../tables.js';
import type { OrderRow } from './rows.js';

/** Each translator's end of assigned work in a language, for work still running at `now`. */
export async function backlog(db: Executor, locale: string, now: number): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('quote_assignments')
    .select(['translator', sql<number>`max(busy_until)`.as('until')])
    .where('locale', '=', locale)
    .where('busy_until', '>', now)
    .groupBy('translator')
    .execute();
  return new Map(rows.map((row) => [row.translator, row.until]));
}

/** The translator with the most words translated on the project in this language. */
export async function preferredTranslator(db: Executor, projectId: number, locale: string): Promise<string | null> {
  const row = await db
    .selectFrom('quote_assignments')
    .select(['translator', sql<number>`sum(word_count)`.as('words')])
    .where('project_id', '=', projectId)
    .where('locale', '=', locale)
    .where('role', '=', 'translate')
    .groupBy('translator')
    .orderBy(sql`sum(word_count)`, 'desc')
    .orderBy('translator')
    .executeTakeFirst();
  return row?.translator ?? null;
}

export type NewOrder = Omit<OrderRow, 'id'>;
export type NewAssignment = Omit<AssignmentRow, 'id'>;

/** Stores an order with its assignments (the translators' backlog from now on); returns its id. */
export async function insertOrder(
  db: Executor,
  values: NewOrder,
  assignments: Omit<NewAssignment, 'order_id'>[],
): Promise<number> {
  const { id } = await db.insertInto('quote_orders').values(values).returning('id').executeTakeFirstOrThrow();
  await db
    .insertInto('quote_assignments')
    .values(assignments.map((assignment) => ({ ...assignment, order_id: id })))
    .execute();
  return id;
}

/** Moves the "outdated" baseline of a file in a language to the time of an order. */
export async function markOrdered(db: Executor, fileId: number, locale: string, orderedAt: number): Promise<void> {
  await db
    .insertInto('quote_file_locales')
    .values({
      file_id: fileId,
      locale,
      ordered_at: orderedAt,
      translated_at: null,
      plural_forms: null,
      not_translated_strings: 0,
      not_translated_words: 0,
      not_approved_strings: 0,
      not_approved_words: 0,
      outdated_strings: 0,
      outdated_words: 0,
      approved_strings: 0,
      approved_words: 0,
    })
    .onConflict((oc) => oc.columns(['file_id', 'locale']).doUpdateSet({ ordered_at: orderedAt }))
    .execute();
}

export async function findOrder(db: Executor, projectId: number, id: number): Promise<OrderRow | undefined> {
  return db
    .selectFrom('quote_orders')
    .selectAll()
    .where((eb) => eb.and({ project_id: projectId, id }))
    .executeTakeFirst();
}

/**
 * The orders of a project, or those of one of its files (`files` holds a JSON array of names).
 * The file's name is compared with each element, as a parameter, in each dialect's JSON function.
 */
function ordersOf(db: Executor, dialect: Dialect, projectId: number, fileName: string | undefined) {
  const query = db.selectFrom('quote_orders').where('project_id', '=', projectId);
  if (!fileName) return query;
  return query.where(
    dialect === 'postgres'
      ? sql<boolean>`exists (select 1 from json_array_elements_text(cast(files as json)) as f(name)
          where f.name = ${fileName})`
      : sql<boolean>`exists (select 1 from json_each(files) where json_each.value = ${fileName})`,
  );
}

export async function countOrders(db: Executor, dialect: Dialect, projectId: number, fileName?: string) {
  const row = await ordersOf(db, dialect, projectId, fileName)
    .select(db.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** A page of a project's orders (or of one file's), newest first. */
export async function pageOfOrders(
  db: Executor,
  dialect: Dialect,
  projectId: number,
  fileName: string | undefined,
  limit: number,
  offset: number,
): Promise<OrderRow[]> {
  return ordersOf(db, dialect, projectId, fileName)
    .selectAll()
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export type AssignmentRow = Selectable<QuoteAssignmentRow>;

/** The assignments of several orders, each order's in the order they were made. */
export async function assignmentsOf(db: Executor, orderIds: number[]): Promise<Map<number, AssignmentRow[]>> {
  const byOrder = new Map<number, AssignmentRow[]>(orderIds.map((id) => [id, []]));
  if (!orderIds.length) return byOrder;
  const rows = await db
    .selectFrom('quote_assignments')
    .selectAll()
    .where('order_id', 'in', orderIds)
    .orderBy('id')
    .execute();
  for (const row of rows) byOrder.get(row.order_id)?.push(row);
  return byOrder;
}
