// The node's log at Routstr's paths (GET /admin/api/logs, /admin/api/logs/dates): the store of
// src/logs/log-store.ts searched by day, time, level, request id and text, each line in Routstr's
// shape (asctime, levelname, message, request_id…) with pino's own fields beside them
// (docs/proxy-operator.md, "Logs").
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { LogStore, ParsedLine } from '../../logs/log-store.js';
import { operatorError } from './operator-api.js';

/** Bytes of log files one search reads at most. */
const MAX_SCAN_BYTES = 64 * 1024 * 1024;
/** Days /logs/dates lists (Routstr's 30). */
const MAX_DATES = 30;

/** Routstr's level names (Python's) and pino's, to pino's numbers. */
const LEVELS = new Map([
  ['trace', 10],
  ['debug', 20],
  ['info', 30],
  ['warn', 40],
  ['warning', 40],
  ['error', 50],
  ['fatal', 60],
  ['critical', 60],
]);
const LEVEL_NAMES = new Map([
  [10, 'TRACE'],
  [20, 'DEBUG'],
  [30, 'INFO'],
  [40, 'WARNING'],
  [50, 'ERROR'],
  [60, 'CRITICAL'],
]);

/** A time as Unix ms or an ISO 8601 date; null when absent. */
function timeOf(value: string | undefined, name: string): number | null {
  if (value === undefined || value === '') return null;
  const ms = /^\d{1,15}$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw operatorError(422, 'invalid_time', `${name} must be Unix ms or an ISO 8601 time`);
  return ms;
}

/** A comma-separated list, at most 50 items; null when absent. */
function listOf(value: string | undefined): string[] | null {
  if (!value) return null;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .slice(0, 50);
  return items.length ? items : null;
}

/** A stored line in Routstr's shape: its fields first, then Routstr's names of them. */
function entryOf({ time, level, fields }: ParsedLine) {
  // Log fields are the node's own, but kept off ordinary objects' prototypes all the same.
  const entry = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) entry[key] = value;
  const req = fields.req !== null && typeof fields.req === 'object' ? (fields.req as Record<string, unknown>) : null;
  entry.asctime = new Date(time).toISOString().slice(0, 19).replace('T', ' ');
  entry.levelname = LEVEL_NAMES.get(level) ?? String(level);
  entry.name = 'quartet';
  entry.message = typeof fields.msg === 'string' ? fields.msg : '';
  entry.pathname = '';
  entry.lineno = 0;
  entry.request_id = typeof fields.reqId === 'string' ? fields.reqId : '';
  if (typeof fields.status === 'number') entry.status_code = fields.status;
  if (typeof req?.method === 'string') entry.method = req.method;
  if (typeof req?.url === 'string') entry.path = req.url;
  return entry;
}

export function logsRoutes(store: LogStore | null) {
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();
    const text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

    app.get(
      '/admin/api/logs',
      {
        schema: {
          summary: 'Search the log: newest lines first',
          querystring: Type.Object({
            date: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })),
            from: text(40),
            to: text(40),
            level: text(20),
            request_id: text(64),
            search: text(200),
            status_codes: text(300),
            methods: text(100),
            endpoints: text(1000),
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
          }),
        },
      },
      async (request) => {
        const q = request.query;
        const level = q.level ? LEVELS.get(q.level.toLowerCase()) : null;
        if (level === undefined) {
          throw operatorError(422, 'invalid_level', 'level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL');
        }
        const statusCodes = listOf(q.status_codes)
          ?.map(Number)
          .filter((code) => Number.isInteger(code));
        const answer = {
          total: 0,
          date: q.date ?? null,
          level: q.level ?? null,
          request_id: q.request_id ?? null,
          search: q.search ?? null,
          status_codes: q.status_codes ?? null,
          methods: q.methods ?? null,
          endpoints: q.endpoints ?? null,
          limit: q.limit,
        };
        if (!store) return { logs: [], ...answer, kept: false, truncated: false, scanned_bytes: 0, dropped_lines: 0 };
        const found = await store.search({
          date: q.date ?? null,
          from: timeOf(q.from, 'from'),
          to: timeOf(q.to, 'to'),
          level,
          requestId: q.request_id || null,
          search: q.search || null,
          statusCodes: statusCodes?.length ? statusCodes : null,
          methods: listOf(q.methods),
          endpoints: listOf(q.endpoints),
          limit: q.limit,
          maxBytes: MAX_SCAN_BYTES,
        });
        return {
          logs: found.lines.map(entryOf),
          ...answer,
          total: found.lines.length,
          // quartet's additions: whether the log is kept, the search stopped at its byte budget, lines lost
          kept: true,
          truncated: found.truncated,
          scanned_bytes: found.scannedBytes,
          dropped_lines: store.dropped,
        };
      },
    );

    app.get(
      '/admin/api/logs/dates',
      {
        schema: {
          summary: 'The days the log has lines of, newest first',
          response: { 200: Type.Object({ dates: Type.Array(Type.String()) }) },
        },
      },
      async () => ({ dates: store ? await store.dates(MAX_DATES) : [] }),
    );
  };
}
