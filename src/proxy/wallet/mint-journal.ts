// The journal of the wallet's mint operations, and their driving to an end. Every mint
// operation is a row of proxy_mint_ops, journaled BEFORE it is sent with its inputs and its
// blinded outputs (secrets and blinding factors), so that whatever happens (a crash, a lost
// answer, a timeout) the operation can be finished later: NUT-07 checkstate says whether the
// mint did the swap, NUT-09 restore gives back the signatures on the journaled outputs, and the
// credit or token is written in the same transaction that marks the operation done. The wallet
// (./wallet.ts) starts operations; this module ends them, and the recovery (./recovery.ts)
// resumes the unfinished ones. See docs/proxy-wallet.md.
import { Amount, OutputData, getEncodedToken, type Proof, type SerializedOutputData } from '@cashu/cashu-ts';
import { proofY, type BlindSignature, type BlindedMessage, type WireProof } from '../../cashu/index.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import {
  MintClient,
  MintProtocolError,
  MintRejectedError,
  MintUnreachableError,
  type KeysetWithKeys,
} from './mint-client.js';
import {
  claimOp,
  createFundedAccount,
  creditAccount,
  insertProofs,
  leaveOpPending,
  markMaybeSwapped,
  markOpDone,
  markOpFailed,
  markOpInputsSpent,
  mintOpById,
  releaseOpInputs,
  releaseReservedProofs,
  restoreDebit,
  unfinishedOps,
  type Executor,
  type MintOpRow,
} from './store.js';
import { mintFailure, tokenError } from './tokens.js';

export type MintOp = MintOpRow;

export interface WalletLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the journal of an operation holds (JSON in proxy_mint_ops.request). */
export interface Journal {
  inputs: WireProof[];
  /** Y of each input, for checkstate. */
  ys: string[];
  /** Ids of the node's proof rows spent as inputs (issue only). */
  inputRows?: number[];
  outputs: SerializedOutputData[];
  keysetId: string;
  /** Issue: the first sendCount outputs form the token handed out; the rest is change. */
  sendCount?: number;
  /** Issue: the inputs themselves were the token (no swap, no outputs; wallet.ts handOver). */
  direct?: boolean;
}

/** Someone else settled the operation first. */
export class Settled extends Error {}

/** Too little is unspent now, but change on its way back may cover it (store.ts changeMayComeBack). */
export class ChangeInFlight extends Error {}

/** Most inputs one swap or melt spends (largest proofs first, so this is rarely reached). */
export const MAX_INPUTS = 500;

/** Longest wait for change on its way back before a token or a payment is refused as uncoverable. */
export const CHANGE_WAIT_MS = 3000;
/** The pause between two looks at the pool while waiting for change. */
export const CHANGE_POLL_MS = 100;

export class MintJournal {
  /** How long a claimed operation is its claimer's alone. */
  readonly leaseMs: number;
  private clients = new Map<string, MintClient>();

  constructor(
    private db: Database,
    private mintTimeoutMs: number,
    /** The mint where refunds of mixed balances go. */
    private primaryMint: string,
    private log: WalletLogger,
  ) {
    // Long enough for every request one drive of an operation makes (swap, checkstate, keys, restore, swap).
    this.leaseMs = 6 * mintTimeoutMs;
  }

  /** The client of a mint (one per mint, kept). */
  client(mintUrl: string): MintClient {
    let client = this.clients.get(mintUrl);
    if (!client) {
      client = new MintClient(mintUrl, this.mintTimeoutMs);
      this.clients.set(mintUrl, client);
    }
    return client;
  }

  // ---------------------------------------------------------------------------------------
  // Driving an operation to its end (the first attempt and every resumption)

