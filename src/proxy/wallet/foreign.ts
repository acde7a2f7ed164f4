// Tokens of mints the node does not trust (PROXY_FOREIGN_MINTS), swapped into the primary mint as
// Routstr's node does (`swap_to_trusted_mint`): a mint quote (NUT-04) at the primary mint for the
// token's value net of the foreign mint's input fee (NUT-02) and its melt fee reserve (NUT-05), a
// melt of the token's proofs at the foreign mint paying that quote's invoice, then minting at the
// primary mint on outputs of the node's. A melt refused as short of inputs (NUT error 11005, or
// nutshell's 11000 "not enough inputs") is quoted again for less, a few times.
//
// One operation of proxy_mint_ops (kind `foreign`, mint_url the primary mint) journals it all
// before the melt is sent: the token's proofs (claimed in proxy_op_inputs, as a redemption's),
// both quotes, and the blinded outputs. Resuming it asks the primary mint's quote first (PAID:
// mint on the journaled outputs; ISSUED: restore them, NUT-09), then the foreign melt quote and
// the proofs' states; the credit is written in the transaction that marks the operation done, so
// a crash, a lost answer or a mint down at any step loses nothing and credits once.
import { OutputData, type Proof, type SerializedOutputData } from '@cashu/cashu-ts';
import { invoiceAmountMsat, type BlindSignature, type BlindedMessage, type WireProof } from '../../cashu/index.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import {
  meltProofs,
  meltQuoteState,
  mintProofs,
  mintQuoteState,
  requestMeltQuote,
  requestMintQuote,
  unblind,
  type MeltQuote,
  type MintQuote,
} from './lightning-mint.js';
import {
  MintProtocolError,
  MintRejectedError,
  MintUnreachableError,
  type KeysetWithKeys,
  type MintClient,
} from './mint-client.js';
import { messageOf, proofRows, Settled, type MintJournal, type MintOp, type WalletLogger } from './mint-journal.js';
import { insertProofs, markOpDone, rejournalOp } from './store.js';
import { mintFailure, tokenError, type ParsedToken } from './tokens.js';

/** What a foreign swap's journal holds (JSON in proxy_mint_ops.request). */
export interface ForeignJournal {
  foreignMint: string;
  /** The token's proofs (at the foreign mint) and their Ys: the inputs of the melt. */
  inputs: WireProof[];
  ys: string[];
  /** The token's face value and the foreign mint's input fee on it, in sat. */
  amount: number;
  inputFee: number;
  /** What a refused melt showed the mint wants beyond its quote, in sat (the retries' margin). */
  extraFee: number;
  /** Melts refused as short of inputs so far (each one quoted again for less). */
  refusedMelts: number;
  /** The primary mint's quote: `minted` sat, paid by `bolt11`. */
  mintQuote: string;
  bolt11: string;
  minted: number;
  /** The foreign mint's melt quote for bolt11. */
  meltQuote: string;
  feeReserve: number;
  outputs: SerializedOutputData[];
  keysetId: string;
}

/** Most melts of one swap, and most quotes of one estimate (Routstr's node: 3 rounds). */
export const MAX_FOREIGN_ATTEMPTS = 3;

/** What the wallet journals for a foreign token (the operation row's own columns). */
export interface ForeignPlan {
  mintUrl: string;
  unit: 'sat';
  request: string;
  creditMsat: number;
}

export class ForeignSwaps {
  constructor(
    private db: Database,
    private journal: MintJournal,
    private primaryMint: string,
    private log: WalletLogger,
  ) {}

  private get primary(): MintClient {
    return this.journal.client(this.primaryMint);
  }

  /** Quotes the swap of a parsed foreign token (nothing is spent yet); its journal for the operation. */
  async plan(parsed: ParsedToken): Promise<ForeignPlan> {
    const quoted = await this.quote({
      foreignMint: parsed.mintUrl,
      inputs: parsed.proofs,
      ys: parsed.ys,
      amount: parsed.amount,
      inputFee: parsed.fee,
      extraFee: 0,
      refusedMelts: 0,
    });
    return {
      mintUrl: this.primaryMint,
      unit: 'sat',
      request: JSON.stringify(quoted),
      creditMsat: quoted.minted * 1000,
    };
  }

