// Project groups (OneSky's /1/project-groups): a named base language with projects in it. A group
// is seen by its owner only (any group by an admin); others get the same 404 as for a missing one.
// Its languages are its base language and every language of its projects.
import type { Executor } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import { findLanguage, requireLanguage } from '../common/locales.js';
import { pageMeta } from '../common/paging.js';
import { countGroups, findGroup, groupLocales, insertGroup, pageOfGroups, projectsOfGroup } from '../store/groups.js';
import type { ProjectGroup } from '../store/rows.js';

// Deleted and listed as stored (deleting cascades in the database): the routes reach them here.
export { deleteGroup, projectsOfGroup } from '../store/groups.js';

export async function requireGroup(db: Executor, id: number, principal: Principal): Promise<ProjectGroup> {
  const group = await findGroup(db, id, principal);
  if (!group) throw new HttpError(404, `project group ${id} not found`);
  return group;
}

/** A page of the caller's groups, with OneSky's paging fields (first and last page included). */
export async function listGroups(db: Executor, principal: Principal, page: number, perPage: number) {
  const [total, groups] = await Promise.all([
    countGroups(db, principal),
    pageOfGroups(db, principal, perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/project-groups?page=${n}&per_page=${perPage}`;
  const meta = pageMeta({ page, perPage, total, link, prevPastEnd: false });
  return {
    meta: { ...meta, first_page: link(1), last_page: meta.page_count > 0 ? link(meta.page_count) : null },
    data: groups.map((group) => ({ id: group.id, name: group.name })),
  };
}

/** A new group; its base language defaults to English as OneSky's does (`en`, completed to en-US). */
export async function createGroup(db: Executor, principal: Principal, body: { name: string; locale?: string }) {
  const base = requireLanguage('locale', body.locale || 'en');
  const values = { owner_id: principal.userId, name: body.name, base_locale: base.code, created_at: Date.now() };
  const id = await insertGroup(db, values);
  return { id, name: body.name, base_language: base };
}

/** The base language first, then the others in code order. */
export async function groupLanguages(db: Executor, group: ProjectGroup) {
  const others = (await groupLocales(db, group.id)).filter((code) => code !== group.base_locale).sort();
  const language = (code: string, isBase: boolean) => ({ ...findLanguage(code)!, is_base_language: isBase });
  return [language(group.base_locale, true), ...others.map((code) => language(code, false))];
}

export async function groupDetails(db: Executor, group: ProjectGroup) {
  const [languages, projects] = await Promise.all([groupLanguages(db, group), projectsOfGroup(db, group.id)]);
  return {
    id: group.id,
    name: group.name,
    base_language: findLanguage(group.base_locale)!,
    enabled_language_count: languages.length,
    project_count: projects.length,
  };
}
