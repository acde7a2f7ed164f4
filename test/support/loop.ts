// How long this process's event loop is held, measured in a way a busy machine cannot fake: the
// CPU time the main thread spends between two turns of a timer. A handler that parses on the
// main thread holds the loop for that much CPU time; a machine that does not schedule the process
// delays every turn in wall-clock time, and with it a latency probe or `monitorEventLoopDelay`
// (their max reached 0.4–0.7 s at load 14 on 2 cores with nothing held), but adds no CPU time to
// a turn. The wall-clock delay is kept for the failure message.
// Linux only (/proc/thread-self/schedstat: nanoseconds on a CPU of the calling thread).
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** Nanoseconds the calling thread has run on a CPU. */
function threadCpuNs(): bigint {
  const schedstat = readFileSync('/proc/thread-self/schedstat', 'latin1');
  return BigInt(schedstat.slice(0, schedstat.indexOf(' ')));
}

/** A hold at least this long (ms of CPU) counts in `heldMs`; shorter ones are a busy loop's ordinary turns. */
export const LONG_HOLD_MS = 50;

export interface LoopHolds {
  /** The most main-thread CPU time between two turns of the timer (ms): the longest hold of the loop. */
  longestHoldMs: number;
  /** The main-thread CPU time of all holds of at least LONG_HOLD_MS (ms): many shorter stalls add up here. */
  heldMs: number;
  /** Turns of the timer seen: a watch that saw few has measured little. */
  turns: number;
  /** A line of figures for an assertion's message, wall-clock delays included. */
  figures: string;
}

/**
 * Watches this process's event loop until `stop()`; call it on the thread that runs the server
 * (a server of startTestServer runs on the test's thread).
 */
export function watchLoop(intervalMs = 5): { stop(): LoopHolds } {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const longest: number[] = []; // the five longest holds, longest first
  let heldMs = 0;
  let turns = 0;
  let last = threadCpuNs();
  const timer = setInterval(() => {
    const now = threadCpuNs();
    const hold = Number(now - last) / 1e6;
    last = now;
    turns++;
    if (hold >= LONG_HOLD_MS) heldMs += hold;
    if (longest.length < 5 || hold > longest[4]) {
      longest.push(hold);
      longest.sort((a, b) => b - a);
      longest.length = Math.min(longest.length, 5);
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      delay.disable();
      const ms = (ns: number) => `${(ns / 1e6).toFixed(0)} ms`;
      const figures =
        `${turns} turns; main-thread CPU: longest holds ${longest.map((hold) => hold.toFixed(1)).join(', ')} ms, ` +
        `${heldMs.toFixed(0)} ms in holds of ${LONG_HOLD_MS} ms or more; wall-clock loop delay ` +
        `p50 ${ms(delay.percentile(50))}, p99 ${ms(delay.percentile(99))}, max ${ms(delay.max)}`;
      return { longestHoldMs: longest[0] ?? 0, heldMs, turns, figures };
    },
  };
}
