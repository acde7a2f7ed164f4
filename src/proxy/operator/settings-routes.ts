// The node's settings at Routstr's paths: GET/PATCH /admin/api/settings (Routstr's key names where
// they mean the same here), PATCH /admin/api/nsec (the Nostr identity), and POST
// /admin/api/config/import (the files and environment imported again). Changes are stored, audited
// and applied in every process within seconds (docs/proxy-operator.md, "Run-time configuration").
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../env.js';
import { field, isRecord } from '../../json-fields.js';
import { type FieldError, HttpError } from '../../http/errors.js';
import type { ProxyConfig } from '../common/config.js';
import { nostrKeyOf } from '../common/nostr-config.js';
import { EDITABLE_SETTINGS, replaceWithSeed } from '../settings/runtime-config.js';
import { allProviders, configVersion, putSetting } from '../settings/store.js';
import { recordAudit } from './audit.js';
import { operatorError, operatorOfRequest } from './operator-api.js';
import { change, type RuntimeDeps } from './provider-routes.js';

const REDACTED = '[REDACTED]';
const MAX_RELAYS = 32;

/** The settings as Routstr's GET /admin/api/settings names them, secrets masked as Routstr masks them. */
function settingsAnswer(config: ProxyConfig) {
  const forward = config.forward;
  return {
    name: config.name,
    description: config.description,
    http_url: config.httpUrl ?? '',
    onion_url: config.onionUrl ?? '',
    npub: config.nostr.key?.npub ?? '',
    nsec: config.nostr.key ? REDACTED : '',
    relays: config.nostr.relays,
    provider_id: config.nostr.providerId ?? '',
    cashu_mints: config.mints,
    primary_mint: config.mints[0],
    primary_mint_unit: 'sat',
    upstream_base_url: forward.upstreamUrl,
    upstream_api_key: forward.upstreamKey ? REDACTED : '',
    models_path: forward.modelsFile ?? '',
    stale_reservation_timeout_seconds: forward.staleReservationMs / 1000,
  };
}
type SettingsAnswer = ReturnType<typeof settingsAnswer>;

/** Shown but set by the environment (a restart applies them): a PATCH may repeat them, not change them. */
const READ_ONLY: Partial<Record<keyof SettingsAnswer, string>> = {
  cashu_mints: 'PROXY_MINTS',
  primary_mint: 'PROXY_MINTS',
  primary_mint_unit: 'PROXY_MINTS',
  upstream_base_url: 'PROXY_UPSTREAM_URL (the providers are managed at /admin/api/upstream-providers)',
  models_path: 'PROXY_MODELS_FILE',
  stale_reservation_timeout_seconds: 'PROXY_STALE_RESERVATION_SECONDS',
};

function httpOrEmpty(value: unknown): boolean {
  if (value === '') return true;
  if (typeof value !== 'string' || value.length > 2000) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function relayList(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length <= MAX_RELAYS &&
    value.every((relay) => {
      if (typeof relay !== 'string' || relay.length > 2000) return false;
      try {
        const url = new URL(relay);
        return url.protocol === 'ws:' || url.protocol === 'wss:';
      } catch {
        return false;
      }
    })
  );
}

const CHECKS: Record<(typeof EDITABLE_SETTINGS)[number], [check: (value: unknown) => boolean, msg: string]> = {
  name: [(v) => typeof v === 'string' && v.trim().length > 0 && v.length <= 200, 'a text of 1 to 200 characters'],
  description: [(v) => typeof v === 'string' && v.length <= 2000, 'a text of at most 2000 characters'],
  http_url: [httpOrEmpty, 'an http(s) URL, or "" for none'],
  onion_url: [httpOrEmpty, 'an http(s) URL, or "" for none'],
  relays: [relayList, `a list of at most ${MAX_RELAYS} ws:// or wss:// URLs`],
  provider_id: [(v) => typeof v === 'string' && v.length <= 256, 'a text of at most 256 characters ("" derives it)'],
};

/**
 * The changes a PATCH makes: the editable keys whose value differs from the current one. Secrets are
 * dropped (they have their own routes, as in Routstr), npub is derived, unknown keys are ignored (as
 * Routstr ignores them); a read-only key given another value, or an invalid value, is a 422.
 */
