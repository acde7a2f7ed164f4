// The database as Kysely sees it. The platform names only its own tables; each service adds its
// own to DB from its tables.ts by declaration merging (`declare module '../db/schema.js'`), so
// every store is typed against every table while the platform imports no service.

export interface PlatformTables {
  rate_limits: { key: string; window_start: number; hits: number };
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the services' tables merge into it
export interface DB extends PlatformTables {}
