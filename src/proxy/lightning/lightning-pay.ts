// Lightning out: a refund to a Lightning address, or the operator's withdrawal of earnings, paid
// by melting the node's proofs at the mint (NUT-05, NUT-08 change). The debit, the reservation of
// the proofs and the journal (proxy_mint_ops, kind `melt`) are one transaction; a melt the mint
// refuses or that fails gives everything back; one whose outcome is unknown (a timeout, a crash,
// a payment still in flight) stays pending with the balance held until the mint's quote says PAID
// (done, the unused fee reserve given back) or UNPAID with the inputs unspent (failed, given
// back). See docs/proxy-wallet.md#lightning.
import { OutputData, type Proof, type SerializedOutputData } from '@cashu/cashu-ts';
import { inputFee, msatToUnit, unitToMsat, type BlindSignature, type WireProof } from '../../cashu/index.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { lightningMintError } from './lightning.js';
import { meltProofs, meltQuoteState, requestMeltQuote, unblind, type MeltQuote } from '../wallet/lightning-mint.js';
import { parseLightningAddress, type Lnurl } from './lnurl.js';
import {
  MintRejectedError,
  MintUnreachableError,
  type KeysetInfo,
  type KeysetWithKeys,
  type MintClient,
} from '../wallet/mint-client.js';
import {
  CHANGE_POLL_MS,
  CHANGE_WAIT_MS,
  ChangeInFlight,
  MAX_INPUTS,
  messageOf,
  proofRows,
  Settled,
  type MintOp,
  type WalletLogger,
} from '../wallet/mint-journal.js';
import {
  accountById,
  changeMayComeBack,
  debitAvailable,
  insertMintOp,
  insertProofs,
  leaveOpPending,
  markOpDone,
  markOpFailed,
  markOpInputsSpent,
  releaseReservedProofs,
  reserveProofs,
  restoreDebit,
  unspentProofs,
  type Executor,
} from '../wallet/store.js';
import {
  accountTotals,
  finishLightningPayment,
  insertLightningPayment,
  insertWithdrawal,
  journalClaimedMelt,
  lightningPaymentByOp,
  lockNode,
  reduceOpDebit,
  settleLightningWithdrawal,
  withdrawnMsat,
  type LightningPayment,
} from './store.js';
import { scheduleExpiryRefund } from '../keys/store.js';
import type { NodeWallet } from '../wallet/wallet.js';

/** What a melt's journal holds (proxy_mint_ops.request). Amounts in the operation's unit. */
interface MeltJournal {
  quote: string;
  inputs: WireProof[];
  ys: string[];
  /** Blank outputs (NUT-08) for the unused fee reserve and the inputs' excess. */
  outputs: SerializedOutputData[];
  keysetId: string;
  /** The invoice's amount. */
  amount: number;
  feeReserve: number;
  inputFee: number;
}

export interface PaymentAnswer {
  refund_id: number;
  status: 'pending' | 'paid' | 'failed';
  recipient: string;
  /** What the invoice pays the recipient. */
  msats: number;
  /** Held for Lightning fees; what the payment did not use goes back. */
  fee_reserve_msats: number;
  fee_paid_msats: number | null;
}

/** Who pays: an account whose balance a refund claimed, or the node's earnings (a withdrawal). */
type Payer = { claim: MintOp } | { withdrawnBy: string };

/** Invoice requests and quotes tried while the fee reserve settles (each is one LNURL call). */
const FEE_ATTEMPTS = 3;

class Conflict extends Error {}
/** The inputs' fee turned out larger than guessed: the invoice must be smaller. */
class FeeTooLow extends Error {
  constructor(readonly fee: number) {
    super('input fee above the guess');
  }
}

export class LightningPayments {
  constructor(
    private db: Database,
    private wallet: NodeWallet,
    private lnurl: Lnurl,
    private leaseMs: number,
    private log: WalletLogger,
  ) {}

