// Lightning in (RIP-08): an invoice that funds an account is a NUT-04 mint quote of the node's
// primary mint. Once the mint says PAID, the node mints the quote's amount on blinded outputs of
// its own and credits exactly once. The mint is a journaled operation (proxy_mint_ops, kind
// `mint`): its outputs are written before the request is sent, the credit is written in the
// transaction that marks it done, and the invoice is tied to one operation by a conditional
// update, so two pollers or two processes start one mint and credit once. A crash between
// "paid" and "credited" is finished by the recovery (NUT-09 restore of the journaled outputs when
// the mint already issued). Payments out are ./lightning-pay.ts. See docs/proxy-wallet.md#lightning.
import { randomBytes } from 'node:crypto';
import { OutputData, type SerializedOutputData } from '@cashu/cashu-ts';
import { invoiceAmountMsat, invoicePaymentHash, type BlindSignature } from '../../cashu/index.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { keyHash, keyPrefix } from '../keys/accounts.js';
import { requestMintQuote, mintQuoteState, mintProofs, unblind, type MintQuote } from '../wallet/lightning-mint.js';
import {
  MintProtocolError,
  MintRejectedError,
  MintUnreachableError,
  type KeysetWithKeys,
  type MintClient,
} from '../wallet/mint-client.js';
import { messageOf, proofRows, Settled, type MintOp, type WalletLogger } from '../wallet/mint-journal.js';
import {
  attachInvoiceOp,
  expireLightningInvoice,
  insertLightningInvoice,
  lightningInvoiceByBolt11,
  lightningInvoiceById,
  markInvoicePaid,
  type LightningInvoice,
} from './store.js';
import {
  claimOp,
  createFundedAccount,
  creditAccount,
  insertMintOp,
  insertProofs,
  leaveOpPending,
  markOpDone,
  markOpFailed,
  mintOpById,
  unfinishedOps,
  type Executor,
} from '../wallet/store.js';
import { sha256Hex } from '../wallet/tokens.js';
import type { NodeWallet } from '../wallet/wallet.js';

/** What a mint operation's journal holds (proxy_mint_ops.request). */
interface MintJournal {
  quote: string;
  invoiceId: string;
  outputs: SerializedOutputData[];
  keysetId: string;
}

export interface InvoiceStatus {
  status: 'pending' | 'paid' | 'expired';
  /** `create`: the new account's key, once paid. */
  api_key: string | null;
  amount_sats: number;
  paid_at: number | null;
  created_at: number;
  expires_at: number;
}

/** Used when the mint's quote names no expiry. */
const DEFAULT_TTL_SECONDS = 3600;

class Conflict extends Error {}

/**
 * The key of the account a `create` invoice opens: derived from the invoice id (a random secret
 * only its creator was given), so the key itself is stored nowhere.
 */
export function apiKeyForInvoice(invoiceId: string): string {
  return `sk-${sha256Hex(`quartet-lightning-create:${invoiceId}`)}`;
}

/** The node's view of a mint failure while asking for or settling an invoice. */
export function lightningMintError(error: unknown, mintUrl: string, what: string): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof MintUnreachableError) {
    return new HttpError(503, `The mint ${mintUrl} is unreachable; ${what} failed, try again later`, {
      code: 'cashu_mint_unreachable',
      type: 'mint_unreachable',
      headers: { 'retry-after': '5' },
    });
  }
  if (error instanceof MintRejectedError) {
    return new HttpError(502, `The mint ${mintUrl} refused: ${error.detail}`, {
      code: 'mint_refused',
      type: 'mint_error',
    });
  }
  if (error instanceof MintProtocolError) {
    return new HttpError(502, `The mint ${mintUrl} gave an invalid answer; ${what} failed`, {
      code: 'mint_error',
      type: 'mint_error',
    });
  }
  throw error;
}

export interface LightningOptions {
  mintTimeoutMs: number;
  /** Largest invoice one call may ask for. */
  maxInvoiceSats: number;
}

export class LightningInvoices {
  /** How long a claimed operation is its claimer's alone (as the swap journal's). */
  readonly leaseMs: number;

  constructor(
    private db: Database,
    private wallet: NodeWallet,
    private options: LightningOptions,
    private log: WalletLogger,
  ) {
    this.leaseMs = 6 * options.mintTimeoutMs;
  }

  private get client(): MintClient {
    return this.wallet.client(this.wallet.primaryMint);
  }

