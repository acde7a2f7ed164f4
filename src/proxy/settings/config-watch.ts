// Every process polls the configuration's version (one indexed row) and, when it moved, reads the
// whole configuration and hands it on: a change made through the API or page in any process sharing
// the database takes effect everywhere within a poll and a reload. Nothing on the request path reads
// the database for configuration; a failed poll (the database away) is logged and tried again.
import type { Database } from '../../db/index.js';
import type { ProxyConfig } from '../common/config.js';
import { loadSnapshot, type RuntimeSnapshot } from './runtime-config.js';
import { configVersion } from './store.js';

interface Log {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ConfigWatch {
  /** Reads now (after a change made by this process, which need not wait for the timer). */
  check(): Promise<void>;
  stop(): void;
}

/** How often the version is read: a change is live everywhere within this and a reload (< 5 s). */
export const CONFIG_POLL_MS = 1000;

export function watchConfig(
  db: Database,
  config: ProxyConfig,
  loaded: number,
  apply: (snapshot: RuntimeSnapshot) => Promise<void>,
  log: Log,
  intervalMs = CONFIG_POLL_MS,
): ConfigWatch {
  let current = loaded;
  let running: Promise<void> | null = null;
  let failing = false;
  const once = async () => {
    const version = await configVersion(db.kysely);
    if (version === null || version === current) return;
    const snapshot = await loadSnapshot(db.kysely, config);
    if (!snapshot) return;
    await apply(snapshot);
    current = snapshot.version;
  };
  // One pass at a time: a slow reload is not overtaken by the next tick.
  const check = () =>
    (running ??= once()
      .then(() => {
        if (failing) log.warn({ version: current }, 'run-time configuration: reading it works again');
        failing = false;
      })
      .catch((error: unknown) => {
        // Logged once per outage, not every second; the next tick tries again.
        if (!failing) log.error({ err: error }, 'run-time configuration: reading or applying it failed');
        failing = true;
      })
      .finally(() => {
        running = null;
      }));
  const timer = setInterval(() => void check(), intervalMs).unref();
  return {
    check,
    stop: () => clearInterval(timer),
  };
}
