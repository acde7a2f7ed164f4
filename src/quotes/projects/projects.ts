// Projects: a base language, target languages and the files uploaded to them. A project is seen
// by its owner only (any project by an admin); others get the same 404 as for a missing one.
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import { findLanguage, requireLanguage, type Language } from '../common/locales.js';
import { findProjectType, requireProjectType } from './project-types.js';
import {
  addTargetLocales,
  fileTotalsOf,
  findProject,
  hasFiles,
  insertProject,
  languageProgress,
  setTargetLocales,
  targetLocalesOf,
  updateProject,
} from '../store/projects.js';
import type { Project, ProjectGroup } from '../store/rows.js';
import { timeFields } from '../common/time.js';

// Listed and deleted as stored (deleting cascades in the database): the routes reach them here.
export { deleteProject, listProjects } from '../store/projects.js';
export type { Project } from '../store/rows.js';

export interface ProjectChanges {
  name?: string;
  description?: string;
  base_locale?: string;
  target_locales?: string[];
  project_type?: string;
}

export async function requireProject(db: Executor, id: number, principal: Principal): Promise<Project> {
  const project = await findProject(db, id, principal);
  if (!project) throw new HttpError(404, `project ${id} not found`);
  return project;
}

/** The projects as the API shows them, in three queries whatever their number. */
export async function projectBodies(db: Executor, projects: Project[]) {
  const ids = projects.map((project) => project.id);
  const [targets, totals] = await Promise.all([targetLocalesOf(db, ids), fileTotalsOf(db, ids)]);
  return projects.map((project) => ({
    id: project.id,
    name: project.name,
    description: project.description,
    project_type: findProjectType(project.project_type),
    project_group_id: project.project_group_id,
    base_language: findLanguage(project.base_locale)!,
    target_languages: (targets.get(project.id) ?? []).map((code) => findLanguage(code)!).filter(Boolean),
    string_count: totals.get(project.id)?.strings ?? 0,
    word_count: totals.get(project.id)?.words ?? 0,
    ...timeFields('created', project.created_at),
  }));
}

export async function projectBody(db: Executor, project: Project) {
  return (await projectBodies(db, [project]))[0];
}

/** Distinct target language codes; the base language is refused as a target. */
function targetCodes(base: Language, inputs: string[] | undefined): string[] {
  const codes = new Set<string>();
  for (const input of inputs ?? []) {
    const language = requireLanguage('target_locales', input);
    if (language.code === base.code) {
      throw new HttpError(400, `target_locales: ${language.code} is the base language`);
    }
    codes.add(language.code);
  }
  return [...codes];
}

/**
 * A new project. In a group (OneSky's way) it takes the group's base language, needs a
 * project_type, and is named after its type when no name is given.
 */
export async function createProject(
  db: Database,
  principal: Principal,
  body: ProjectChanges,
  group: ProjectGroup | null = null,
): Promise<Project> {
  const type = body.project_type !== undefined ? requireProjectType('project_type', body.project_type) : null;
  if (group && !type) throw new HttpError(400, 'project_type: required (see GET /1/project-types)');
  const name = body.name || type?.name;
  if (!name) throw new HttpError(400, 'name: required');
  const base = requireLanguage('base_locale', group?.base_locale ?? body.base_locale ?? 'en-US');
  const targets = targetCodes(base, body.target_locales);
  const now = Date.now();
  return writeTransaction(db, async (trx) => {
    const id = await insertProject(trx, {
      owner_id: principal.userId,
      name,
      description: body.description ?? '',
      base_locale: base.code,
      created_at: now,
      updated_at: now,
      project_group_id: group?.id ?? null,
      project_type: type?.code ?? null,
    });
    await addTargetLocales(trx, id, targets, now);
    return (await findProject(trx, id, principal))!;
  });
}

/** Applies the changes given; the base language changes only while the project has no files. */
export async function changeProject(db: Database, project: Project, principal: Principal, body: ProjectChanges) {
  const now = Date.now();
  await writeTransaction(db, async (trx) => {
    let base = findLanguage(project.base_locale)!;
    if (body.base_locale !== undefined) {
      base = requireLanguage('base_locale', body.base_locale);
      if (base.code !== project.base_locale && (await hasFiles(trx, project.id))) {
        throw new HttpError(400, 'base_locale: cannot change the base language of a project that has files');
      }
    }
    await updateProject(trx, project.id, {
      name: body.name || project.name,
      description: body.description ?? project.description,
      base_locale: base.code,
      project_type:
        body.project_type !== undefined
          ? requireProjectType('project_type', body.project_type).code
          : project.project_type,
      updated_at: now,
    });
    if (body.target_locales !== undefined) {
      await setTargetLocales(trx, project.id, targetCodes(base, body.target_locales), now);
    }
  });
  const updated = await findProject(db.kysely, project.id, principal);
  if (!updated) throw new HttpError(404, `project ${project.id} not found`); // deleted meanwhile
  return updated;
}

/** The share of approved and current strings, floored, so "100%" means every one: "92%". */
export function progress(approved: number, total: number): string {
  return `${total === 0 ? 0 : Math.floor((approved * 100) / total)}%`;
}

/** The base language, then each target language with its share of approved, current strings. */
export async function projectLanguages(db: Executor, project: Project) {
  const [targets, counted] = await Promise.all([targetLocalesOf(db, [project.id]), languageProgress(db, project.id)]);
  const total = counted.strings;
  const counts = new Map(counted.languages.map((row) => [row.locale, row]));
  return [
    {
      ...findLanguage(project.base_locale)!,
      is_base_language: true,
      is_ready_to_publish: true,
      translation_progress: '100%',
      ...timeFields('last_updated', counted.lastUpload),
    },
    ...(targets.get(project.id) ?? []).map((code) => {
      const row = counts.get(code);
      const approved = row?.approved ?? 0;
      return {
        ...findLanguage(code)!,
        is_base_language: false,
        is_ready_to_publish: total > 0 && approved === total,
        translation_progress: progress(approved, total),
        ...timeFields('last_updated', row?.latest ?? null),
      };
    }),
  ];
}
