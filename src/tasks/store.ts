// The SQL of tasks. Ownership is part of every query, so a task of another user is simply
// not found (no read-then-check race).
import { isForeignKeyViolation } from '../db/errors.js';
import type { Database } from '../db/index.js';
import type { TasksTable } from '../users/tables.js';

export type TaskRow = Omit<TasksTable, 'id'> & { id: number };

/** Restricts a query to one owner, or to none (admins). */
export type Owner = number | null;

const COLUMNS = ['id', 'user_id', 'title', 'description', 'done', 'created_at', 'updated_at'] as const;

export class TasksStore {
  constructor(private readonly database: Database) {}

  private get db() {
    return this.database.kysely;
  }

  /** The new task, or null when the owner does not exist. */
  async insert(userId: number, title: string, description: string, now = Date.now()): Promise<TaskRow | null> {
    try {
      return await this.db
        .insertInto('tasks')
        .values({ user_id: userId, title, description, done: 0, created_at: now, updated_at: now })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow();
    } catch (error) {
      if (isForeignKeyViolation(error)) return null;
      throw error;
    }
  }

  async list(
    userId: number,
    done: boolean | undefined,
    offset: number,
    limit: number,
  ): Promise<{ rows: TaskRow[]; total: number }> {
    let where = this.db.selectFrom('tasks').where('user_id', '=', userId);
    if (done !== undefined) where = where.where('done', '=', done ? 1 : 0);
    const [rows, count] = await Promise.all([
      where.select(COLUMNS).orderBy('id', 'desc').offset(offset).limit(limit).execute(),
      where.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: count.n };
  }

  async get(id: number, owner: Owner): Promise<TaskRow | undefined> {
    let query = this.db.selectFrom('tasks').select(COLUMNS).where('id', '=', id);
    if (owner !== null) query = query.where('user_id', '=', owner);
    return query.executeTakeFirst();
  }

  async update(
    id: number,
    owner: Owner,
    patch: { title?: string; description?: string; done?: boolean },
    now = Date.now(),
  ): Promise<TaskRow | undefined> {
    let query = this.db
      .updateTable('tasks')
      .set({
        ...(patch.title !== undefined ? { title: patch.title } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.done !== undefined ? { done: patch.done ? 1 : 0 } : {}),
        updated_at: now,
      })
      .where('id', '=', id);
    if (owner !== null) query = query.where('user_id', '=', owner);
    return query.returning(COLUMNS).executeTakeFirst();
  }

  async delete(id: number, owner: Owner): Promise<boolean> {
    let query = this.db.deleteFrom('tasks').where('id', '=', id);
    if (owner !== null) query = query.where('user_id', '=', owner);
    const result = await query.executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