  /**
   * Takes a journaled operation as far as the mint allows: done (returned), failed (thrown as
   * the caller's error), or still pending (thrown as 503; the journal keeps everything).
   * `fresh`: the swap was never sent, so it is sent without asking the mint first.
   */
  async drive(op: MintOp, fresh: boolean): Promise<MintOp> {
    const journal = parseJournal(op);
    const client = this.client(op.mint_url);
    const outputs = journal.outputs.map((o) => OutputData.deserialize(o));
    const blinded = outputs.map(toBlinded);
    // Whether a swap sent before this one may have been performed (fresh: none was sent).
    const sentBefore = !fresh && op.maybe_swapped === 1;
    if (!fresh) {
      let states;
      try {
        states = await client.checkState(journal.ys);
      } catch (error) {
        throw await this.stillPending(op, error);
      }
      if (states.some((s) => s === 'PENDING')) {
        throw await this.stillPending(op, new Error('the mint reports the inputs PENDING'));
      }
      if (states.some((s) => s === 'SPENT')) return this.recoverSignatures(op, journal, outputs, blinded);
      // Nothing happened at the mint: send the same swap again (same outputs, so it is safe).
      // Written first: a crash while it is on its way must not read as "never sent".
      if (!sentBefore) op = await this.setMaybeSwapped(op);
    }
    let signatures: BlindSignature[];
    try {
      signatures = await client.swap(journal.inputs, blinded);
    } catch (error) {
      // The mint refused this swap, and no earlier one may have happened: none of ours was
      // performed, so "spent" can only mean spent by someone else (stillPending writes it down).
      if (error instanceof MintRejectedError && error.status < 500 && !sentBefore) op = { ...op, maybe_swapped: 0 };
      return this.afterSwapFailure(op, journal, outputs, blinded, error);
    }
    return this.complete(op, journal, outputs, signatures);
  }

  private async afterSwapFailure(
    op: MintOp,
    journal: Journal,
    outputs: OutputData[],
    blinded: BlindedMessage[],
    error: unknown,
  ): Promise<MintOp> {
    if (error instanceof MintUnreachableError && !error.maybeDelivered) {
      // The request never left: nothing happened at the mint.
      await this.fail(op, error.message, { releaseInputs: true });
      throw this.failureFor(op, error);
    }
    let states;
    try {
      states = await this.client(op.mint_url).checkState(journal.ys);
    } catch (checkError) {
      throw await this.stillPending(op, error);
    }
    if (states.every((s) => s === 'UNSPENT')) {
      if (error instanceof MintRejectedError && error.status < 500) {
        await this.fail(op, error.message, { releaseInputs: true });
        throw this.failureFor(op, error);
      }
      // A timeout or a server error with the inputs unspent: the swap may still be on its way
      // in the mint, so the operation stays pending and is resent later (same outputs).
      throw await this.stillPending(op, error);
    }
    if (states.some((s) => s === 'PENDING')) throw await this.stillPending(op, error);
    return this.recoverSignatures(op, journal, outputs, blinded);
  }

  /** The inputs are spent: get the signatures on our journaled outputs back (NUT-09). */
  private async recoverSignatures(
    op: MintOp,
    journal: Journal,
    outputs: OutputData[],
    blinded: BlindedMessage[],
  ): Promise<MintOp> {
    // The mint refused every swap we sent: someone else spent the inputs, whatever restore says.
    if (op.maybe_swapped === 0) return this.spentElsewhere(op);
    const client = this.client(op.mint_url);
    let restored: (BlindSignature | null)[];
    try {
      restored = await client.restore(blinded);
    } catch (error) {
      if (error instanceof MintRejectedError && error.status < 500) {
        // No NUT-09 at this mint: some mints answer a repeated identical swap with the same
        // signatures; if not, the operation stays pending for the operator (see the docs).
        let again: BlindSignature[];
        try {
          again = await client.swap(journal.inputs, blinded);
        } catch (swapError) {
          this.log.error(
            { opId: op.id, mint: op.mint_url, err: messageOf(swapError) },
            'mint operation needs attention: inputs spent, mint offers no restore',
          );
          throw await this.stillPending(op, error);
        }
        return this.complete(op, journal, outputs, again);
      }
      throw await this.stillPending(op, error);
    }
    if (restored.every((s) => s !== null)) return this.complete(op, journal, outputs, restored as BlindSignature[]);
    // The mint signed none of our outputs: the inputs were spent by someone else.
    if (restored.every((s) => s === null)) return this.spentElsewhere(op);
    throw await this.stillPending(
      op,
      new MintProtocolError(op.mint_url, 'restore returned only some of the signatures'),
    );
  }

  /** The inputs were spent, not by this operation: it ends failed (final). */
  async spentElsewhere(op: MintOp): Promise<never> {
    await this.fail(op, 'inputs spent elsewhere', { releaseInputs: false, inputsSpent: true });
    if (op.kind !== 'issue') throw tokenError('cashu_token_already_spent', 'This token has already been spent');
    const message = `The node's proofs at ${op.mint_url} were spent elsewhere; nothing was taken from your balance`;
    throw new HttpError(502, message, { code: 'mint_error', type: 'mint_error' });
  }

