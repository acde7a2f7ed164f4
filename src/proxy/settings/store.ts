// SQL of the run-time configuration: providers, their models, the node's settings, and the version
// every change bumps in its own transaction (which every process polls, ./config-watch.ts).
import type { Selectable } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { ProxyProviderModelsTable, ProxyProvidersTable } from '../common/tables.js';

export type ProviderRow = Selectable<ProxyProvidersTable>;
export type ModelRow = ProxyProviderModelsTable;
export type NewProvider = Omit<ProviderRow, 'id'>;

/** The version of the configuration; null before the database was seeded. */
export async function configVersion(db: Executor): Promise<number | null> {
  const row = await db.selectFrom('proxy_config_version').select('version').where('id', '=', 1).executeTakeFirst();
  return row ? Number(row.version) : null;
}

/**
 * Claims the seeding of a fresh database: inserts version 1 unless a row exists. True for the one
 * process whose insert went in (it then writes the seed in the same transaction).
 */
export async function claimSeed(db: Executor, now: number): Promise<boolean> {
  const inserted = await db
    .insertInto('proxy_config_version')
    .values({ id: 1, version: 1, updated_at: now })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** Every change calls this in its transaction: the other processes reload when they see it move. */
export async function bumpVersion(db: Executor, now: number): Promise<void> {
  await db
    .updateTable('proxy_config_version')
    .set((eb) => ({ version: eb('version', '+', 1), updated_at: now }))
    .where('id', '=', 1)
    .execute();
}

export async function allProviders(db: Executor): Promise<ProviderRow[]> {
  return db.selectFrom('proxy_providers').selectAll().orderBy('id').execute();
}

export async function providerById(db: Executor, id: number): Promise<ProviderRow | undefined> {
  return db.selectFrom('proxy_providers').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function providerBySlug(db: Executor, slug: string): Promise<ProviderRow | undefined> {
  return db.selectFrom('proxy_providers').selectAll().where('slug', '=', slug).executeTakeFirst();
}

export async function slugsLike(db: Executor, prefix: string): Promise<string[]> {
  const rows = await db.selectFrom('proxy_providers').select('slug').where('slug', 'like', `${prefix}%`).execute();
  return rows.map((row) => row.slug);
}

/** A provider with this base URL and key other than `exceptId` (Routstr refuses such a twin). */
export async function providerTwin(db: Executor, baseUrl: string, apiKey: string, exceptId: number | null) {
  let query = db
    .selectFrom('proxy_providers')
    .select('id')
    .where('base_url', '=', baseUrl)
    .where('api_key', '=', apiKey);
  if (exceptId !== null) query = query.where('id', '!=', exceptId);
  return query.executeTakeFirst();
}

export async function insertProvider(db: Executor, row: NewProvider): Promise<number> {
  const inserted = await db.insertInto('proxy_providers').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(inserted.id);
}

export async function updateProvider(db: Executor, id: number, row: Partial<NewProvider>): Promise<void> {
  await db.updateTable('proxy_providers').set(row).where('id', '=', id).execute();
}

/** Deletes a provider and its models. */
export async function deleteProvider(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('proxy_provider_models').where('provider_id', '=', id).execute();
  await db.deleteFrom('proxy_providers').where('id', '=', id).execute();
}

export async function allModels(db: Executor): Promise<ModelRow[]> {
  return db.selectFrom('proxy_provider_models').selectAll().orderBy('provider_id').orderBy('id').execute();
}

export async function modelsOf(db: Executor, providerId: number): Promise<ModelRow[]> {
  return db
    .selectFrom('proxy_provider_models')
    .selectAll()
    .where('provider_id', '=', providerId)
    .orderBy('id')
    .execute();
}

export async function modelOf(db: Executor, providerId: number, id: string): Promise<ModelRow | undefined> {
  return db
    .selectFrom('proxy_provider_models')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Inserts or replaces a provider's model. */
export async function upsertModel(db: Executor, row: ModelRow): Promise<void> {
  const { provider_id: _p, id: _i, ...changes } = row;
  await db
    .insertInto('proxy_provider_models')
    .values(row)
    .onConflict((oc) => oc.columns(['provider_id', 'id']).doUpdateSet(changes))
    .execute();
}

/** Deletes one model (or, with `id` null, all of them); how many went. */
export async function deleteModels(db: Executor, providerId: number, id: string | null): Promise<number> {
  let query = db.deleteFrom('proxy_provider_models').where('provider_id', '=', providerId);
  if (id !== null) query = query.where('id', '=', id);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Empties the providers and models (a new import replaces them). */
export async function deleteAllProviders(db: Executor): Promise<void> {
  await db.deleteFrom('proxy_provider_models').execute();
  await db.deleteFrom('proxy_providers').execute();
}

export async function allSettings(db: Executor): Promise<Map<string, string>> {
  const rows = await db.selectFrom('proxy_node_settings').select(['key', 'value']).execute();
  return new Map(rows.map((row) => [row.key, row.value]));
}

export async function putSetting(db: Executor, key: string, value: string, now: number): Promise<void> {
  await db
    .insertInto('proxy_node_settings')
    .values({ key, value, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now }))
    .execute();
}