  /** A new invoice: a mint quote of the primary mint for `amountSats`. */
  async create(amountSats: number, purpose: 'create' | 'topup', accountId: number | null) {
    const mintUrl = this.wallet.primaryMint;
    if (amountSats > this.options.maxInvoiceSats) {
      throw new HttpError(400, `An invoice may ask for at most ${this.options.maxInvoiceSats} sats`, {
        code: 'amount_too_large',
        type: 'invalid_request_error',
      });
    }
    let quote: MintQuote;
    try {
      quote = await requestMintQuote(this.client, amountSats, 'sat');
      // The mint's invoice must ask for what the caller will be credited, no more, no less.
      const asked = invoiceAmountMsat(quote.request);
      if (quote.amount !== amountSats || (asked !== null && asked !== amountSats * 1000)) {
        throw new MintProtocolError(mintUrl, 'the quote is not for the amount asked');
      }
    } catch (error) {
      throw lightningMintError(error, mintUrl, 'creating the invoice');
    }
    const now = Date.now();
    const row = {
      id: randomBytes(16).toString('base64url'),
      mint_url: mintUrl,
      unit: 'sat',
      quote_id: quote.quote,
      bolt11: quote.request,
      payment_hash: invoicePaymentHash(quote.request),
      amount_sats: amountSats,
      purpose,
      account_id: accountId,
      status: 'pending' as const,
      op_id: null,
      created_at: now,
      expires_at: quote.expiry ?? Math.floor(now / 1000) + DEFAULT_TTL_SECONDS,
      paid_at: null,
    };
    await insertLightningInvoice(this.db.kysely, row);
    this.log.info({ invoiceId: row.id, amountSats, purpose }, 'lightning invoice created');
    return row;
  }

  /** The invoice's status, after settling it as far as the mint allows. 404 when unknown. */
  async status(id: string): Promise<InvoiceStatus> {
    const invoice = await lightningInvoiceById(this.db.kysely, id);
    if (!invoice) throw invoiceNotFound();
    return this.view(await this.settle(invoice));
  }

  /** Finds an invoice by its bolt11 and finishes it. 404 when unknown. */
  async recover(bolt11: string): Promise<InvoiceStatus> {
    const invoice = await lightningInvoiceByBolt11(this.db.kysely, bolt11.trim());
    if (!invoice) throw invoiceNotFound();
    return this.view(await this.settle(invoice));
  }

  private view(invoice: LightningInvoice): InvoiceStatus {
    return {
      status: invoice.status,
      api_key: invoice.status === 'paid' && invoice.purpose === 'create' ? apiKeyForInvoice(invoice.id) : null,
      amount_sats: invoice.amount_sats,
      paid_at: invoice.paid_at === null ? null : Math.floor(invoice.paid_at / 1000),
      created_at: Math.floor(invoice.created_at / 1000),
      expires_at: invoice.expires_at,
    };
  }

  /**
   * Takes a pending invoice as far as the mint allows: expired when unpaid past its expiry, paid
   * once minted and credited; otherwise it stays pending (the mint unreachable, or another request
   * or process is minting it right now).
   */
  private async settle(invoice: LightningInvoice): Promise<LightningInvoice> {
    if (invoice.status !== 'pending') return invoice;
    const db = this.db.kysely;
    if (invoice.op_id === null) {
      let quote: MintQuote;
      try {
        quote = await mintQuoteState(this.client, invoice.quote_id);
      } catch (error) {
        throw lightningMintError(error, invoice.mint_url, 'checking the invoice');
      }
      if (quote.state === 'UNPAID') {
        if (invoice.expires_at > Date.now() / 1000) return invoice;
        await expireLightningInvoice(db, invoice.id);
        return (await lightningInvoiceById(db, invoice.id))!;
      }
      const started = await this.startMint(invoice);
      if (started) {
        await this.driveQuietly(started, true);
        return (await lightningInvoiceById(db, invoice.id))!;
      }
      invoice = (await lightningInvoiceById(db, invoice.id))!;
      if (invoice.status !== 'pending' || invoice.op_id === null) return invoice;
    }
    // A mint was started before: finish it if no one is working on it now.
    const op = await claimOp(db, invoice.op_id, Date.now() + this.leaseMs, Date.now());
    if (op) await this.driveQuietly(op, false);
    return (await lightningInvoiceById(db, invoice.id))!;
  }

