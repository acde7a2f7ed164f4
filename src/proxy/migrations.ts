// Forward-only migrations of this service; never edit one that has shipped, add a new one.
import type { Migration } from '../db/migrate.js';

export const proxyMigrations: Migration[] = [];
