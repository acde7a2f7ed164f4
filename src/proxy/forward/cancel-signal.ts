// Its own module: forward.ts implements it, the upstream slots and the reservation wait on it.
/**
 * How a forwarded request learns that its caller left: what undici reads of a `signal` (an
 * EventEmitter with `aborted` and `reason`), and the upstream queue and reservation wait too.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  once(event: 'abort', listener: () => void): unknown;
  removeListener(event: 'abort', listener: () => void): unknown;
}