  /**
   * A mint quote for what the token can pay after the fees, and the foreign mint's melt quote for
   * its invoice; again for less while the melt quote's fee reserve does not fit.
   */
  private async quote(
    base: Omit<ForeignJournal, 'mintQuote' | 'bolt11' | 'minted' | 'meltQuote' | 'feeReserve' | 'outputs' | 'keysetId'>,
  ): Promise<ForeignJournal> {
    const foreign = this.journal.client(base.foreignMint);
    let reserve = 0;
    for (let round = 1; ; round++) {
      const minted = base.amount - base.inputFee - reserve - base.extraFee;
      if (minted <= 0) {
        throw tokenError(
          'cashu_token_swap_fees_exceed_amount',
          `The token is worth ${base.amount} sat; the swap from its mint would cost ${base.inputFee} sat of input ` +
            `fee, ${reserve} sat of Lightning fee reserve${base.extraFee ? ` and ${base.extraFee} sat more` : ''}: ` +
            'nothing would remain to credit',
        );
      }
      let mintQuote: MintQuote;
      let keyset: KeysetWithKeys;
      try {
        keyset = await this.primary.activeKeyset('sat');
        mintQuote = await requestMintQuote(this.primary, minted, 'sat');
        const asked = invoiceAmountMsat(mintQuote.request);
        if (mintQuote.amount !== minted || (asked !== null && asked !== undefined && asked !== minted * 1000)) {
          throw new MintProtocolError(this.primaryMint, 'the quote is not for the amount asked');
        }
      } catch (error) {
        throw mintFailure(error, this.primaryMint);
      }
      let meltQuote: MeltQuote;
      try {
        meltQuote = await requestMeltQuote(foreign, mintQuote.request, 'sat');
      } catch (error) {
        throw foreignFailure(error, base.foreignMint);
      }
      const needed = meltQuote.amount + meltQuote.feeReserve + base.inputFee + base.extraFee;
      if (needed > base.amount && round < MAX_FOREIGN_ATTEMPTS) {
        reserve = Math.max(reserve + 1, meltQuote.feeReserve + meltQuote.amount - minted);
        continue;
      }
      if (needed > base.amount) {
        throw tokenError(
          'cashu_token_swap_fees_exceed_amount',
          `The token is worth ${base.amount} sat; its mint asks ${meltQuote.amount} + ${meltQuote.feeReserve} sat ` +
            `(fee reserve) + ${base.inputFee} sat (input fee) to pay the swap's invoice`,
        );
      }
      const outputs = OutputData.createRandomData(minted, { id: keyset.id, keys: keyset.keys });
      return {
        ...base,
        mintQuote: mintQuote.quote,
        bolt11: mintQuote.request,
        minted,
        meltQuote: meltQuote.quote,
        feeReserve: meltQuote.feeReserve,
        outputs: outputs.map((o) => OutputData.serialize(o)),
        keysetId: keyset.id,
      };
    }
  }

  /**
   * Takes a journaled foreign swap as far as the mints allow: done (returned), failed (thrown as
   * the caller's error) or still pending (503; the recovery finishes it). `fresh`: never sent.
   */
  async drive(op: MintOp, fresh: boolean, resend = true): Promise<MintOp> {
    const journal = parseForeign(op);
    if (!fresh) {
      // Where did it get to? The primary mint's quote tells whether the melt paid it.
      let quote: MintQuote;
      try {
        quote = await mintQuoteState(this.primary, journal.mintQuote);
      } catch (error) {
        throw await this.journal.stillPending(op, error);
      }
      if (quote.state !== 'UNPAID') return this.mint(op, journal, quote.state);
      if (op.maybe_swapped === 1) {
        const foreign = this.journal.client(journal.foreignMint);
        let states;
        try {
          const melt = await meltQuoteState(foreign, journal.meltQuote);
          // Paid at the foreign mint, not yet seen by the primary one: Lightning is on its way.
          if (melt.state !== 'UNPAID') throw new Error(`the foreign melt is ${melt.state}`);
          states = await foreign.checkState(journal.ys);
        } catch (error) {
          throw await this.journal.stillPending(op, error);
        }
        if (states.some((s) => s === 'PENDING')) {
          throw await this.journal.stillPending(op, new Error('the foreign mint reports the inputs PENDING'));
        }
        // The melt was not paid, yet the proofs are gone: someone else spent them.
        if (states.some((s) => s === 'SPENT')) return this.journal.spentElsewhere(op);
        // Not performed: sent again (same quote), unless the one that just went unanswered is in flight.
        if (!resend) throw await this.journal.stillPending(op, new Error('the foreign melt went unanswered'));
      }
    }
    return this.melt(op, journal);
  }

