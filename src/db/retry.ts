// Work that must happen once the database is back (a reservation's release, a job's last word)
// rather than be dropped because it failed while the database was away.
import { setTimeout as sleep } from 'node:timers/promises';
import { databaseOutage } from './errors.js';

/** Pause between tries: short, so work resumes within a second or two of the database's return. */
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 1000;

/**
 * Runs `work` until it succeeds, trying again while it fails because the database is unavailable
 * or full; any other error, or `signal` aborting (shutdown), ends the tries with that error.
 */
export async function retryWhileUnavailable<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    try {
      return await work();
    } catch (error) {
      if (!databaseOutage(error) || signal?.aborted) throw error;
      await sleep(pause, undefined, { signal }).catch(() => {
        throw error;
      });
    }
  }
}
