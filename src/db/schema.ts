// The database as Kysely sees it: every service's tables in one interface.
import type { ProxyTables } from '../proxy/common/tables.js';
import type { UsersTables } from '../users/tables.js';
import type { QuotesTables } from '../quotes/tables.js';

export interface PlatformTables {
  rate_limits: { key: string; window_start: number; hits: number };
}

export interface DB extends PlatformTables, ProxyTables, UsersTables, QuotesTables {}
