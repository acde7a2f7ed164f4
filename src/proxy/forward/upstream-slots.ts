// The operator's limit of requests in flight to the upstream (PROXY_UPSTREAM_CONNECTIONS) and the
// bounded queue in front of it (PROXY_UPSTREAM_QUEUE, PROXY_UPSTREAM_QUEUE_TIMEOUT_MS). Without a
// limit (the default) every request goes upstream at once and none ever waits. With one, a request
// that finds it full waits in the queue, first come first served, while the queue has room; beyond
// that, or after waiting its longest, it is answered 503 with Retry-After: never a silent wait.
// A queued request whose caller leaves gives its place up and is never sent (docs/proxy-billing.md).
import { HttpError } from '../../http/errors.js';
import type { Counter, MetricsRegistry } from '../../http/metrics.js';
import type { CancelSignal } from './cancel-signal.js';

export interface SlotLimits {
  /** Most requests in flight at once; 0: no limit. */
  limit: number;
  /** Most requests waiting for a place when `limit` are in flight. */
  queue: number;
  /** Longest a request waits in the queue. */
  queueTimeoutMs: number;
}

/** Gives a request's place back (its answer is over, or it failed); a second call does nothing. */
export type Release = () => void;

interface Waiter {
  admit(): void;
}

const RETRY_AFTER_SECONDS = '1';

export class UpstreamSlots {
  /** Requests holding a place: from their sending until their answer's body is closed. */
  private inFlight = 0;
  /** Requests waiting for a place, oldest first (a Set keeps insertion order, deletes in O(1)). */
  private waiters = new Set<Waiter>();
  private refused?: Counter;

  constructor(
    private limits: SlotLimits,
    metrics?: MetricsRegistry,
  ) {
    this.refused = metrics?.counter(
      'quartet_proxy_upstream_refused_total',
      'Requests answered 503 node_busy: the limit and its queue were full, or the wait was too long',
      ['reason'],
    );
  }

  /** Requests holding a place now (summed over providers in the gauges, upstreams.ts). */
  get inFlightCount(): number {
    return this.inFlight;
  }

  get queuedCount(): number {
    return this.waiters.size;
  }

  /** Whether a request arriving now could go upstream or wait in the queue. */
  hasCapacity(): boolean {
    return this.hasRoom() || this.waiters.size < this.limits.queue;
  }

  /** 503 when a request arriving now could neither go upstream nor wait in the queue. */
  checkCapacity(): void {
    if (!this.hasCapacity()) throw this.busy('full');
  }

  /**
   * A place for one request: at once when there is room, else after waiting in the queue. Throws
   * 503 (no room, queue full or waited too long) or the signal's reason (the caller left: the
   * request gives its place in the queue up and is never sent). A place there is room for is
   * given at once, without a promise (every forwarded request asks).
   */
  acquire(signal?: CancelSignal): Release | Promise<Release> {
    if (signal?.aborted) throw signal.reason;
    // The queue is served first: a newcomer never overtakes a waiting request.
    if (this.hasRoom() && this.waiters.size === 0) return this.take();
    if (this.waiters.size >= this.limits.queue) throw this.busy('full');
    return new Promise<Release>((resolve, reject) => {
      const leave = (error: unknown) => {
        this.waiters.delete(waiter);
        clearTimeout(timer);
        signal?.removeListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => leave(signal!.reason);
      const timer = setTimeout(() => leave(this.busy('queue_timeout')), this.limits.queueTimeoutMs);
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer);
          signal?.removeListener('abort', onAbort);
          resolve(this.take());
        },
      };
      signal?.once('abort', onAbort);
      this.waiters.add(waiter);
    });
  }

  private hasRoom(): boolean {
    return this.limits.limit === 0 || this.inFlight < this.limits.limit;
  }

  private take(): Release {
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.admitNext();
    };
  }

  private admitNext() {
    if (!this.hasRoom()) return;
    const next = this.waiters.values().next();
    if (next.done) return;
    this.waiters.delete(next.value);
    next.value.admit();
  }

  private busy(reason: 'full' | 'queue_timeout'): HttpError {
    this.refused?.inc({ reason });
    const { limit, queue, queueTimeoutMs } = this.limits;
    const atLimit = `This node is forwarding as many requests at once as its operator allows (${limit})`;
    const message =
      reason === 'queue_timeout'
        ? `${atLimit}, and none finished within the ${queueTimeoutMs} ms this request waited; try again`
        : queue > 0
          ? `${atLimit}, and ${queue} more are waiting; try again`
          : `${atLimit}; try again`;
    return new HttpError(503, message, { code: 'node_busy', headers: { 'retry-after': RETRY_AFTER_SECONDS } });
  }
}
