// startDevMint(): a development Cashu mint (a DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE) on a
// loopback port, for tests (in-process) and local demos (`quartet dev-mint`).
import { getEncodedToken, Wallet } from '@cashu/cashu-ts';
import { Faults } from './faults.js';
import type { Unit } from './keys.js';
import { Ledger } from './ledger.js';
import { FakeLightning, type HeldPayment } from './lightning.js';
import { Melts } from './melt.js';
import { MintQuotes } from './quotes.js';
import { buildApp, listener } from './server.js';

export { LABEL } from './server.js';
export type { FaultChange, FaultSettings } from './faults.js';
export type { HeldPayment } from './lightning.js';

export interface DevMintOptions {
  unit?: Unit;
  /** NUT-02 fee per input in parts per thousand (default 0). */
  inputFeePpk?: number;
  /** Derive the keys from this string: the same seed gives the same keysets after a restart. */
  seed?: string;
  /** 0 (default) = a random free port. */
  port?: number;
  host?: string;
  /** Mint quotes are paid as soon as they are created (default false: pay with lightning.payInvoice). */
  autoPay?: boolean;
  logger?: boolean;
}

export interface DevMint {
  /** http://127.0.0.1:PORT, no trailing slash. */
  url: string;
  unit: Unit;
  faults: Faults;
  lightning: {
    /** The mint quote's invoice is paid: the quote becomes PAID. */
    payInvoice(quoteId: string): void;
    /** The next melt's Lightning payment fails: its inputs stay unspent. */
    failNextMelt(detail?: string): void;
    /** The next melt's payment stays in flight (inputs PENDING) until `settle()`. */
    holdNextMelt(): HeldPayment;
    /** A fake invoice of some other node, for `amount` in the mint's unit, to melt to. */
    createInvoice(amount: number): string;
  };
  /** Active keyset id. */
  keysetId(): string;
  /** NUT-02 key rotation: a new active keyset; returns its id. */
  rotateKeyset(options?: { inputFeePpk?: number }): string;
  /** Mints fresh proofs with cashu-ts (quote, pay, mint) and returns them as a cashuB token. */
  mintToken(amount: number): Promise<string>;
  close(): Promise<void>;
}

export async function startDevMint(options: DevMintOptions = {}): Promise<DevMint> {
  const unit = options.unit ?? 'sat';
  const host = options.host ?? '127.0.0.1';
  const inputFeePpk = options.inputFeePpk ?? 0;
  if (!Number.isSafeInteger(inputFeePpk) || inputFeePpk < 0) throw new Error('inputFeePpk must be a non-negative integer');

  const ledger = new Ledger(unit, inputFeePpk, options.seed);
  const lightning = new FakeLightning();
  const mintQuotes = new MintQuotes(ledger, lightning, options.autoPay ?? false);
  const melts = new Melts(ledger, lightning, mintQuotes);
  let url = '';
  let switchable: ReturnType<typeof listener> | undefined;
  const faults = new Faults({ stop: () => switchable!.stop(), start: () => switchable!.start() });
  const app = buildApp({ ledger, mintQuotes, melts, lightning, url: () => url }, faults, { logger: options.logger });

  await app.listen({ port: options.port ?? 0, host });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('dev mint has no TCP address');
  switchable = listener(app, { port: address.port, host });
  url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;

  return {
    url,
    unit,
    faults,
    lightning: {
      payInvoice: (quoteId) => void mintQuotes.pay(quoteId),
      failNextMelt: (detail) => lightning.failNextPayment(detail),
      holdNextMelt: () => lightning.holdNextPayment(),
      createInvoice: (amount) => lightning.createInvoice(unit === 'sat' ? amount * 1000 : amount).request,
    },
    keysetId: () => ledger.activeKeyset().id,
    rotateKeyset: (rotation = {}) => ledger.rotateKeyset(rotation.inputFeePpk).id,
    async mintToken(amount) {
      const wallet = new Wallet(url, { unit });
      await wallet.loadMint();
      const quote = await wallet.createMintQuoteBolt11(amount);
      mintQuotes.pay(quote.quote);
      const proofs = await wallet.mintProofsBolt11(amount, quote.quote);
      return getEncodedToken({ mint: url, proofs, unit });
    },
    async close() {
      lightning.close();
      if (!switchable!.isListening()) await switchable!.start();
      await app.close();
    },
  };
}
