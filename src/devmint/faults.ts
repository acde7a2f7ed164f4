// The fault switch tests use to make the mint misbehave. Faults touch the NUT routes (/v1/…)
// only; the /dev/… routes keep working, except while `down` (nothing listens then).

export interface FaultSettings {
  /** Nothing listens: new connections are refused, open ones are destroyed. */
  down?: boolean;
  /** Every /v1 request waits this long before it is handled. */
  delayMs?: number;
  /**
   * POST /v1/swap waits, unperformed, until `releaseSwaps()` (or until holdSwaps is turned off,
   * which performs them): a window in which a test can kill the client that sent it.
   */
  holdSwaps?: boolean;
  /** POST /v1/swap answers 500 before doing anything. */
  failSwaps?: boolean;
  /** POST /v1/swap: the connection is destroyed before the swap is performed (nothing done, no answer). */
  dropSwaps?: boolean;
  /** POST /v1/swap is performed, then the connection is destroyed without an answer. */
  loseSwapResponses?: boolean;
  /** Every /v1 request gets 200 with a nonsense body and does nothing. */
  lie?: boolean;
  /** No NUT-09: POST /v1/restore answers 404 as if the route did not exist, and /v1/info says so. */
  noRestore?: boolean;
  /**
   * The next this-many POST /v1/melt/bolt11 answer 400 code 11000 "not enough inputs provided for
   * melt" (as nutshell words a fee shortfall) without doing anything; each refusal counts one down.
   */
  refuseMelts?: number;
  /** POST /v1/melt/bolt11 is performed (the invoice paid), then the connection is destroyed without an answer. */
  loseMeltResponses?: boolean;
  /** POST /v1/mint/bolt11 is performed (the quote issued), then the connection is destroyed without an answer. */
  loseMintResponses?: boolean;
}

export interface FaultChange extends FaultSettings {
  /** Clears all faults after this many milliseconds (so a CLI mint can come back after `down`). */
  forMs?: number;
}

export interface Listener {
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** The nonsense a lying mint answers, in turn: wrong types, empty lists, not JSON at all. */
const LIES = [
  '{"signatures":"all good","keysets":"all good","states":"all good"}',
  '{"signatures":[],"keysets":[],"states":[]}',
  'this is not JSON',
  '{}',
  '{"quote":42,"state":"MAYBE","signatures":[{"id":"00","amount":-1,"C_":"zz"}]}',
];

export type SwapRelease = 'perform' | 'drop';

export class Faults {
  private settings: FaultSettings = {};
  private timer: NodeJS.Timeout | undefined;
  private lies = 0;
  private held: ((release: SwapRelease) => void)[] = [];

  constructor(private readonly listener: Listener) {}

  /** Merges the given settings into the current ones (`false`/0 turns one off). */
  async set(change: FaultChange): Promise<void> {
    const { forMs, ...settings } = change;
    const wasDown = Boolean(this.settings.down);
    this.settings = { ...this.settings, ...settings };
    if (this.timer) clearTimeout(this.timer);
    this.timer = forMs ? setTimeout(() => void this.clear(), forMs).unref() : undefined;
    const down = Boolean(this.settings.down);
    if (down && !wasDown) await this.listener.stop();
    if (!down && wasDown) await this.listener.start();
    if (!this.settings.holdSwaps) this.releaseSwaps('perform');
  }

  async clear(): Promise<void> {
    await this.set({
      down: false,
      delayMs: 0,
      holdSwaps: false,
      failSwaps: false,
      dropSwaps: false,
      loseSwapResponses: false,
      lie: false,
      noRestore: false,
      refuseMelts: 0,
      loseMeltResponses: false,
      loseMintResponses: false,
    });
  }

  get current(): FaultSettings {
    return Object.fromEntries(Object.entries(this.settings).filter(([, value]) => Boolean(value)));
  }

  /** Swaps waiting under holdSwaps. */
  get heldSwaps(): number {
    return this.held.length;
  }

  /** Lets the held swaps go on (`perform`) or cuts their connections unperformed (`drop`). */
  releaseSwaps(release: SwapRelease = 'perform'): number {
    const held = this.held;
    this.held = [];
    for (const resolve of held) resolve(release);
    return held.length;
  }

  /** Called by the swap route while holdSwaps is on. */
  holdSwap(): Promise<SwapRelease> {
    return new Promise((resolve) => this.held.push(resolve));
  }

  /** Called by the melt route: true when this melt is to be refused (one of refuseMelts, used up). */
  takeMeltRefusal(): boolean {
    if (!this.settings.refuseMelts) return false;
    this.settings = { ...this.settings, refuseMelts: this.settings.refuseMelts - 1 };
    return true;
  }

  nextLie(): string {
    return LIES[this.lies++ % LIES.length];
  }
}