  /** Journals the mint of a paid quote and ties it to the invoice; null when another poller did first. */
  private async startMint(invoice: LightningInvoice): Promise<MintOp | null> {
    let keyset: KeysetWithKeys;
    try {
      keyset = await this.client.activeKeyset(invoice.unit);
    } catch (error) {
      throw lightningMintError(error, invoice.mint_url, 'minting the paid invoice');
    }
    const outputs = OutputData.createRandomData(invoice.amount_sats, { id: keyset.id, keys: keyset.keys });
    const journal: MintJournal = {
      quote: invoice.quote_id,
      invoiceId: invoice.id,
      outputs: outputs.map((o) => OutputData.serialize(o)),
      keysetId: keyset.id,
    };
    const newKey = invoice.purpose === 'create' ? apiKeyForInvoice(invoice.id) : null;
    const now = Date.now();
    try {
      return await writeTransaction(this.db, async (trx) => {
        const op = await insertMintOp(trx, {
          kind: 'mint',
          purpose: `lightning-${invoice.purpose}`,
          state: 'pending',
          mint_url: invoice.mint_url,
          unit: invoice.unit,
          token_hash: null,
          request: JSON.stringify(journal),
          credit_account_id: invoice.account_id,
          credit_key_hash: newKey ? keyHash(newKey) : null,
          credit_key_prefix: newKey ? keyPrefix(newKey) : null,
          credit_msat: invoice.amount_sats * 1000,
          debit_account_id: null,
          result: null,
          error: null,
          lease_until: now + this.leaseMs,
          created_at: now,
          updated_at: now,
        });
        if (!(await attachInvoiceOp(trx, invoice.id, op.id))) throw new Conflict();
        return op;
      });
    } catch (error) {
      if (error instanceof Conflict) return null;
      throw error;
    }
  }

  /** Drives a mint; what is left pending is finished later (status polls, the recovery). */
  private async driveQuietly(op: MintOp, fresh: boolean): Promise<void> {
    try {
      await this.drive(op, fresh);
    } catch (error) {
      this.log.warn({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'lightning mint left pending');
      await leaveOpPending(this.db.kysely, op.id, messageOf(error).slice(0, 500), op.maybe_swapped, Date.now());
    }
  }

  /**
   * Sends the mint (fresh), or first asks the quote's state (a resumption): ISSUED means an earlier
   * attempt was performed, so its signatures are restored (NUT-09) from the journaled outputs.
   */
  async drive(op: MintOp, fresh: boolean): Promise<void> {
    const journal = JSON.parse(op.request!) as MintJournal;
    const client = this.wallet.client(op.mint_url);
    const outputs = journal.outputs.map((o) => OutputData.deserialize(o));
    const blinded = outputs.map((o) => ({
      amount: Number(o.blindedMessage.amount.toString()),
      id: o.blindedMessage.id,
      B_: o.blindedMessage.B_,
    }));
    let issued = false;
    if (!fresh) issued = (await mintQuoteState(client, journal.quote)).state === 'ISSUED';
    let signatures: (BlindSignature | null)[];
    if (!issued) {
      try {
        signatures = await mintProofs(client, journal.quote, blinded);
      } catch (error) {
        // A refusal may be "already issued" (our earlier attempt was performed): ask the quote.
        if (!(error instanceof MintRejectedError) || error.status >= 500) throw error;
        if ((await mintQuoteState(client, journal.quote)).state !== 'ISSUED') throw error;
        issued = true;
      }
    }
    if (issued) signatures = await client.restore(blinded);
    if (signatures!.some((s) => s === null)) {
      // The quote was issued, but not on our outputs: only a leaked quote id allows that.
      this.log.error({ opId: op.id, mint: op.mint_url }, 'lightning mint: the quote was issued to someone else');
      await markOpFailed(this.db.kysely, op.id, 'the quote was issued on other outputs', Date.now());
      return;
    }
    const keyset = await client.keys(journal.keysetId);
    const proofs = unblind(outputs, signatures! as BlindSignature[], keyset, op.mint_url);
    const now = Date.now();
    try {
      await writeTransaction(this.db, async (trx) => {
        if (!(await markOpDone(trx, op.id, null, now))) throw new Settled();
        await insertProofs(trx, proofRows(proofs, op, now));
        await this.credit(trx, op, now);
        await markInvoicePaid(trx, op.id, now);
      });
    } catch (error) {
      if (!(error instanceof Settled)) throw error;
    }
  }

  private async credit(trx: Executor, op: MintOp, now: number) {
    const from = { mintUrl: op.mint_url, unit: op.unit };
    const primary = this.wallet.primaryMint;
    if (op.credit_account_id !== null) {
      await creditAccount(trx, op.credit_account_id, op.credit_msat, from, primary, now);
    } else {
      await createFundedAccount(trx, op.credit_key_hash!, op.credit_key_prefix, op.credit_msat, from, primary, now);
    }
  }

  /** Claims an unfinished mint whose lease ran out, for the recovery. */
  async resume(op: MintOp): Promise<void> {
    await this.driveQuietly(op, false);
    const after = await mintOpById(this.db.kysely, op.id);
    if (after.state === 'pending') throw new Error(after.error ?? 'still pending');
  }
}

/** Unfinished Lightning operations whose lease ran out, for the recovery. */
export async function unfinishedLightningOps(db: Database, limit = 100): Promise<MintOp[]> {
  return unfinishedOps(db.kysely, Date.now(), limit, ['mint', 'melt']);
}

function invoiceNotFound(): HttpError {
  return new HttpError(404, 'Invoice not found', { code: 'invoice_not_found', detail: 'Invoice not found' });
}
