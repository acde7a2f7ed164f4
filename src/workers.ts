// `WORKERS=n`: n processes serve one port. Node's cluster module accepts each connection in the
// primary and hands it to a worker, so a busy node uses more than one core. Nothing that matters
// for correctness lives in a worker's memory (README, "PostgreSQL and several processes"), so
// any worker may serve any request. The primary migrates once, starts the workers, replaces one
// that dies, answers the workers' /metrics with the whole cluster's counts (src/http/metrics.ts),
// announces the proxy node on Nostr once for all of them (src/proxy/nostr/nostr.ts), and at
// SIGTERM/SIGINT passes the signal on and waits for them all.
import cluster, { type Worker } from 'node:cluster';
import pino from 'pino';
import { migrateDatabase } from './db/migrate.js';
import { exitAfterLog, logWritten, stdoutDestination } from './http/logging.js';
import { serveClusterMetrics } from './http/metrics.js';
import { serviceMigrations, type Config } from './services.js';

/** A worker that dies this soon after starting counts toward giving up. */
const EARLY_DEATH_MS = 10_000;
/** This many early deaths in a row: the configuration or the database is broken; stop. */
const MAX_EARLY_DEATHS = 5;
const RESTART_DELAY_MS = 1000;

export function isWorkerProcess(): boolean {
  return cluster.isWorker;
}

/** Runs the primary; resolves with the exit code once every worker has stopped. */
export async function runPrimary(config: Config): Promise<number> {
  const log = pino(
    { level: config.logLevel, base: { role: 'primary', pid: process.pid } },
    stdoutDestination(config.logSync),
  );
  // Migrating here first spares the workers a race for the migration lock at every start.
  await migrateDatabase(config.database, serviceMigrations);
  serveClusterMetrics();
  // One announcer for the node, not one per worker; loaded only when the proxy is mounted.
  const announcement = config.services.includes('proxy')
    ? (await import('./proxy/nostr/nostr.js')).startAnnouncement(config.proxy, log)
    : null;

  let stopping = false;
  let exitCode = 0;
  let earlyDeaths = 0;
  const started = new Map<Worker, number>();
  const fork = () => started.set(cluster.fork(), Date.now());

  const allExited = new Promise<number>((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      const lived = Date.now() - (started.get(worker) ?? 0);
      started.delete(worker);
      if (stopping) {
        if (started.size === 0) resolve(exitCode);
        return;
      }
      earlyDeaths = lived < EARLY_DEATH_MS ? earlyDeaths + 1 : 0;
      if (earlyDeaths >= MAX_EARLY_DEATHS) {
        log.fatal({ code, signal }, `${MAX_EARLY_DEATHS} workers died right after starting; stopping`);
        stopping = true;
        exitCode = 1;
        for (const other of started.keys()) other.process.kill('SIGTERM');
        if (started.size === 0) resolve(exitCode);
        return;
      }
      log.error({ worker: worker.process.pid, code, signal }, 'worker stopped; starting another');
      setTimeout(() => {
        if (!stopping) fork();
      }, RESTART_DELAY_MS).unref();
    });
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    void announcement?.stop();
    log.info({ signal, workers: started.size }, 'stopping the workers');
    for (const worker of started.keys()) worker.process.kill(signal);
    // A worker has its own SHUTDOWN_TIMEOUT_MS; this only guards against one that hangs anyway.
    setTimeout(() => {
      log.error('workers did not stop in time; exiting');
      exitAfterLog(log, 1);
    }, config.shutdownTimeoutMs + 5000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (let i = 0; i < config.workers; i++) fork();
  log.info({ workers: config.workers, port: config.port }, 'started the workers');
  const code = await allExited;
  await logWritten(log); // the CLI exits right after
  return code;
}