  /**
   * Refunds the account's available balance (whole units of its mint) to a Lightning address:
   * an invoice for the balance less the mint's fee reserve and input fee. The balance is claimed
   * first, in one transaction (a preparing melt holding the debit), so that two refunds of one
   * account (the route and the expiry job, or two processes) pay once; anything that stops the
   * payment before the melt is sent gives the claim back, and so does the recovery after a crash.
   */
  async refund(accountId: number, address: string): Promise<PaymentAnswer> {
    parseLightningAddress(address); // a malformed address is refused before anything is claimed
    const claim = await this.claimBalance(accountId);
    let op: MintOp;
    try {
      op = await this.prepareRefund(claim, address);
    } catch (error) {
      await this.fail(claim, `not sent: ${messageOf(error)}`);
      throw error;
    }
    return this.drive(op, true);
  }

  /** Debits the available balance in whole units and journals the claim (a preparing melt). */
  private async claimBalance(accountId: number): Promise<MintOp> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = Date.now();
      // Reads the balance, then debits it: SQLite's write lock from the start (writeTransaction).
      const claim = await writeTransaction(this.db, async (trx) => {
        const account = await accountById(trx, accountId);
        if (!account) throw new HttpError(401, 'Unknown account', { code: 'invalid_api_key' });
        const units = msatToUnit(account.balanceMsat - account.reservedMsat, account.unit);
        if (units <= 0) {
          throw new HttpError(400, 'Nothing to refund: the available balance is less than one unit of the mint', {
            code: 'no_balance_to_refund',
            detail: 'No balance to refund',
          });
        }
        const debit = unitToMsat(units, account.unit);
        if (!(await debitAvailable(trx, accountId, debit, now))) throw new Conflict();
        return insertMintOp(trx, {
          kind: 'melt',
          purpose: 'refund',
          state: 'preparing',
          mint_url: account.mintUrl,
          unit: account.unit,
          token_hash: null,
          request: null,
          credit_account_id: null,
          credit_key_hash: null,
          credit_key_prefix: null,
          debit_account_id: accountId,
          debit_msat: debit,
          result: null,
          error: null,
          // Long enough for the LNURL calls and quotes before the melt is journaled.
          lease_until: now + this.leaseMs + (1 + 2 * FEE_ATTEMPTS) * this.lnurl.timeoutMs,
          created_at: now,
          updated_at: now,
        });
      }).catch((error) => {
        if (error instanceof Conflict) return null; // the balance moved under us: read it again
        throw error;
      });
      if (claim) return claim;
    }
    throw new HttpError(409, 'The balance is changing right now; try the refund again', { code: 'balance_changing' });
  }

  /** The invoice from the address and the melt quote for the claimed balance, journaled on the claim. */
  private async prepareRefund(claim: MintOp, address: string): Promise<MintOp> {
    const units = msatToUnit(claim.debit_msat, claim.unit);
    const pay = await this.lnurl.resolve(address);
    const client = this.wallet.client(claim.mint_url);
    let reserve = Math.max(1, Math.ceil(units / 100));
    let fee = 0;
    for (let attempt = 0; attempt < FEE_ATTEMPTS; attempt++) {
      const amount = units - reserve - fee;
      if (amount <= 0) break;
      const bolt11 = await this.lnurl.invoice(pay, unitToMsat(amount, claim.unit));
      const quote = await this.meltQuote(client, bolt11, claim.unit, amount);
      if (amount + quote.feeReserve + fee > units) {
        reserve = quote.feeReserve;
        continue;
      }
      try {
        return await this.start(client, claim.unit, quote, { claim }, pay.address, bolt11, units);
      } catch (error) {
        if (!(error instanceof FeeTooLow)) throw error;
        fee = error.fee;
      }
    }
    throw new HttpError(400, "The balance does not cover the mint's Lightning fee reserve and input fee", {
      code: 'balance_too_small_to_refund',
      detail: 'Balance too small to refund',
    });
  }

  /**
   * Pays the node's earnings out to a bolt11 invoice or a Lightning address: `amountSats` reach the
   * operator; the fee reserve and the input fee come from the earnings too.
   */
  async withdraw(target: string, amountSats: number | null, by: string): Promise<PaymentAnswer> {
    const mintUrl = this.wallet.primaryMint;
    const client = this.wallet.client(mintUrl);
    let bolt11 = target.trim();
    let recipient = 'bolt11 invoice';
    if (bolt11.includes('@')) {
      if (amountSats === null || !Number.isSafeInteger(amountSats) || amountSats <= 0) {
        throw new HttpError(400, 'Paying a Lightning address needs a positive whole number of sats');
      }
      const pay = await this.lnurl.resolve(bolt11);
      recipient = pay.address;
      bolt11 = await this.lnurl.invoice(pay, amountSats * 1000);
    }
    const quote = await this.meltQuote(client, bolt11, 'sat', null);
    const op = await this.start(client, 'sat', quote, { withdrawnBy: by }, recipient, bolt11, null);
    return this.drive(op, true);
  }

  private async meltQuote(client: MintClient, bolt11: string, unit: string, amount: number | null) {
    let quote: MeltQuote;
    try {
      quote = await requestMeltQuote(client, bolt11, unit);
    } catch (error) {
      if (error instanceof MintRejectedError && error.status < 500) {
        throw new HttpError(400, `The mint will not pay this invoice: ${error.detail}`, {
          code: 'invoice_refused',
          type: 'mint_error',
        });
      }
      throw lightningMintError(error, client.url, 'the Lightning payment');
    }
    if (amount !== null && quote.amount !== amount) {
      throw new HttpError(502, `The mint ${client.url} quoted another amount than the invoice's`, {
        code: 'mint_error',
        type: 'mint_error',
      });
    }
    return quote;
  }

  /**
   * One transaction: the debit (an account's available balance, or the node's earnings under its
   * lock), the node's proofs reserved as inputs, the journal, and the payment's row.
   */
  private async start(
    client: MintClient,
    unit: string,
    quote: MeltQuote,
    payer: Payer,
    recipient: string,
    bolt11: string,
    availableUnits: number | null,
  ): Promise<MintOp> {
    let keysets: KeysetInfo[];
    let keysetId: string;
    try {
      keysets = await client.keysets();
      keysetId = (await client.activeKeyset(unit)).id;
    } catch (error) {
      throw lightningMintError(error, client.url, 'the Lightning payment');
    }
    const need = quote.amount + quote.feeReserve;
    const s = { client, unit, quote, payer, recipient, bolt11, availableUnits, keysets, keysetId, need };
    const waitUntil = Date.now() + CHANGE_WAIT_MS;
    for (let conflicts = 0; conflicts < 5;) {
      const mayWait = Date.now() < waitUntil;
      try {
        return await writeTransaction(this.db, (trx) => this.startIn(trx, { ...s, mayWait }));
      } catch (error) {
        if (error instanceof Conflict) conflicts++;
        else if (error instanceof ChangeInFlight) await new Promise((resolve) => setTimeout(resolve, CHANGE_POLL_MS));
        else throw error;
      }
    }
    throw new HttpError(409, 'The balance or the node wallet is changing right now; try again', {
      code: 'balance_changing',
    });
  }

  private async startIn(
    trx: Executor,
    s: {
      client: MintClient;
      unit: string;
      quote: MeltQuote;
      payer: Payer;
      recipient: string;
      bolt11: string;
      availableUnits: number | null;
      keysets: KeysetInfo[];
      keysetId: string;
      need: number;
      /** Too little unspent: wait for change on its way back (ChangeInFlight) rather than refuse. */
      mayWait: boolean;
    },
  ): Promise<MintOp> {
    const mintUrl = s.client.url;
    const pool = await unspentProofs(trx, mintUrl, s.unit, MAX_INPUTS);
    const picked: typeof pool = [];
    let sum = 0;
    let fee = 0;
    for (const proof of pool) {
      if (sum >= s.need + fee) break;
      picked.push(proof);
      sum += proof.amount;
      fee = inputFee(
        picked.map((p) => p.keyset_id),
        s.keysets,
      );
    }
    if (sum < s.need + fee) {
      // Another operation's inputs may hold what this payment needs until its change comes back.
      if (s.mayWait && (await changeMayComeBack(trx, mintUrl, s.unit, pool, MAX_INPUTS))) throw new ChangeInFlight();
      throw new HttpError(503, `The node holds too little at ${mintUrl} to pay this now; nothing was taken`, {
        code: 'insufficient_node_funds',
        type: 'api_error',
        headers: { 'retry-after': '5' },
      });
    }
    const debit = s.need + fee;
    if (s.availableUnits !== null && debit > s.availableUnits) throw new FeeTooLow(fee);
    const now = Date.now();
    // Enough blank outputs for any change up to the inputs' excess (NUT-08: ceil(log2) of it).
    const excess = sum - fee - s.quote.amount;
    const blanks = Array.from({ length: Math.max(1, excess.toString(2).length) }, () =>
      OutputData.createSingleRandomData(1, s.keysetId),
    );
    const journal: MeltJournal = {
      quote: s.quote.quote,
      inputs: picked.map((p) => ({ id: p.keyset_id, amount: p.amount, secret: p.secret, C: p.c })),
      ys: picked.map((p) => p.y),
      outputs: blanks.map((o) => OutputData.serialize(o)),
      keysetId: s.keysetId,
      amount: s.quote.amount,
      feeReserve: s.quote.feeReserve,
      inputFee: fee,
    };
    const debitMsat = unitToMsat(debit, s.unit);
    const claim = Object.hasOwn(s.payer, 'claim') ? (s.payer as { claim: MintOp }).claim : null;
    let op: MintOp;
    let withdrawalId: number | null = null;
    if (claim) {
      const journaled = await journalClaimedMelt(trx, claim.id, {
        request: JSON.stringify(journal),
        debit_msat: debitMsat,
        lease_until: now + this.leaseMs,
        updated_at: now,
      });
      if (!journaled) {
        throw new HttpError(
          503,
          'The refund was interrupted before it reached the mint; nothing was taken, try again',
          {
            code: 'operation_interrupted',
            type: 'api_error',
          },
        );
      }
      // The claim's excess over the invoice, the fee reserve and the input fee goes back at once.
      if (claim.debit_msat > debitMsat) await restoreDebit(trx, claim.debit_account_id!, claim.debit_msat - debitMsat);
      op = journaled;
    } else {
      await lockNode(trx);
      const { earned } = await accountTotals(trx);
      const available = earned - (await withdrawnMsat(trx));
      if (debitMsat > available) {
        throw new HttpError(
          400,
          `The node's earnings are ${available} msat; the payment needs ${debitMsat} msat ` +
            '(the invoice, the fee reserve and the input fee)',
        );
      }
      withdrawalId = await insertWithdrawal(trx, {
        amount_msat: debitMsat,
        mint_url: mintUrl,
        status: 'pending',
        token: null,
        error: null,
        created_by: (s.payer as { withdrawnBy: string }).withdrawnBy,
        created_at: now,
        updated_at: now,
      });
      op = await insertMintOp(trx, {
        kind: 'melt',
        purpose: 'withdraw',
        state: 'pending',
        mint_url: mintUrl,
        unit: s.unit,
        token_hash: null,
        request: JSON.stringify(journal),
        credit_account_id: null,
        credit_key_hash: null,
        credit_key_prefix: null,
        debit_account_id: null,
        debit_msat: 0,
        result: null,
        error: null,
        lease_until: now + this.leaseMs,
        created_at: now,
        updated_at: now,
      });
    }
    const accountId = claim?.debit_account_id ?? null;
    const ids = picked.map((p) => p.id);
    if ((await reserveProofs(trx, ids, op.id)) !== ids.length) throw new Conflict();
    await insertLightningPayment(trx, {
      purpose: accountId === null ? 'withdraw' : 'refund',
      account_id: accountId,
      withdrawal_id: withdrawalId,
      recipient: s.recipient,
      bolt11: s.bolt11,
      amount_msat: unitToMsat(s.quote.amount, s.unit),
      fee_reserve_msat: unitToMsat(s.quote.feeReserve, s.unit),
      fee_paid_msat: null,
      op_id: op.id,
      status: 'pending',
      preimage: null,
      error: null,
      created_at: now,
      updated_at: now,
    });
    return op;
  }

  /**
   * Takes a melt as far as the mint allows. `fresh`: never sent, so it is sent; otherwise the
   * quote's state decides (PAID: done; UNPAID with the inputs unspent: failed; else pending).
   */
  async drive(op: MintOp, fresh: boolean): Promise<PaymentAnswer> {
    const journal = JSON.parse(op.request!) as MeltJournal;
    const client = this.wallet.client(op.mint_url);
    const blanks = journal.outputs.map((o) => OutputData.deserialize(o));
    const blinded = blanks.map((o) => ({ amount: 1, id: o.blindedMessage.id, B_: o.blindedMessage.B_ }));
    let quote: MeltQuote;
    try {
      quote = fresh
        ? await meltProofs(client, journal.quote, journal.inputs, blinded)
        : await meltQuoteState(client, journal.quote);
    } catch (error) {
      const neverArrived = error instanceof MintUnreachableError && !error.maybeDelivered;
      // A refusal of a melt this node sent once: the payment failed and the mint let go of the inputs.
      const refused = fresh && error instanceof MintRejectedError && error.status < 500;
      if (fresh && (neverArrived || refused)) {
        await this.fail(op, messageOf(error));
        throw new HttpError(
          502,
          `The Lightning payment failed; nothing was taken from your balance: ${messageOf(error)}`,
          {
            code: 'lightning_payment_failed',
            type: 'mint_error',
          },
        );
      }
      return this.leavePending(op, error);
    }
    if (quote.state === 'PAID') return this.complete(op, journal, blanks, blinded, quote);
    if (quote.state === 'UNPAID' && !fresh) {
      let states;
      try {
        states = await client.checkState(journal.ys);
      } catch (error) {
        return this.leavePending(op, error);
      }
      if (states.every((s) => s === 'UNSPENT')) {
        await this.fail(op, 'the mint did not pay the invoice');
        return this.answer(op.id);
      }
    }
    return this.leavePending(op, new Error(`the melt quote is ${quote.state}`));
  }

  private async leavePending(op: MintOp, error: unknown): Promise<PaymentAnswer> {
    this.log.warn({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'lightning payment left pending');
    await leaveOpPending(this.db.kysely, op.id, messageOf(error).slice(0, 500), op.maybe_swapped, Date.now());
    return this.answer(op.id);
  }

  private async complete(
    op: MintOp,
    journal: MeltJournal,
    blanks: OutputData[],
    blinded: { amount: number; id: string; B_: string }[],
    quote: MeltQuote,
  ): Promise<PaymentAnswer> {
    const client = this.wallet.client(op.mint_url);
    let change: BlindSignature[] = quote.change;
    let changeOutputs = blanks.slice(0, change.length);
    let keyset: KeysetWithKeys;
    try {
      keyset = await client.keys(journal.keysetId);
      if (change.length === 0) {
        // The answer that carried the change was lost: the mint gives the signatures again (NUT-09).
        const restored = await client.restore(blinded).catch((error): (BlindSignature | null)[] => {
          // A mint without NUT-09 (a refusal): the change, if any, stays with it.
          if (error instanceof MintRejectedError && error.status < 500) return blinded.map(() => null);
          throw error;
        });
        changeOutputs = blanks.filter((_, i) => restored[i] !== null);
        change = restored.filter((s): s is BlindSignature => s !== null);
      }
    } catch (error) {
      // Paid, but the change cannot be fetched now: finished later, nothing given up.
      return this.leavePending(op, error);
    }
    let proofs: Proof[];
    try {
      proofs = unblind(changeOutputs, change, keyset, op.mint_url, { blank: true });
    } catch (error) {
      // The payment is made; change that cannot be read stays with the mint (the operator's loss).
      this.log.error({ opId: op.id, err: messageOf(error) }, 'lightning payment: invalid change signatures');
      proofs = [];
    }
    const inputs = journal.inputs.reduce((sum, p) => sum + p.amount, 0);
    const changeSum = proofs.reduce((sum, p) => sum + Number(p.amount.toString()), 0);
    const debit = journal.amount + journal.feeReserve + journal.inputFee;
    // The inputs' excess over the debit is the node's; the rest of the change is unused fee reserve.
    const unused = Math.max(0, Math.min(journal.feeReserve, changeSum - (inputs - debit)));
    const feePaid = inputs - journal.inputFee - journal.amount - changeSum;
    const now = Date.now();
    try {
      await writeTransaction(this.db, async (trx) => {
        if (!(await markOpDone(trx, op.id, quote.preimage, now))) throw new Settled();
        await insertProofs(trx, proofRows(proofs, op, now));
        await markOpInputsSpent(trx, op.id);
        if (op.debit_account_id !== null && unused > 0) {
          await restoreDebit(trx, op.debit_account_id, unitToMsat(unused, op.unit));
          await reduceOpDebit(trx, op.id, unitToMsat(unused, op.unit));
        }
        await finishLightningPayment(
          trx,
          op.id,
          { status: 'paid', preimage: quote.preimage, fee_paid_msat: unitToMsat(Math.max(0, feePaid), op.unit) },
          now,
        );
        const payment = await lightningPaymentByOp(trx, op.id);
        if (payment?.withdrawal_id != null) {
          await settleLightningWithdrawal(trx, payment.withdrawal_id, {
            status: 'issued',
            amountMsat: unitToMsat(debit - unused, op.unit),
          });
        }
      });
    } catch (error) {
      if (!(error instanceof Settled)) throw error;
    }
    return this.answer(op.id);
  }

  /** Ends a melt that did not pay: the debit and the proofs go back (exactly once). */
  private async fail(op: MintOp, reason: string): Promise<void> {
    const now = Date.now();
    await writeTransaction(this.db, async (trx) => {
      if (!(await markOpFailed(trx, op.id, reason.slice(0, 500), now))) return;
      if (op.debit_account_id !== null && op.debit_msat > 0) {
        await restoreDebit(trx, op.debit_account_id, op.debit_msat);
        // An expiring key whose refund had left the expiry job's schedule (paid, as it seemed) is due again.
        await scheduleExpiryRefund(trx, op.debit_account_id, now);
      }
      await releaseReservedProofs(trx, op.id, false);
      await finishLightningPayment(trx, op.id, { status: 'failed', error: reason.slice(0, 500) }, now);
      const payment = await lightningPaymentByOp(trx, op.id);
      if (payment?.withdrawal_id != null) {
        await settleLightningWithdrawal(trx, payment.withdrawal_id, { status: 'failed', error: reason.slice(0, 500) });
      }
    });
  }

  private async answer(opId: number): Promise<PaymentAnswer> {
    const payment = (await lightningPaymentByOp(this.db.kysely, opId)) as LightningPayment;
    return {
      refund_id: payment.id,
      status: payment.status,
      recipient: payment.recipient,
      msats: payment.amount_msat,
      fee_reserve_msats: payment.fee_reserve_msat,
      fee_paid_msats: payment.fee_paid_msat,
    };
  }

  /** For the recovery: a claimed melt, driven by its quote's state; throws while it stays pending. */
  async resume(op: MintOp): Promise<void> {
    // A claim whose melt was never journaled (a crash while asking for the invoice): given back.
    if (op.state === 'preparing') return this.fail(op, 'interrupted before it was sent');
    const answer = await this.drive(op, false);
    if (answer.status === 'pending') throw new Error('still pending');
  }
}
