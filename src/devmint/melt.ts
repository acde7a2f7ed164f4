// NUT-05 / NUT-23 melting: pay a (fake) Lightning invoice with proofs. Inputs are PENDING while
// the payment is in flight; they are spent when it succeeds and released when it fails.
// Overpaid fee reserve comes back as change in the blank outputs (NUT-08).
import type { BlindedMessage, MeltQuoteRequest, MeltQuoteResponse, Unit, WireProof } from '../cashu/index.js';
import { Codes, MintError } from './errors.js';
import type { Ledger } from './ledger.js';
import { invoiceAmountMsat, type FakeLightning, type PaymentOutcome } from './lightning.js';
import { checkAmount, checkUnit, nowSeconds, QUOTE_TTL_SECONDS, type MintQuotes } from './quotes.js';
import { uuidv7 } from './uuid.js';

/** A melt quote as the mint keeps it: its NUT-05 view. */
export interface MeltQuote extends MeltQuoteResponse {
  unit: Unit;
}

/** Lightning fee reserve for external payments: 1 %, at least 1 (the fake node pays no fee). */
export function feeReserve(amount: number): number {
  return Math.max(1, Math.ceil(amount / 100));
}

export class Melts {
  private readonly quotes = new Map<string, MeltQuote>();

  constructor(
    private readonly ledger: Ledger,
    private readonly lightning: FakeLightning,
    private readonly mintQuotes: MintQuotes,
  ) {}

  create(request: MeltQuoteRequest): MeltQuote {
    const unit = checkUnit(this.ledger, request.unit);
    const msat = invoiceAmountMsat(request.request);
    if (msat === undefined) throw new MintError(Codes.generic, 'request is not a bolt11 invoice');
    if (msat === null) throw new MintError(Codes.amountlessInvoiceUnsupported, 'amountless invoices are not supported');
    const amount = unit === 'sat' ? Math.ceil(msat / 1000) : msat;
    checkAmount(amount);
    // Our own invoice: settled inside the mint, without Lightning fees.
    const own = this.mintQuotes.byInvoice(request.request);
    if (own && this.mintQuotes.state(own) !== 'UNPAID') {
      throw new MintError(Codes.invoiceAlreadyPaid, 'invoice already paid');
    }
    const quote: MeltQuote = {
      quote: uuidv7(),
      request: request.request,
      amount,
      unit,
      fee_reserve: own ? 0 : feeReserve(amount),
      state: 'UNPAID',
      expiry: nowSeconds() + QUOTE_TTL_SECONDS,
      payment_preimage: null,
    };
    this.quotes.set(quote.quote, quote);
    return quote;
  }

  get(id: string): MeltQuote {
    const quote = this.quotes.get(id);
    if (!quote) throw new MintError(Codes.generic, `melt quote ${id} not found`);
    return quote;
  }

  async melt(id: string, inputs: WireProof[], outputs: BlindedMessage[] = []): Promise<MeltQuote> {
    const quote = this.get(id);
    if (quote.state === 'PENDING') throw new MintError(Codes.quotePending, 'quote is pending');
    if (quote.state === 'PAID') throw new MintError(Codes.invoiceAlreadyPaid, 'invoice already paid');
    if (quote.expiry <= nowSeconds()) throw new MintError(Codes.quoteExpired, 'quote is expired');
    const spent = this.ledger.checkInputs(inputs);
    if (spent.unit !== quote.unit) throw new MintError(Codes.unitMismatch, "inputs are not of the quote's unit");
    const blank = this.ledger.checkOutputs(outputs, { blank: true });
    if (blank.unit !== undefined && blank.unit !== quote.unit) {
      throw new MintError(Codes.unitMismatch, "outputs are not of the quote's unit");
    }
    const needed = quote.amount + quote.fee_reserve;
    if (spent.total - spent.fee < needed) {
      throw new MintError(
        Codes.transactionUnbalanced,
        `inputs ${spent.total} - fees ${spent.fee} do not cover ` +
          `amount ${quote.amount} + fee reserve ${quote.fee_reserve}`,
      );
    }
    this.ledger.reserve(spent.ys, outputs);
    quote.state = 'PENDING';

    let outcome: PaymentOutcome;
    try {
      outcome = await this.pay(quote);
    } catch (error) {
      outcome = { paid: false, detail: error instanceof Error ? error.message : String(error) };
    }
    this.ledger.release(spent.ys, outputs);
    if (!outcome.paid) {
      quote.state = 'UNPAID';
      throw new MintError(Codes.lightningPaymentFailed, `Lightning payment failed: ${outcome.detail}`);
    }
    this.ledger.spend(spent.ys);
    quote.state = 'PAID';
    quote.payment_preimage = outcome.preimage;
    const feePaid = Math.ceil(outcome.feeMsat / (quote.unit === 'sat' ? 1000 : 1));
    const change = changeOutputs(spent.total - spent.fee - quote.amount - feePaid, outputs);
    quote.change = change.length ? this.ledger.sign(change) : [];
    return quote;
  }

  snapshot(): MeltQuote[] {
    return [...this.quotes.values()];
  }

  /** A melt in flight when the mint stopped never reached the (fake) network: it failed. */
  load(quotes: MeltQuote[]) {
    for (const quote of quotes) {
      this.quotes.set(quote.quote, quote.state === 'PENDING' ? { ...quote, state: 'UNPAID' } : quote);
    }
  }

  private async pay(quote: MeltQuote): Promise<PaymentOutcome> {
    const own = this.mintQuotes.byInvoice(quote.request);
    if (!own) return this.lightning.pay(quote.request);
    if (this.mintQuotes.state(own) !== 'UNPAID') return { paid: false, detail: 'invoice already paid' };
    this.lightning.settle(own.request);
    return { paid: true, preimage: this.lightning.invoice(own.request)!.preimage, feeMsat: 0 };
  }
}

/**
 * Imprints the overpaid amount, split into powers of two, into the blank outputs in their order.
 * With fewer blank outputs than pieces, the largest pieces are returned (the rest stays with the
 * mint, as NUT-08 allows).
 */
function changeOutputs(overpaid: number, blanks: BlindedMessage[]): BlindedMessage[] {
  if (overpaid <= 0 || blanks.length === 0) return [];
  const pieces: number[] = [];
  let rest = overpaid;
  for (let amount = 2 ** 30; amount >= 1; amount /= 2) {
    while (rest >= amount) {
      pieces.push(amount);
      rest -= amount;
    }
  }
  return pieces
    .slice(0, blanks.length)
    .reverse()
    .map((amount, i) => ({ ...blanks[i], amount }));
}