  /** Unblinds, checks, and settles the operation in one transaction (exactly once). */
  private async complete(
    op: MintOp,
    journal: Journal,
    outputs: OutputData[],
    signatures: BlindSignature[],
  ): Promise<MintOp> {
    let keyset: KeysetWithKeys;
    try {
      keyset = await this.client(op.mint_url).keys(journal.keysetId);
    } catch (error) {
      if (!(error instanceof MintProtocolError)) throw await this.stillPending(op, error);
      return this.mintLied(op, error);
    }
    let proofs: Proof[];
    try {
      proofs = outputs.map((output, i) => {
        const sig = signatures[i];
        if (sig.id !== output.blindedMessage.id || sig.amount !== Number(output.blindedMessage.amount.toString())) {
          throw new MintProtocolError(op.mint_url, 'a signature does not match its output');
        }
        return output.toProof(
          { id: sig.id, amount: Amount.from(sig.amount), C_: sig.C_, ...(sig.dleq ? { dleq: sig.dleq } : {}) },
          { id: keyset.id, keys: keyset.keys },
        );
      });
    } catch (error) {
      return this.mintLied(op, error);
    }
    const sendCount = op.kind === 'issue' ? (journal.sendCount ?? 0) : 0;
    const result =
      op.kind === 'issue'
        ? getEncodedToken({ mint: op.mint_url, unit: op.unit, proofs: proofs.slice(0, sendCount) })
        : null;
    const now = Date.now();
    try {
      await writeTransaction(this.db, async (trx) => {
        if (!(await markOpDone(trx, op.id, result, now))) throw new Settled();
        await insertProofs(trx, proofRows(proofs.slice(sendCount), op, now));
        if (op.kind === 'issue') {
          await markOpInputsSpent(trx, op.id);
        } else {
          await this.applyCredit(trx, op, now);
        }
      });
    } catch (error) {
      if (!(error instanceof Settled)) throw error;
    }
    return this.settledOp(op.id);
  }

  /** Credits a redemption's target (in the transaction that marks it done). */
  async applyCredit(trx: Executor, op: MintOp, now: number) {
    const from = { mintUrl: op.mint_url, unit: op.unit };
    if (op.credit_account_id !== null) {
      await creditAccount(trx, op.credit_account_id, op.credit_msat, from, this.primaryMint, now);
    } else if (op.credit_key_hash) {
      await createFundedAccount(
        trx,
        op.credit_key_hash,
        op.credit_key_prefix,
        op.credit_msat,
        from,
        this.primaryMint,
        now,
      );
    }
  }

  /** Reads an operation someone settled; done is returned, failed is thrown. */
  async settledOp(id: number): Promise<MintOp> {
    const op = await mintOpById(this.db.kysely, id);
    if (op.state === 'done') return op;
    if (op.state === 'failed') {
      throw op.kind !== 'issue'
        ? tokenError('cashu_token_already_spent', 'This token could not be redeemed: ' + (op.error ?? 'failed'))
        : new HttpError(502, `The token could not be issued: ${op.error ?? 'failed'}`, {
            code: 'mint_error',
            type: 'mint_error',
          });
    }
    throw new HttpError(503, 'The operation is still pending', { code: 'operation_pending', type: 'api_error' });
  }

