// SQL of projects: their rows, their target languages, and the totals and progress of their files.
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import type { Project, StringTotals } from './rows.js';

/** A project the principal may see (its owner, or any project for an admin), else undefined. */
export async function findProject(db: Executor, id: number, principal: Principal): Promise<Project | undefined> {
  let query = db.selectFrom('quote_projects').selectAll().where('id', '=', id);
  if (principal.role !== 'admin') query = query.where('owner_id', '=', principal.userId);
  return query.executeTakeFirst();
}

export async function listProjects(db: Executor, principal: Principal): Promise<Project[]> {
  let query = db.selectFrom('quote_projects').selectAll().orderBy('id');
  if (principal.role !== 'admin') query = query.where('owner_id', '=', principal.userId);
  return query.execute();
}

export async function insertProject(db: Executor, values: Omit<Project, 'id'>): Promise<number> {
  const row = await db.insertInto('quote_projects').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function updateProject(
  db: Executor,
  id: number,
  values: Pick<Project, 'name' | 'description' | 'base_locale' | 'project_type' | 'updated_at'>,
): Promise<void> {
  await db.updateTable('quote_projects').set(values).where('id', '=', id).execute();
}

/** Deletes a project; its languages, files, strings, translations, imports and orders go with it (cascade). */
export async function deleteProject(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('quote_projects').where('id', '=', id).execute();
}

export async function targetLocales(db: Executor, projectId: number): Promise<string[]> {
  return (await targetLocalesOf(db, [projectId])).get(projectId) ?? [];
}

/** The target languages of several projects, each project's in code order. */
export async function targetLocalesOf(db: Executor, projectIds: number[]): Promise<Map<number, string[]>> {
  const byProject = new Map<number, string[]>();
  if (!projectIds.length) return byProject;
  const rows = await db
    .selectFrom('quote_project_languages')
    .select(['project_id', 'locale'])
    .where('project_id', 'in', projectIds)
    .orderBy('project_id')
    .orderBy('locale')
    .execute();
  for (const row of rows) {
    const locales = byProject.get(row.project_id) ?? [];
    if (!locales.length) byProject.set(row.project_id, locales);
    locales.push(row.locale);
  }
  return byProject;
}

export async function addTargetLocales(db: Executor, projectId: number, locales: string[], now: number): Promise<void> {
  if (!locales.length) return;
  await db
    .insertInto('quote_project_languages')
    .values(locales.map((locale) => ({ project_id: projectId, locale, created_at: now })))
    .onConflict((oc) => oc.columns(['project_id', 'locale']).doNothing())
    .execute();
}

export async function setTargetLocales(db: Executor, projectId: number, locales: string[], now: number): Promise<void> {
  let remove = db.deleteFrom('quote_project_languages').where('project_id', '=', projectId);
  if (locales.length) remove = remove.where('locale', 'not in', locales);
  await remove.execute();
  await addTargetLocales(db, projectId, locales, now);
}

/** Strings and words of the files of several projects (projects without files are absent). */
export async function fileTotalsOf(db: Executor, projectIds: number[]): Promise<Map<number, StringTotals>> {
  if (!projectIds.length) return new Map();
  const rows = await db
    .selectFrom('quote_files')
    .select(['project_id', sql<number>`sum(string_count)`.as('strings'), sql<number>`sum(word_count)`.as('words')])
    .where('project_id', 'in', projectIds)
    .groupBy('project_id')
    .execute();
  return new Map(rows.map((row) => [row.project_id, { strings: row.strings, words: row.words }]));
}

export async function hasFiles(db: Executor, projectId: number): Promise<boolean> {
  const file = await db
    .selectFrom('quote_files')
    .select('id')
    .where('project_id', '=', projectId)
    .limit(1)
    .executeTakeFirst();
  return file !== undefined;
}

export interface LanguageCounts {
  locale: string;
  approved: number;
  /** The latest translation of the language in any file of the project. */
  latest: number | null;
}

/** The strings of a project's files, their last upload, and the approved strings of each language. */
export async function languageProgress(
  db: Executor,
  projectId: number,
): Promise<{ strings: number; lastUpload: number | null; languages: LanguageCounts[] }> {
  const [files, languages] = await Promise.all([
    db
      .selectFrom('quote_files')
      .select([
        sql<number>`coalesce(sum(string_count), 0)`.as('strings'),
        sql<number | null>`max(uploaded_at)`.as('last'),
      ])
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('quote_file_locales as c')
      .innerJoin('quote_files as f', 'f.id', 'c.file_id')
      .select([
        'c.locale',
        sql<number>`sum(c.approved_strings)`.as('approved'),
        sql<number | null>`max(c.translated_at)`.as('latest'),
      ])
      .where('f.project_id', '=', projectId)
      .groupBy('c.locale')
      .execute(),
  ]);
  return { strings: files.strings, lastUpload: files.last, languages };
}