function changesOf(body: Record<string, unknown>, current: SettingsAnswer): Map<string, unknown> {
  const fields: FieldError[] = [];
  const changes = new Map<string, unknown>();
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const key of EDITABLE_SETTINGS) {
    if (!Object.hasOwn(body, key)) continue;
    const value = body[key];
    const [check, msg] = CHECKS[key];
    if (!check(value)) fields.push({ loc: ['body', key], msg: `Input should be ${msg}`, type: 'value_error' });
    else if (!same(value, current[key])) changes.set(key, value);
  }
  for (const [key, variable] of Object.entries(READ_ONLY)) {
    if (Object.hasOwn(body, key) && !same(body[key], current[key as keyof SettingsAnswer])) {
      fields.push({
        loc: ['body', key],
        msg: `Read-only on this node: set ${variable} and restart`,
        type: 'read_only',
      });
    }
  }
  if (fields.length) throw new HttpError(422, fields.map((f) => f.msg).join('; '), { fields });
  return changes;
}

/**
 * routstr-cli's `config set` sends `{"__root__": {key: value}}` (pydantic v1's root model); Routstr's
 * node ignores that key, so the CLI says "Set" while nothing changes. Here it is read as the body.
 */
function unwrapRoot(body: Record<string, unknown>): Record<string, unknown> {
  const root = Object.keys(body).length === 1 ? field(body, '__root__') : undefined;
  return isRecord(root) && !Array.isArray(root) ? root : body;
}

export function settingsRoutes(deps: RuntimeDeps) {
  const { config } = deps;
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.get('/admin/api/settings', { schema: { summary: "The node's settings (secrets masked)" } }, async () =>
      settingsAnswer(config),
    );

    app.patch(
      '/admin/api/settings',
      {
        schema: {
          summary: "Change the node's settings (name, description, URLs, relays, provider id)",
          body: Type.Record(Type.String({ maxLength: 200 }), Type.Unknown(), { maxProperties: 200 }),
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const before = settingsAnswer(config);
        const changes = changesOf(unwrapRoot(request.body), before);
        if (changes.size === 0) return before;
        await change(deps, async (trx, now) => {
          for (const [key, value] of changes) await putSetting(trx, key, JSON.stringify(value), now);
          await recordAudit(trx, {
            actor,
            action: 'settings.update',
            target: 'settings',
            before: Object.fromEntries([...changes.keys()].map((key) => [key, before[key as keyof SettingsAnswer]])),
            after: Object.fromEntries(changes),
          });
        });
        return settingsAnswer(config);
      },
    );

    app.patch(
      '/admin/api/nsec',
      {
        schema: {
          summary: "Set the node's Nostr secret key (nsec1… or 64 hex digits; empty clears it)",
          body: Type.Object({ nsec: Type.String({ maxLength: 200 }) }),
          response: { 200: Type.Object({ ok: Type.Boolean(), npub: Type.String() }) },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const nsec = request.body.nsec.trim();
        let npub = '';
        if (nsec) {
          try {
            npub = nostrKeyOf(nsec).npub;
          } catch (error) {
            if (!(error instanceof ConfigError)) throw error;
            throw operatorError(400, 'invalid_nsec', 'Invalid nsec');
          }
        }
        const before = config.nostr.key?.npub ?? '';
        await change(deps, async (trx, now) => {
          await putSetting(trx, 'nsec', JSON.stringify(nsec), now);
          // The key itself is redacted by the audit log; the npubs say which identity it was.
          await recordAudit(trx, {
            actor,
            action: 'nsec.update',
            target: 'settings',
            before: { npub: before },
            after: { npub, nsec },
          });
        });
        return { ok: true, npub };
      },
    );

    app.post(
      '/admin/api/config/import',
      {
        schema: {
          summary: 'Replace the providers, models and settings with the files and environment, as read at start',
          description:
            'The files are PROXY_PROVIDERS_FILE (or PROXY_UPSTREAM_URL and PROXY_UPSTREAM_KEY) and ' +
            'PROXY_MODELS_FILE. ' +
            'The Nostr key set through PATCH /admin/api/nsec stays. `quartet proxy-config import` reads them anew.',
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const seed = deps.runtime.startSeed();
        const version = await change(deps, async (trx, now) => {
          const before = (await allProviders(trx)).map((row) => row.slug);
          await replaceWithSeed(trx, seed, now);
          await recordAudit(trx, {
            actor,
            action: 'config.import',
            target: 'config',
            before: { providers: before },
            after: { providers: seed.providers.map((p) => p.row.slug), settings: seed.settings },
          });
          return configVersion(trx);
        });
        return {
          ok: true,
          providers: seed.providers.length,
          models: seed.providers.reduce((n, p) => n + p.models.length, 0),
          // The bump of change() comes after replaceWithSeed's own.
          version: (version ?? 0) + 1,
        };
      },
    );
  };
}