  /** Sends the melt (again: same quote, same proofs, so it pays at most once), then mints. */
  private async melt(op: MintOp, journal: ForeignJournal): Promise<MintOp> {
    for (;;) {
      // Written first: a crash while the melt is on its way must not read as "never sent".
      if (op.maybe_swapped !== 1) op = await this.journal.setMaybeSwapped(op);
      const foreign = this.journal.client(journal.foreignMint);
      let paid: MeltQuote;
      try {
        paid = await meltProofs(foreign, journal.meltQuote, journal.inputs, []);
      } catch (error) {
        if (error instanceof MintUnreachableError && !error.maybeDelivered) {
          // The request never left: the token is untouched.
          await this.journal.fail(op, error.message, { releaseInputs: true });
          throw mintFailure(error, journal.foreignMint);
        }
        const shortfall = error instanceof MintRejectedError ? meltShortfall(error) : null;
        if (shortfall !== null && journal.refusedMelts + 1 < MAX_FOREIGN_ATTEMPTS) {
          this.log.warn(
            { opId: op.id, mint: journal.foreignMint, shortfall, refused: journal.refusedMelts + 1 },
            'foreign melt refused as short of inputs: quoting again for less',
          );
          const next = await this.requote(op, journal, shortfall);
          // Another driver (this one's lease ran out) journaled it anew: it is that one's now.
          if (!next) return this.journal.settledOp(op.id);
          ({ op, journal } = next);
          continue;
        }
        if (error instanceof MintRejectedError && error.status < 500) return this.afterRefusal(op, journal, error);
        // A timeout, a lost answer or a server error: the melt may have paid. Ask the mints.
        return this.drive(op, false, false);
      }
      if (paid.state === 'PAID') return this.mint(op, journal, null);
      if (paid.state === 'PENDING') {
        throw await this.journal.stillPending(op, new Error('the foreign melt is PENDING'));
      }
      return this.afterRefusal(op, journal, new Error('the foreign mint answered the melt UNPAID'));
    }
  }

  /** A definite refusal of the melt: the swap fails and the token is let go, unless the quote is paid after all. */
  private async afterRefusal(op: MintOp, journal: ForeignJournal, error: unknown): Promise<MintOp> {
    let states;
    try {
      const quote = await mintQuoteState(this.primary, journal.mintQuote);
      // An earlier melt of ours paid it (this refusal is "already paid").
      if (quote.state !== 'UNPAID') return this.mint(op, journal, quote.state);
      states = await this.journal.client(journal.foreignMint).checkState(journal.ys);
    } catch (checkError) {
      throw await this.journal.stillPending(op, checkError);
    }
    if (!states.every((s) => s === 'UNSPENT')) throw await this.journal.stillPending(op, error);
    await this.journal.fail(op, `foreign melt refused: ${messageOf(error)}`, { releaseInputs: true });
    const detail = error instanceof MintRejectedError ? error.detail : messageOf(error);
    throw tokenError(
      'cashu_foreign_mint_swap_failed',
      `The swap of this token from ${journal.foreignMint} into ${this.primaryMint} failed: its mint refused to ` +
        `melt it (${detail.slice(0, 200)}). The token was not used`,
    );
  }

  /** New quotes for less after a melt refused as short, journaled before the next melt is sent. */
  private async requote(op: MintOp, journal: ForeignJournal, shortfall: number) {
    let next: ForeignJournal;
    try {
      next = await this.quote({
        ...journal,
        extraFee: journal.extraFee + shortfall,
        refusedMelts: journal.refusedMelts + 1,
      });
    } catch (error) {
      await this.journal.fail(op, `quoting the foreign swap again failed: ${messageOf(error)}`, {
        releaseInputs: true,
      });
      throw error;
    }
    const now = Date.now();
    const values = {
      request: JSON.stringify(next),
      credit_msat: next.minted * 1000,
      lease_until: now + this.journal.leaseMs,
      updated_at: now,
    };
    // Only in place of the journal this driver read: a second driver (a lease run out) must not lose one.
    if (!(await rejournalOp(this.db.kysely, op.id, op.request!, values))) return null;
    return { op: { ...op, ...values }, journal: next };
  }

