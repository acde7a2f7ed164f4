import type { Migration } from './migrate.js';

export const platformMigrations: Migration[] = [
  {
    // Fixed-window counters shared by every process on the database (see http/rate-limit.ts).
    name: '0001_rate_limits',
    async up(db, t) {
      await db.schema
        .createTable('rate_limits')
        .addColumn('key', 'text', (col) => col.primaryKey())
        .addColumn('window_start', t.bigint, (col) => col.notNull())
        .addColumn('hits', 'integer', (col) => col.notNull())
        .execute();
    },
  },
];
