// SQL of project groups.
import type { Executor } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import type { Project, ProjectGroup } from './rows.js';

/** Groups the principal may see: its own, or every group for an admin. */
function groupsOf(db: Executor, principal: Principal) {
  const query = db.selectFrom('quote_project_groups');
  return principal.role === 'admin' ? query : query.where('owner_id', '=', principal.userId);
}

export async function findGroup(db: Executor, id: number, principal: Principal): Promise<ProjectGroup | undefined> {
  return groupsOf(db, principal).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countGroups(db: Executor, principal: Principal): Promise<number> {
  const row = await groupsOf(db, principal).select(db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function pageOfGroups(
  db: Executor,
  principal: Principal,
  limit: number,
  offset: number,
): Promise<ProjectGroup[]> {
  return groupsOf(db, principal).selectAll().orderBy('id').limit(limit).offset(offset).execute();
}

export async function insertGroup(db: Executor, values: Omit<ProjectGroup, 'id'>): Promise<number> {
  const row = await db.insertInto('quote_project_groups').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/** Deletes a group; its projects go with it, and everything theirs (cascade). */
export async function deleteGroup(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('quote_project_groups').where('id', '=', id).execute();
}

/** The projects of a group, oldest first. */
export async function projectsOfGroup(db: Executor, groupId: number): Promise<Pick<Project, 'id' | 'name'>[]> {
  return db
    .selectFrom('quote_projects')
    .select(['id', 'name'])
    .where('project_group_id', '=', groupId)
    .orderBy('id')
    .execute();
}

/** The languages of a group's projects (their base and target languages), each once. */
export async function groupLocales(db: Executor, groupId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('quote_projects as p')
    .select('p.base_locale as locale')
    .where('p.project_group_id', '=', groupId)
    .union(
      db
        .selectFrom('quote_project_languages as l')
        .innerJoin('quote_projects as p', 'p.id', 'l.project_id')
        .select('l.locale')
        .where('p.project_group_id', '=', groupId),
    )
    .execute();
  return rows.map((row) => row.locale);
}