  /**
   * The melt paid the primary mint's quote: mint on the journaled outputs (or restore them when an
   * earlier mint was performed), then credit, once. `state`: the quote's, when already known.
   */
  private async mint(op: MintOp, journal: ForeignJournal, state: 'PAID' | 'ISSUED' | null): Promise<MintOp> {
    const client = this.primary;
    const outputs = journal.outputs.map((o) => OutputData.deserialize(o));
    const blinded: BlindedMessage[] = outputs.map((o) => ({
      amount: Number(o.blindedMessage.amount.toString()),
      id: o.blindedMessage.id,
      B_: o.blindedMessage.B_,
    }));
    let signatures: (BlindSignature | null)[];
    try {
      if (state !== 'ISSUED') {
        try {
          signatures = await mintProofs(client, journal.mintQuote, blinded);
        } catch (error) {
          // Refused or unanswered: "already issued" (an earlier mint of ours was performed) is the quote's word.
          if (error instanceof MintRejectedError && error.status >= 500) throw error;
          const quote = await mintQuoteState(client, journal.mintQuote);
          if (quote.state !== 'ISSUED') throw error;
          state = 'ISSUED';
        }
      }
      if (state === 'ISSUED') signatures = await client.restore(blinded);
    } catch (error) {
      throw await this.journal.stillPending(op, error);
    }
    if (signatures!.some((s) => s === null)) {
      // The quote was issued, but not on our outputs: only a leaked quote id allows that.
      this.log.error({ opId: op.id, mint: op.mint_url }, 'foreign swap: the quote was issued on other outputs');
      throw await this.journal.stillPending(
        op,
        new MintProtocolError(op.mint_url, 'the quote was issued on other outputs'),
      );
    }
    let keyset: KeysetWithKeys;
    try {
      keyset = await client.keys(journal.keysetId);
    } catch (error) {
      throw await this.journal.stillPending(op, error);
    }
    let proofs: Proof[];
    try {
      proofs = unblind(outputs, signatures! as BlindSignature[], keyset, op.mint_url);
    } catch (error) {
      // The foreign proofs are gone and the primary mint's signatures are bad: the operator's case.
      this.log.error({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'foreign swap: invalid signatures');
      throw await this.journal.stillPending(op, error);
    }
    const now = Date.now();
    try {
      await writeTransaction(this.db, async (trx) => {
        if (!(await markOpDone(trx, op.id, null, now))) throw new Settled();
        await insertProofs(trx, proofRows(proofs, op, now));
        await this.journal.applyCredit(trx, op, now);
      });
    } catch (error) {
      if (!(error instanceof Settled)) throw error;
    }
    return this.journal.settledOp(op.id);
  }
}

export function parseForeign(op: MintOp): ForeignJournal {
  if (!op.request) throw new Error(`mint operation ${op.id} has no journal`);
  return JSON.parse(op.request) as ForeignJournal;
}

/** A foreign mint's failure before anything was spent: unreachable is 503, a refusal the foreign-swap 400. */
function foreignFailure(error: unknown, mintUrl: string): HttpError {
  if (error instanceof MintRejectedError && error.status < 500) {
    return tokenError(
      'cashu_foreign_mint_swap_failed',
      `The mint ${mintUrl} refused to quote the swap of this token (${error.detail.slice(0, 200)}); it was not used`,
    );
  }
  return mintFailure(error, mintUrl);
}

const SHORTFALL = /Provided: (\d+), needed: (\d+)/;

/**
 * A melt refused as short of inputs: the sats the mint wanted beyond them (1 when it does not say);
 * null for any other refusal, which a smaller invoice would not cure. 11005 is NUT-00's "transaction
 * unbalanced"; nutshell's generic 11000 counts only with its "not enough inputs" words (as Routstr's node reads them).
 */
export function meltShortfall(error: MintRejectedError): number | null {
  const words = /not enough inputs/i.test(error.detail);
  if (!(error.code === 11005 || (error.code === 11000 && words) || (error.code === null && words))) return null;
  const amounts = SHORTFALL.exec(error.detail);
  if (amounts && Number(amounts[2]) > Number(amounts[1])) return Number(amounts[2]) - Number(amounts[1]);
  return 1;
}
