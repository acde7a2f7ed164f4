// Forward-only migrations of this service; never edit one that has shipped, add a new one.
import { sql } from 'kysely';
import type { Migration } from '../db/migrate.js';

export const quotesMigrations: Migration[] = [
  {
    name: '3000_quotes_projects_files_strings',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('quote_projects'))
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('base_locale', 'text', (c) => c.notNull())
        .addColumn('created_at', t.bigint, (c) => c.notNull())
        .addColumn('updated_at', t.bigint, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('quote_projects_owner').on('quote_projects').column('owner_id').execute();

      await db.schema
        .createTable('quote_project_languages')
        .addColumn('project_id', t.bigint, (c) => c.notNull().references('quote_projects.id').onDelete('cascade'))
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('created_at', t.bigint, (c) => c.notNull())
        .addPrimaryKeyConstraint('quote_project_languages_pk', ['project_id', 'locale'])
        .execute();

      await t
        .autoId(db.schema.createTable('quote_files'))
        .addColumn('project_id', t.bigint, (c) => c.notNull().references('quote_projects.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('string_count', 'integer', (c) => c.notNull())
        .addColumn('word_count', 'integer', (c) => c.notNull())
        .addColumn('meta', 'text', (c) => c.notNull())
        .addColumn('uploaded_at', t.bigint, (c) => c.notNull())
        .addColumn('last_import_id', t.bigint)
        .addUniqueConstraint('quote_files_project_name', ['project_id', 'name'])
        .execute();

      await t
        .autoId(db.schema.createTable('quote_strings'))
        .addColumn('file_id', t.bigint, (c) => c.notNull().references('quote_files.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('context', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('source_plural', 'text')
        .addColumn('word_count', 'integer', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('source_changed_at', t.bigint, (c) => c.notNull())
        .addUniqueConstraint('quote_strings_file_key', ['file_id', 'key'])
        .execute();

      await db.schema
        .createTable('quote_translations')
        .addColumn('string_id', t.bigint, (c) => c.notNull().references('quote_strings.id').onDelete('cascade'))
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('forms', 'text', (c) => c.notNull())
        .addColumn('is_empty', 'integer', (c) => c.notNull())
        .addColumn('fuzzy', 'integer', (c) => c.notNull())
        .addColumn('stale', 'integer', (c) => c.notNull())
        .addColumn('translated_at', t.bigint, (c) => c.notNull())
        .addPrimaryKeyConstraint('quote_translations_pk', ['string_id', 'locale'])
        .execute();

      await db.schema
        .createTable('quote_file_locales')
        .addColumn('file_id', t.bigint, (c) => c.notNull().references('quote_files.id').onDelete('cascade'))
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('not_translated_strings', 'integer', (c) => c.notNull())
        .addColumn('not_translated_words', 'integer', (c) => c.notNull())
        .addColumn('not_approved_strings', 'integer', (c) => c.notNull())
        .addColumn('not_approved_words', 'integer', (c) => c.notNull())
        .addColumn('outdated_strings', 'integer', (c) => c.notNull())
        .addColumn('outdated_words', 'integer', (c) => c.notNull())
        .addColumn('approved_strings', 'integer', (c) => c.notNull())
        .addColumn('approved_words', 'integer', (c) => c.notNull())
        .addColumn('translated_at', t.bigint)
        .addColumn('ordered_at', t.bigint)
        .addPrimaryKeyConstraint('quote_file_locales_pk', ['file_id', 'locale'])
        .execute();

      await t
        .autoId(db.schema.createTable('quote_imports'))
        .addColumn('project_id', t.bigint, (c) => c.notNull().references('quote_projects.id').onDelete('cascade'))
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('keep_all_strings', 'integer', (c) => c.notNull())
        .addColumn('allow_same_as_original', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('message', 'text')
        .addColumn('payload', t.bytes)
        .addColumn('byte_count', 'integer', (c) => c.notNull())
        .addColumn('string_count', 'integer')
        .addColumn('word_count', 'integer')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.bigint, (c) => c.notNull())
        .addColumn('started_at', t.bigint)
        .addColumn('finished_at', t.bigint)
        .execute();
      await db.schema.createIndex('quote_imports_status').on('quote_imports').columns(['status', 'id']).execute();

      await t
        .autoId(db.schema.createTable('quote_orders'))
        .addColumn('project_id', t.bigint, (c) => c.notNull().references('quote_projects.id').onDelete('cascade'))
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('from_locale', 'text', (c) => c.notNull())
        .addColumn('to_locale', 'text', (c) => c.notNull())
        .addColumn('files', 'text', (c) => c.notNull())
        .addColumn('order_type', 'text', (c) => c.notNull())
        .addColumn('translator_type', 'text', (c) => c.notNull())
        .addColumn('tone', 'text', (c) => c.notNull())
        .addColumn('specialization', 'text', (c) => c.notNull())
        .addColumn('note', 'text', (c) => c.notNull())
        .addColumn('include_not_translated', 'integer', (c) => c.notNull())
        .addColumn('include_not_approved', 'integer', (c) => c.notNull())
        .addColumn('include_outdated', 'integer', (c) => c.notNull())
        .addColumn('string_count', 'integer', (c) => c.notNull())
        .addColumn('word_count', 'integer', (c) => c.notNull())
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('per_word_cost', 'text', (c) => c.notNull())
        .addColumn('ordered_at', t.bigint, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('quote_orders_project').on('quote_orders').columns(['project_id', 'id']).execute();

      // Translator work items: the capacity model's backlog (busy_until) and the "preferred
      // translator" (most words translated on the project).
      await t
        .autoId(db.schema.createTable('quote_assignments'))
        .addColumn('order_id', t.bigint, (c) => c.notNull().references('quote_orders.id').onDelete('cascade'))
        .addColumn('project_id', t.bigint, (c) => c.notNull())
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('translator', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('word_count', 'integer', (c) => c.notNull())
        .addColumn('starts_at', t.bigint, (c) => c.notNull())
        .addColumn('busy_until', t.bigint, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('quote_assignments_locale')
        .on('quote_assignments')
        .columns(['locale', 'busy_until'])
        .execute();
      await db.schema
        .createIndex('quote_assignments_project')
        .on('quote_assignments')
        .columns(['project_id', 'locale'])
        .execute();
    },
  },
  {
    // What a PO export needs to write a translation file back: the `#|` previous-source comment
    // of each translation and the Plural-Forms header of each language's upload.
    name: '3001_quotes_po_previous_and_plural_forms',
    async up(db) {
      await db.schema.alterTable('quote_translations').addColumn('previous', 'text').execute();
      await db.schema.alterTable('quote_file_locales').addColumn('plural_forms', 'text').execute();
    },
  },
  {
    // Uploads in a table of their own: SQLite rewrites a whole row on every update, so claiming
    // a queued import rewrote its upload (30–45 ms for 6.5 MB, measured).
    name: '3002_quotes_import_payloads',
    async up(db, t) {
      await db.schema
        .createTable('quote_import_payloads')
        .addColumn('import_id', t.bigint, (c) => c.primaryKey().references('quote_imports.id').onDelete('cascade'))
        .addColumn('payload', t.bytes, (c) => c.notNull())
        .execute();
      await sql`insert into quote_import_payloads (import_id, payload)
        select id, payload from quote_imports where payload is not null`.execute(db);
      await db.schema.alterTable('quote_imports').dropColumn('payload').execute();
    },
  },
  {
    // The rest of OneSky's Platform API v1: project groups (a project may belong to one), project
    // types, and screenshots with the strings tagged on them.
    name: '3003_quotes_project_groups_types_screenshots',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('quote_project_groups'))
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('base_locale', 'text', (c) => c.notNull())
        .addColumn('created_at', t.bigint, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('quote_project_groups_owner').on('quote_project_groups').column('owner_id').execute();
      await db.schema
        .alterTable('quote_projects')
        .addColumn('project_group_id', t.bigint, (c) => c.references('quote_project_groups.id').onDelete('cascade'))
        .execute();
      await db.schema.alterTable('quote_projects').addColumn('project_type', 'text').execute();
      await db.schema
        .createIndex('quote_projects_group')
        .on('quote_projects')
        .columns(['project_group_id', 'id'])
        .execute();

      await t
        .autoId(db.schema.createTable('quote_screenshots'))
        .addColumn('project_id', t.bigint, (c) => c.notNull().references('quote_projects.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('mime', 'text', (c) => c.notNull())
        .addColumn('image', t.bytes, (c) => c.notNull())
        .addColumn('byte_count', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.bigint, (c) => c.notNull())
        .addColumn('updated_at', t.bigint, (c) => c.notNull())
        .addUniqueConstraint('quote_screenshots_project_name', ['project_id', 'name'])
        .execute();
      await db.schema
        .createTable('quote_screenshot_tags')
        .addColumn('screenshot_id', t.bigint, (c) => c.notNull().references('quote_screenshots.id').onDelete('cascade'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('file_name', 'text')
        .addColumn('x', 'integer', (c) => c.notNull())
        .addColumn('y', 'integer', (c) => c.notNull())
        .addColumn('width', 'integer', (c) => c.notNull())
        .addColumn('height', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('quote_screenshot_tags_pk', ['screenshot_id', 'position'])
        .execute();
    },
  },
  {
    // PostgreSQL only: a file's strings are checked against quote_files once a statement, not once a
    // row. The row-level foreign key cost as much server time as the insert itself (100k strings:
    // 0.72–0.83 s against 0.37 s without it; bench/README.md, "PostgreSQL import"). The triggers keep
    // what it guaranteed: no string without its file, whose row stays locked FOR KEY SHARE until the
    // writer commits (as the key's check locks it, so a concurrent delete waits or the write fails),
    // and a file's strings deleted with it.
    name: '3004_quotes_strings_file_check_per_statement',
    async up(db, t) {
      if (t.dialect !== 'postgres') return;
      await sql`alter table quote_strings drop constraint if exists quote_strings_file_id_fkey`.execute(db);
      await sql`
        create function quote_strings_have_files() returns trigger language plpgsql as $$
        begin
          perform 1 from quote_files f where f.id in (select distinct file_id from written) for key share;
          if exists (select 1 from written w
                     where not exists (select 1 from quote_files f where f.id = w.file_id)) then
            raise foreign_key_violation
              using message = 'quote_strings violates its foreign key: a string names no file';
          end if;
          return null;
        end $$`.execute(db);
      for (const event of ['insert', 'update']) {
        await sql`
          create trigger ${sql.raw(`quote_strings_have_files_on_${event}`)} after ${sql.raw(event)} on quote_strings
          referencing new table as written for each statement execute function quote_strings_have_files()`.execute(db);
      }
      await sql`
        create function quote_files_delete_strings() returns trigger language plpgsql as $$
        begin
          delete from quote_strings where file_id in (select id from deleted);
          return null;
        end $$`.execute(db);
      await sql`
        create trigger quote_files_delete_strings after delete on quote_files
        referencing old table as deleted for each statement execute function quote_files_delete_strings()`.execute(db);
    },
  },
  {
    // A running import's lease (jobs/import-queue.ts): its process renews it while it works on the job, and any
    // process queues again a running job whose lease ran out. Jobs running at the upgrade get the
    // old rule's 300 s from their start.
    name: '3005_quotes_import_lease',
    async up(db, t) {
      await db.schema.alterTable('quote_imports').addColumn('lease_until', t.bigint).execute();
      await sql`update quote_imports set lease_until = started_at + 300000 where status = 'running'`.execute(db);
    },
  },
  {
    // Phrase collections (OneSky's /phrase-collections) are files of format PHRASE_COLLECTION: their
    // strings keep a description and a length limit (JSON), a collection shows when it was created
    // (files made before this get their last upload's time), and files may be attached to it.
    name: '3006_quotes_phrase_collections',
    async up(db, t) {
      await db.schema.alterTable('quote_strings').addColumn('description', 'text').execute();
      await db.schema.alterTable('quote_strings').addColumn('length_limit', 'text').execute();
      await db.schema
        .alterTable('quote_files')
        .addColumn('created_at', t.bigint, (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`update quote_files set created_at = uploaded_at`.execute(db);
      // Files attached to a phrase collection (phrase-collection-attachments), by name in it.
      await t
        .autoId(db.schema.createTable('quote_collection_attachments'))
        .addColumn('file_id', t.bigint, (c) => c.notNull().references('quote_files.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('content', t.bytes, (c) => c.notNull())
        .addColumn('byte_count', 'integer', (c) => c.notNull())
        .addColumn('uploaded_at', t.bigint, (c) => c.notNull())
        .addUniqueConstraint('quote_collection_attachments_file_name', ['file_id', 'name'])
        .execute();
    },
  },
];