  /** The swap happened but the mint's signatures are invalid: nothing is credited. */
  private async mintLied(op: MintOp, error: unknown): Promise<never> {
    this.log.error({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'mint returned invalid signatures');
    await this.fail(op, `mint returned invalid signatures: ${messageOf(error)}`, {
      releaseInputs: false,
      inputsSpent: true,
    });
    throw new HttpError(502, `The mint ${op.mint_url} returned invalid signatures; nothing was credited`, {
      code: 'mint_error',
      type: 'mint_error',
    });
  }

  // ---------------------------------------------------------------------------------------
  // State changes of operations

  /** Claims an unfinished operation whose lease ran out (no one is working on it). */
  async claim(id: number): Promise<MintOp | null> {
    const now = Date.now();
    return (await claimOp(this.db.kysely, id, now + this.leaseMs, now)) ?? null;
  }

  /** Records, before a swap (or a foreign melt) is sent, that it may be performed (see drive). */
  async setMaybeSwapped(op: MintOp): Promise<MintOp> {
    await markMaybeSwapped(this.db.kysely, op.id);
    return { ...op, maybe_swapped: 1 };
  }

  /** Leaves the operation pending for a later attempt; returns the caller's 503. */
  async stillPending(op: MintOp, error: unknown): Promise<HttpError> {
    const now = Date.now();
    this.log.warn({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'mint operation left pending');
    // maybe_swapped: a refusal just noted in memory (see drive) is written down with the rest.
    await leaveOpPending(this.db.kysely, op.id, messageOf(error).slice(0, 500), op.maybe_swapped, now);
    return op.kind !== 'issue'
      ? new HttpError(
          503,
          `The mint ${op.mint_url} did not confirm the redemption. Nothing is lost: send the same request ` +
            'again later to finish it (it will be credited once)',
          { code: 'redemption_pending', type: 'api_error' },
        )
      : new HttpError(
          503,
          `The mint ${op.mint_url} did not confirm the new token. Nothing is lost: call again later to fetch it`,
          { code: 'issue_pending', type: 'api_error' },
        );
  }

  /**
   * Ends an operation that did not (or cannot) complete. Redemptions let go of the token's
   * proofs when the token is untouched; issues give back the debit and the node's proofs.
   */
  async fail(op: MintOp, reason: string, how: { releaseInputs: boolean; inputsSpent?: boolean }): Promise<void> {
    const now = Date.now();
    await writeTransaction(this.db, async (trx) => {
      if (!(await markOpFailed(trx, op.id, reason.slice(0, 500), now))) return; // settled by someone else
      if (op.kind !== 'issue') {
        if (how.releaseInputs) await releaseOpInputs(trx, op.id);
        return;
      }
      if (op.debit_account_id !== null && op.debit_msat > 0) {
        await restoreDebit(trx, op.debit_account_id, op.debit_msat);
      }
      await releaseReservedProofs(trx, op.id, how.inputsSpent === true);
    });
  }

  /** A 'preparing' operation was never sent: end it and give back its debit. */
  async abandonPreparing(op: MintOp): Promise<never> {
    await this.fail(op, 'interrupted before it was sent', { releaseInputs: true });
    throw new HttpError(
      503,
      'The operation was interrupted before it reached the mint; nothing was taken ' +
        "(a refund's debit is given back), try again",
      { code: 'operation_interrupted', type: 'api_error' },
    );
  }

  failureFor(op: MintOp, error: unknown): HttpError {
    const failure = mintFailure(error, op.mint_url);
    if (op.kind === 'issue' && failure.status === 400) {
      return new HttpError(
        502,
        `The mint ${op.mint_url} refused to issue the token; nothing was taken from your balance`,
        { code: 'mint_refused', type: 'mint_error' },
      );
    }
    if (op.kind === 'issue' && failure.status === 503) {
      return new HttpError(
        503,
        `The mint ${op.mint_url} is unreachable; nothing was taken from your balance, try again later`,
        { code: 'cashu_mint_unreachable', type: 'mint_unreachable' },
      );
    }
    return failure;
  }

  /** Unfinished operations whose lease ran out, oldest first (for the recovery). */
  async unfinishedOps(limit = 100): Promise<MintOp[]> {
    return unfinishedOps(this.db.kysely, Date.now(), limit);
  }
}

function toBlinded(output: OutputData): BlindedMessage {
  return {
    amount: Number(output.blindedMessage.amount.toString()),
    id: output.blindedMessage.id,
    B_: output.blindedMessage.B_,
  };
}

export function parseJournal(op: MintOp): Journal {
  if (!op.request) throw new Error(`mint operation ${op.id} has no journal`);
  return JSON.parse(op.request) as Journal;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The node's new proofs from an operation, as rows of proxy_proofs. */
export function proofRows(proofs: Proof[], op: MintOp, now: number) {
  return proofs.map((p) => ({
    mint_url: op.mint_url,
    unit: op.unit,
    keyset_id: p.id,
    amount: Number(p.amount.toString()),
    secret: p.secret,
    c: p.C,
    y: proofY(p.secret),
    dleq: p.dleq ? JSON.stringify(p.dleq) : null,
    state: 'unspent' as const,
    source_op_id: op.id,
    spend_op_id: null,
    created_at: now,
  }));
}
