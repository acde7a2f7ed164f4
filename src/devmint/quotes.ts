// NUT-04 / NUT-23 mint quotes: an invoice of the fake Lightning node per quote; once it is
// paid (on demand, or at once with autoPay) the quote's amount can be minted exactly once.
import {
  unitToMsat,
  type BlindedMessage,
  type BlindSignature,
  type MintQuoteRequest,
  type MintQuoteResponse,
  type MintQuoteState,
  type Unit,
} from '../cashu/index.js';
import { Codes, MintError } from './errors.js';
import type { Ledger } from './ledger.js';
import type { FakeLightning } from './lightning.js';
import { uuidv7 } from './uuid.js';

/** Largest amount of one quote: one proof of every key (1 + 2 + … + 2^30). */
export const MAX_AMOUNT = 2 ** 31 - 1;
export const QUOTE_TTL_SECONDS = 3600;

export interface MintQuote {
  quote: string;
  request: string;
  amount: number;
  unit: Unit;
  expiry: number;
  issued: boolean;
}

export function checkUnit(ledger: Ledger, unit: string): Unit {
  if (unit !== ledger.unit) {
    throw new MintError(Codes.unitUnsupported, `unit "${unit}" is not supported (this mint: ${ledger.unit})`);
  }
  return ledger.unit;
}

export function checkAmount(amount: number) {
  if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_AMOUNT) {
    throw new MintError(Codes.amountOutsideLimit, `amount must be between 1 and ${MAX_AMOUNT}`);
  }
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export class MintQuotes {
  private readonly quotes = new Map<string, MintQuote>();
  private readonly byRequest = new Map<string, string>();

  constructor(
    private readonly ledger: Ledger,
    private readonly lightning: FakeLightning,
    private readonly autoPay: boolean,
  ) {}

  create(request: MintQuoteRequest): MintQuoteResponse {
    const unit = checkUnit(this.ledger, request.unit);
    checkAmount(request.amount);
    const invoice = this.lightning.createInvoice(unitToMsat(request.amount, unit));
    const quote: MintQuote = {
      quote: uuidv7(),
      request: invoice.request,
      amount: request.amount,
      unit,
      expiry: nowSeconds() + QUOTE_TTL_SECONDS,
      issued: false,
    };
    this.quotes.set(quote.quote, quote);
    this.byRequest.set(quote.request, quote.quote);
    if (this.autoPay) this.lightning.settle(quote.request);
    return this.view(quote);
  }

  get(id: string): MintQuote {
    const quote = this.quotes.get(id);
    if (!quote) throw new MintError(Codes.generic, `mint quote ${id} not found`);
    return quote;
  }

  /** The quote whose invoice this is, if any (for melts paying our own invoices). */
  byInvoice(request: string): MintQuote | undefined {
    const id = this.byRequest.get(request);
    return id === undefined ? undefined : this.quotes.get(id);
  }

  state(quote: MintQuote): MintQuoteState {
    if (quote.issued) return 'ISSUED';
    return this.lightning.invoice(quote.request)?.paid ? 'PAID' : 'UNPAID';
  }

  view(quote: MintQuote): MintQuoteResponse {
    return {
      quote: quote.quote,
      request: quote.request,
      amount: quote.amount,
      unit: quote.unit,
      state: this.state(quote),
      expiry: quote.expiry,
    };
  }

  /** Someone paid the quote's invoice. */
  pay(id: string) {
    const quote = this.get(id);
    if (this.state(quote) === 'UNPAID' && quote.expiry <= nowSeconds()) {
      throw new MintError(Codes.quoteExpired, 'quote is expired');
    }
    this.lightning.settle(quote.request);
    return this.view(quote);
  }

  mint(id: string, outputs: BlindedMessage[]): BlindSignature[] {
    const quote = this.get(id);
    const state = this.state(quote);
    if (state === 'ISSUED') throw new MintError(Codes.quoteAlreadyIssued, 'quote has already been issued');
    if (state === 'UNPAID') {
      if (quote.expiry <= nowSeconds()) throw new MintError(Codes.quoteExpired, 'quote is expired');
      throw new MintError(Codes.quoteNotPaid, 'quote request is not paid');
    }
    if (outputs.length === 0) throw new MintError(Codes.generic, 'no outputs provided');
    const made = this.ledger.checkOutputs(outputs);
    if (made.unit !== quote.unit) throw new MintError(Codes.unitMismatch, "outputs are not of the quote's unit");
    if (made.total !== quote.amount) {
      throw new MintError(Codes.transactionUnbalanced, `outputs ${made.total} != quote amount ${quote.amount}`);
    }
    quote.issued = true;
    return this.ledger.sign(outputs);
  }

  snapshot(): MintQuote[] {
    return [...this.quotes.values()];
  }

  load(quotes: MintQuote[]) {
    for (const quote of quotes) {
      this.quotes.set(quote.quote, quote);
      this.byRequest.set(quote.request, quote.quote);
    }
  }
}
