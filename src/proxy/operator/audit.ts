// The audit log: every change made through the operator API or page, with who made it, when, and
// the state before and after. Written in the transaction of the change, so one is never without
// the other; secrets are redacted before they are written.
import type { Executor } from '../../db/index.js';
import { isRecord } from '../../json-fields.js';
import { auditEntries, insertAuditEntry, type AuditFilter } from './store.js';

export interface AuditEntry {
  actor: string;
  action: string;
  target?: string;
  before?: unknown;
  after?: unknown;
}

/** Field names whose values never reach the log. */
const SECRET_FIELDS = new Set(['api_key', 'key', 'password', 'new_password', 'current_password', 'nsec', 'token']);
const REDACTED = '[REDACTED]';
/** Deeper than any state the API writes: a bound on the walk, not a limit users meet. */
const MAX_DEPTH = 8;

export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) return '…';
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  if (!isRecord(value)) return value;
  const copy: Record<string, unknown> = Object.create(null);
  for (const [name, item] of Object.entries(value)) {
    copy[name] = SECRET_FIELDS.has(name) && item !== null && item !== '' ? REDACTED : redactSecrets(item, depth + 1);
  }
  return copy;
}

const asJson = (value: unknown) => (value === undefined ? null : JSON.stringify(redactSecrets(value)));

export async function recordAudit(db: Executor, entry: AuditEntry, now = Date.now()): Promise<void> {
  await insertAuditEntry(db, {
    at: now,
    actor: entry.actor,
    action: entry.action,
    target: entry.target ?? '',
    before: asJson(entry.before),
    after: asJson(entry.after),
  });
}

/** The log as the API shows it, newest first. */
export async function readAudit(db: Executor, filter: AuditFilter) {
  const rows = await auditEntries(db, filter);
  return rows.map((row) => ({
    id: row.id,
    at: new Date(Number(row.at)).toISOString(),
    actor: row.actor,
    action: row.action,
    target: row.target,
    before: row.before === null ? null : (JSON.parse(row.before) as unknown),
    after: row.after === null ? null : (JSON.parse(row.after) as unknown),
  }));
}
