// One provider's circuit breaker (docs/proxy-billing.md, "Providers"): after `failures` failures in a
// row (connect error, timeout before the answer's headers, 5xx) it opens, and the provider is skipped
// while another can serve; after `cooldownMs` one request at a time may probe it: a success closes
// the breaker, a failure opens it for another cool-down.

export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  private failuresInRow = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly failures: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** `half-open`: the cool-down is over and no probe is under way, so the next request may probe. */
  get state(): BreakerState {
    if (this.failuresInRow < this.failures) return 'closed';
    return this.probing || this.now() < this.openUntil ? 'open' : 'half-open';
  }

  /** When an open breaker lets a probe through (ms since the epoch); 0 when closed. */
  get retryAt(): number {
    return this.failuresInRow < this.failures ? 0 : this.openUntil;
  }

  /** A request is sent: when the breaker is half-open it is the probe, and no other passes meanwhile. */
  attempt(): { probe: boolean } {
    if (this.state !== 'half-open') return { probe: false };
    this.probing = true;
    return { probe: true };
  }

  succeeded(): void {
    this.failuresInRow = 0;
    this.openUntil = 0;
    this.probing = false;
  }

  failed(): void {
    this.probing = false;
    this.failuresInRow = Math.min(this.failuresInRow + 1, this.failures);
    if (this.failuresInRow >= this.failures) this.openUntil = this.now() + this.cooldownMs;
  }

  /** A request ended without telling (its caller left): a probe's place is given back. */
  abandoned(probe: boolean): void {
    if (probe) this.probing = false;
  }
}
