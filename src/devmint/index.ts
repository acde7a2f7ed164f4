// startDevMint(): a development Cashu mint (a DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE) on a
// loopback port, for tests (in-process) and local demos (`quartet dev-mint`).
import { getEncodedToken, Wallet } from '@cashu/cashu-ts';
import { unitToMsat, type Unit } from '../cashu/index.js';
import { Faults } from './faults.js';
import { Ledger } from './ledger.js';
import { FakeLightning, type HeldPayment } from './lightning.js';
import { Melts } from './melt.js';
import { MintQuotes } from './quotes.js';
import { buildApp, listener } from './server.js';
import { randomSeed, readState, writeState } from './state.js';

export { LABEL } from './server.js';
export type { FaultChange, FaultSettings, SwapRelease } from './faults.js';
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
  /** Keep the books in this JSON file (spent proofs, signed outputs, quotes) across restarts. */
  stateFile?: string;
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
  const host = options.host ?? '127.0.0.1';
  const saved = options.stateFile ? readState(options.stateFile) : undefined;
  if (saved && options.seed !== undefined && options.seed !== saved.seed) {
    throw new Error(`${options.stateFile} belongs to a mint with another seed`);
  }
  if (saved && options.unit !== undefined && options.unit !== saved.unit) {
    throw new Error(`${options.stateFile} belongs to a ${saved.unit} mint`);
  }
  // A state file without a seed would be useless after a restart: its proofs need the same keys.
  const seed = saved?.seed ?? options.seed ?? (options.stateFile ? randomSeed() : undefined);
  const unit = saved?.unit ?? options.unit ?? 'sat';
  const inputFeePpk = options.inputFeePpk ?? 0;
  if (!Number.isSafeInteger(inputFeePpk) || inputFeePpk < 0) {
    throw new Error('inputFeePpk must be a non-negative integer');
  }

  const ledger = new Ledger(unit, inputFeePpk, seed);
  const lightning = new FakeLightning();
  const mintQuotes = new MintQuotes(ledger, lightning, options.autoPay ?? false);
  const melts = new Melts(ledger, lightning, mintQuotes);
  if (saved) {
    ledger.load(saved.ledger);
    lightning.load(saved.invoices);
    mintQuotes.load(saved.mintQuotes);
    melts.load(saved.meltQuotes);
    // The fee is part of the keyset id (NUT-02): another fee needs another keyset.
    if (options.inputFeePpk !== undefined && ledger.activeKeyset().inputFeePpk !== options.inputFeePpk) {
      ledger.rotateKeyset(options.inputFeePpk);
    }
  }
  const save = () => {
    if (!options.stateFile) return;
    writeState(options.stateFile, {
      version: 1,
      seed: seed!,
      unit,
      ledger: ledger.snapshot(),
      invoices: lightning.snapshot(),
      mintQuotes: mintQuotes.snapshot(),
      meltQuotes: melts.snapshot(),
    });
  };
  save();

  const payInvoice = (quoteId: string) => {
    mintQuotes.pay(quoteId);
    save();
  };
  let url = '';
  // Over HTTP with cashu-ts, as a real client would mint (so faults apply to it too).
  async function mintToken(amount: number): Promise<string> {
    const wallet = new Wallet(url, { unit });
    await wallet.loadMint();
    const quote = await wallet.createMintQuoteBolt11(amount);
    payInvoice(quote.quote);
    const proofs = await wallet.mintProofsBolt11(amount, quote.quote);
    return getEncodedToken({ mint: url, proofs, unit });
  }
  // Assigned once the app exists; the faults' stop and start reach it only after that.
  let switchable: ReturnType<typeof listener> | undefined; // eslint-disable-line prefer-const
  const faults = new Faults({ stop: () => switchable!.stop(), start: () => switchable!.start() });
  const app = buildApp({ ledger, mintQuotes, melts, lightning, url: () => url, mintToken }, faults, {
    logger: options.logger,
    onChange: save,
  });

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
      payInvoice,
      failNextMelt: (detail) => lightning.failNextPayment(detail),
      holdNextMelt: () => lightning.holdNextPayment(),
      createInvoice: (amount) => lightning.createInvoice(unitToMsat(amount, unit)).request,
    },
    keysetId: () => ledger.activeKeyset().id,
    rotateKeyset: (rotation = {}) => {
      const { id } = ledger.rotateKeyset(rotation.inputFeePpk);
      save();
      return id;
    },
    mintToken,
    async close() {
      lightning.close();
      faults.releaseSwaps('drop');
      if (!switchable!.isListening()) await switchable!.start();
      await app.close();
      save();
    },
  };
}
