// The node's Cashu wallet. It redeems tokens (a NUT-03 swap at the token's mint, so the sender
// cannot spend them again) and issues tokens (a swap of proofs the node holds). Proofs are rows
// of proxy_proofs; every mint operation is a row of proxy_mint_ops, journaled BEFORE it is sent
// with its inputs and its blinded outputs (secrets and blinding factors), so that whatever
// happens (a crash, a lost answer, a timeout) the operation can be finished later: NUT-07
// checkstate says whether the mint did the swap, NUT-09 restore gives back the signatures on
// the journaled outputs, and the credit or token is written in the same transaction that marks
// the operation done. See docs/proxy-wallet.md.
import { Amount, OutputData, getEncodedToken, type Proof, type SerializedOutputData } from '@cashu/cashu-ts';
import { sql, type Insertable, type Selectable } from 'kysely';
import {
  inputFee,
  msatToUnit,
  proofY,
  unitToMsat,
  type BlindSignature,
  type BlindedMessage,
  type WireProof,
} from '../cashu/index.js';
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import type { ProxyConfig } from './config.js';
import {
  MintClient,
  MintProtocolError,
  MintRejectedError,
  MintUnreachableError,
  normalizeMintUrl,
  type KeysetWithKeys,
} from './mint-client.js';
import {
  type Account,
  accountById,
  countUnclaimedRefunds,
  creditAccount,
  createFundedAccount,
  debitAvailable,
  markRefundClaimed,
  oldestUnclaimedRefund,
  proofsHeldInFlight,
  refundOps,
  restoreDebit,
  type Executor,
} from './store.js';
import type { ProxyMintOpsTable } from './tables.js';
import { mintFailure, parseToken, tokenError } from './tokens.js';

export type MintOp = Selectable<ProxyMintOpsTable>;

type ToAccount = { accountId: number };
type ToNewAccount = { newAccount: { keyHash: string; keyPrefix: string } };
/** Where a redemption's proceeds go. Without one they stay with the node (its own money). */
export type CreditTarget = ToAccount | ToNewAccount;

/** The journal's credit columns, from the target's own fields (`in` also sees inherited ones). */
function creditColumns(credit: CreditTarget | undefined) {
  const accountId = credit && Object.hasOwn(credit, 'accountId') ? (credit as ToAccount).accountId : null;
  const fresh = credit && Object.hasOwn(credit, 'newAccount') ? (credit as ToNewAccount).newAccount : null;
  const [keyHash, keyPrefix] = fresh ? [fresh.keyHash, fresh.keyPrefix] : [null, null];
  return { credit_account_id: accountId, credit_key_hash: keyHash, credit_key_prefix: keyPrefix };
}

export interface RedeemResult {
  /** Credited amount: the token's value minus the mint's input fee. */
  amountMsat: number;
  feeMsat: number;
  mintUrl: string;
  unit: string;
  opId: number;
  /** The account that received the credit (null: the node's own). */
  creditedAccountId: number | null;
}

export interface RefundResult {
  /** Taken from the balance. */
  msats: number;
  /** The mint's input fee on the swap that made the token: the token is worth msats − feeMsat. */
  feeMsat: number;
  token: string;
  mintUrl: string;
  unit: string;
  /** True when the token was made by an earlier refund call, not by this one. */
  repeated: boolean;
  /** Further refund tokens of the account finished but not yet handed out by a refund answer. */
  unclaimed: number;
}

/** A refund as GET /v1/wallet/refunds lists it. */
export interface RefundRecord {
  id: number;
  /** pending: debited, the token not made yet (the recovery finishes it); done: the token exists. */
  state: 'pending' | 'done';
  msats: number;
  /** Known once the swap is journaled. */
  feeMsat: number | null;
  token: string | null;
  mintUrl: string;
  unit: string;
  createdAt: number;
  /** A refund answer has carried the token. */
  claimed: boolean;
}

export interface WalletLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the journal of an operation holds (JSON in proxy_mint_ops.request). */
interface Journal {
  inputs: WireProof[];
  /** Y of each input, for checkstate. */
  ys: string[];
  /** Ids of the node's proof rows spent as inputs (issue only). */
  inputRows?: number[];
  outputs: SerializedOutputData[];
  keysetId: string;
  /** Issue: the first sendCount outputs form the token handed out; the rest is change. */
  sendCount?: number;
}

class Settled extends Error {}
class Conflict extends Error {}
/** Too little is unspent, but in-flight swaps hold proofs whose change comes back soon. */
class HeldInFlight extends Error {}

/** Longest wait for in-flight swaps to return their change before a token is refused as uncoverable. */
const IN_FLIGHT_WAIT_MS = 3000;

/** Most inputs one issuing swap spends (largest proofs first, so this is rarely reached). */
const MAX_INPUTS = 500;

const noopLogger: WalletLogger = { info() {}, warn() {}, error() {} };

export class NodeWallet {
  readonly mints: string[];
  private clients = new Map<string, MintClient>();
  private leaseMs: number;

  constructor(
    private db: Database,
    private config: ProxyConfig,
    private log: WalletLogger = noopLogger,
  ) {
    this.mints = config.mints.map(normalizeMintUrl);
    // Long enough for every request one drive of an operation makes (swap, checkstate, keys, restore, swap).
    this.leaseMs = 6 * config.mintTimeoutMs;
  }

  /** The mint where refunds of mixed balances go. */
  get primaryMint(): string {
    return this.mints[0];
  }

  client(mintUrl: string): MintClient {
    let client = this.clients.get(mintUrl);
    if (!client) {
      client = new MintClient(mintUrl, this.config.mintTimeoutMs);
      this.clients.set(mintUrl, client);
    }
    return client;
  }

  // ---------------------------------------------------------------------------------------
  // Redeeming

  /**
   * Redeems a token: at most once per proof, whatever the concurrency. The credit target is
   * journaled with the operation and credited in the transaction that completes it.
   * Throws HttpError: 400 (malformed, spent, untrusted mint, below fees…), 409 (the same token
   * is being redeemed right now), 503 (mint unreachable: token untouched; or outcome pending).
   */
  async redeem(
    token: string,
    options: { credit?: CreditTarget; purpose?: string; admit?: () => Promise<void> } = {},
  ): Promise<RedeemResult> {
    const parsed = await this.readToken(token);
    const remaining = parsed.amount - parsed.fee;
    // The token would now cost a swap at the mint: the caller's last word (a rate limit) first.
    await options.admit?.();
    const client = this.client(parsed.mintUrl);
    let keyset: KeysetWithKeys;
    try {
      keyset = await client.activeKeyset(parsed.unit);
    } catch (error) {
      throw mintFailure(error, parsed.mintUrl);
    }
    const outputs = blankOutputs(remaining, keyset, parsed.mintUrl);
    const journal: Journal = {
      inputs: parsed.proofs,
      ys: parsed.ys,
      outputs: outputs.map((o) => OutputData.serialize(o)),
      keysetId: keyset.id,
    };
    const now = Date.now();
    for (let attempt = 0; attempt < 3; attempt++) {
      const op = await this.journalRedeem(
        {
          kind: 'redeem',
          purpose: options.purpose ?? 'payment',
          state: 'pending',
          mint_url: parsed.mintUrl,
          unit: parsed.unit,
          token_hash: parsed.tokenHash,
          request: JSON.stringify(journal),
          ...creditColumns(options.credit),
          credit_msat: unitToMsat(remaining, parsed.unit),
          lease_until: now + this.leaseMs,
          created_at: now,
          updated_at: now,
        },
        parsed.ys,
      );
      if (op) return this.redeemResult(await this.drive(op, true));
      // Some proof is already in another redemption: settle against that one.
      const holder = await this.opHoldingProofs(parsed.ys);
      if (!holder) continue; // it failed and let go meanwhile: try again
      if (holder.state === 'done' || holder.state === 'failed') {
        throw tokenError('token_already_spent', 'This token has already been redeemed (it is spent)');
      }
      if (holder.token_hash !== parsed.tokenHash) {
        throw new HttpError(409, 'Some proofs of this token are being redeemed in another token right now', {
          code: 'redemption_in_progress',
        });
      }
      const claimed = await this.claim(holder.id);
      if (!claimed) {
        throw new HttpError(409, 'This token is being redeemed by another request; try again in a moment', {
          code: 'redemption_in_progress',
        });
      }
      return this.redeemResult(await this.drive(claimed, false));
    }
    throw new HttpError(409, 'This token is being redeemed by another request; try again in a moment', {
      code: 'redemption_in_progress',
    });
  }

  /** Decodes and checks a token (throws its HttpError), as redeem does before any swap. */
  private async readToken(token: string) {
    const parsed = await parseToken(token, this.mints, (url) => this.client(url), this.config.maxTopupMsat);
    if (parsed.amount - parsed.fee <= 0) {
      throw tokenError(
        'amount_below_fee',
        `The token is worth ${parsed.amount} ${parsed.unit} and the mint's input fee is ${parsed.fee} ${parsed.unit}: nothing would remain to credit`,
      );
    }
    return parsed;
  }

  /** True when redeem would take this token as far as a swap at the mint (it reads the mint's keysets, no more). */
  async wouldSwap(token: string): Promise<boolean> {
    try {
      await this.readToken(token);
      return true;
    } catch (error) {
      if (error instanceof HttpError) return false;
      throw error;
    }
  }

  /** Writes the operation and claims its proofs in one transaction; null if a proof is taken. */
  private async journalRedeem(values: Insertable<ProxyMintOpsTable>, ys: string[]): Promise<MintOp | null> {
    try {
      return await this.db.kysely.transaction().execute(async (trx) => {
        const op = await trx
          .insertInto('proxy_mint_ops')
          .values({ ...values, debit_account_id: null, result: null, error: null })
          .returningAll()
          .executeTakeFirstOrThrow();
        const claimed = await trx
          .insertInto('proxy_op_inputs')
          // In a fixed order, so two transactions claiming overlapping proofs cannot deadlock.
          .values([...ys].sort().map((y) => ({ y, op_id: op.id })))
          .onConflict((oc) => oc.column('y').doNothing())
          .returning('y')
          .execute();
        if (claimed.length !== ys.length) throw new Conflict();
        return normalizeOp(op);
      });
    } catch (error) {
      if (error instanceof Conflict) return null;
      throw error;
    }
  }

  private async opHoldingProofs(ys: string[]): Promise<MintOp | null> {
    const row = await this.db.kysely
      .selectFrom('proxy_op_inputs')
      .innerJoin('proxy_mint_ops', 'proxy_mint_ops.id', 'proxy_op_inputs.op_id')
      .selectAll('proxy_mint_ops')
      .where('proxy_op_inputs.y', 'in', ys)
      .orderBy('proxy_mint_ops.id', 'desc')
      .executeTakeFirst();
    return row ? normalizeOp(row) : null;
  }

  private async redeemResult(op: MintOp): Promise<RedeemResult> {
    const journal = parseJournal(op);
    const inputSum = journal.inputs.reduce((sum, p) => sum + p.amount, 0);
    let creditedAccountId = op.credit_account_id;
    if (creditedAccountId === null && op.credit_key_hash) {
      const row = await this.db.kysely
        .selectFrom('proxy_accounts')
        .select('id')
        .where('key_hash', '=', op.credit_key_hash)
        .executeTakeFirst();
      creditedAccountId = row ? Number(row.id) : null;
    }
    return {
      amountMsat: op.credit_msat,
      feeMsat: unitToMsat(inputSum, op.unit) - op.credit_msat,
      mintUrl: op.mint_url,
      unit: op.unit,
      opId: op.id,
      creditedAccountId,
    };
  }

  // ---------------------------------------------------------------------------------------
  // Issuing

  /**
   * Issues a token worth `amountMsat` (a whole number of `unit`) at `mintUrl` from the proofs the
   * node holds there, by a swap. The mint's input fee is taken from the amount. Throws HttpError.
   */
  async issue(amountMsat: number, mintUrl: string, options: { unit?: string; purpose?: string } = {}): Promise<string> {
    const unit = options.unit ?? 'sat';
    const units = msatToUnit(amountMsat, unit);
    if (!Number.isSafeInteger(amountMsat) || units <= 0 || unitToMsat(units, unit) !== amountMsat) {
      throw new RangeError(`issue: ${amountMsat} msat is not a positive whole number of ${unit}`);
    }
    const now = Date.now();
    const op = await this.db.kysely
      .insertInto('proxy_mint_ops')
      .values(this.issueOpValues(normalizeMintUrl(mintUrl), unit, options.purpose ?? 'withdraw', null, 0, now))
      .returningAll()
      .executeTakeFirstOrThrow();
    const done = await this.runIssue(normalizeOp(op), units);
    return done.result!;
  }

  /**
   * Hands out the oldest finished refund token no answer has carried yet; else refunds the
   * account's whole available balance (in whole units of its mint) as a token: the debit and the
   * journal entry are one transaction, the debit is given back if the token cannot be made, and
   * the token is stored so that a repeated call returns it again.
   */
  async refund(accountId: number): Promise<RefundResult> {
    // A token finished after its own call had answered 503 goes out before anything else, so that
    // a newer refund can never hide it: one token per call, the oldest first.
    const unclaimed = await oldestUnclaimedRefund(this.db.kysely, accountId);
    if (unclaimed) return this.refundAnswer(normalizeOp(unclaimed), true);
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = Date.now();
      const started = await this.db.kysely
        .transaction()
        .execute(async (trx) => {
          const account = await accountById(trx, accountId);
          if (!account) throw new HttpError(401, 'Unknown account', { code: 'invalid_api_key' });
          const units = msatToUnit(account.balanceMsat - account.reservedMsat, account.unit);
          if (units <= 0) return { op: null, units: 0 };
          const debit = unitToMsat(units, account.unit);
          if (!(await debitAvailable(trx, account.id, debit, now))) throw new Conflict();
          const op = await trx
            .insertInto('proxy_mint_ops')
            .values(this.issueOpValues(account.mintUrl, account.unit, 'refund', account.id, debit, now))
            .returningAll()
            .executeTakeFirstOrThrow();
          return { op: normalizeOp(op), units };
        })
        .catch((error) => {
          if (error instanceof Conflict) return null; // the balance moved under us: read it again
          throw error;
        });
      if (started === null) continue;
      if (started.op) return this.refundAnswer(await this.runIssue(started.op, started.units), false);
      return this.latestRefund(accountId);
    }
    throw new HttpError(409, 'The balance is changing right now; try the refund again', { code: 'balance_changing' });
  }

  /** With nothing left to refund: the last refund again (its answer may have been lost). */
  private async latestRefund(accountId: number): Promise<RefundResult> {
    const row = await this.db.kysely
      .selectFrom('proxy_mint_ops')
      .selectAll()
      .where('debit_account_id', '=', accountId)
      .where('kind', '=', 'issue')
      .where('purpose', '=', 'refund')
      .where('state', '!=', 'failed')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    if (!row) {
      throw new HttpError(400, 'Nothing to refund: the available balance is less than one unit of the mint', {
        code: 'nothing_to_refund',
      });
    }
    let op = normalizeOp(row);
    if (op.state !== 'done') {
      const claimed = await this.claim(op.id);
      if (!claimed) {
        throw new HttpError(
          409,
          'A refund of this account is in progress; call refund again in a moment to fetch its token',
          { code: 'refund_in_progress' },
        );
      }
      op = claimed.state === 'preparing' ? await this.abandonPreparing(claimed) : await this.drive(claimed, false);
    }
    return this.refundAnswer(op, true);
  }

  /** The answer carrying a finished refund's token; from now on the token counts as handed out. */
  private async refundAnswer(op: MintOp, repeated: boolean): Promise<RefundResult> {
    const db = this.db.kysely;
    if (op.claimed_at === null) await markRefundClaimed(db, op.id, Date.now());
    return {
      msats: op.debit_msat,
      feeMsat: issueFeeMsat(op)!,
      token: op.result!,
      mintUrl: op.mint_url,
      unit: op.unit,
      repeated,
      unclaimed: await countUnclaimedRefunds(db, op.debit_account_id!),
    };
  }

  /** The account's refunds that took money, newest first (a page of at most `limit`). */
  async refunds(accountId: number, page: { before?: number; limit: number }): Promise<RefundRecord[]> {
    const rows = await refundOps(this.db.kysely, accountId, page);
    return rows.map(normalizeOp).map((op) => ({
      id: op.id,
      state: op.state === 'done' ? 'done' : 'pending',
      msats: op.debit_msat,
      feeMsat: issueFeeMsat(op),
      token: op.result,
      mintUrl: op.mint_url,
      unit: op.unit,
      createdAt: op.created_at,
      claimed: op.claimed_at !== null,
    }));
  }

  private issueOpValues(
    mintUrl: string,
    unit: string,
    purpose: string,
    accountId: number | null,
    debitMsat: number,
    now: number,
  ) {
    return {
      kind: 'issue' as const,
      purpose,
      state: 'preparing' as const,
      mint_url: mintUrl,
      unit,
      token_hash: null,
      request: null,
      credit_account_id: null,
      credit_key_hash: null,
      credit_key_prefix: null,
      debit_account_id: accountId,
      debit_msat: debitMsat,
      result: null,
      error: null,
      lease_until: now + this.leaseMs,
      created_at: now,
      updated_at: now,
    };
  }

  /** Picks and reserves the node's proofs, journals the swap, then sends it. */
  private async runIssue(op: MintOp, units: number): Promise<MintOp> {
    const client = this.client(op.mint_url);
    let keyset: KeysetWithKeys;
    let keysets;
    try {
      keyset = await client.activeKeyset(op.unit);
      keysets = await client.keysets();
    } catch (error) {
      await this.fail(op, `mint unavailable before sending: ${messageOf(error)}`, { releaseInputs: true });
      throw this.failureFor(op, error);
    }
    let pending: MintOp | null = null;
    const waitUntil = Date.now() + IN_FLIGHT_WAIT_MS;
    for (let conflicts = 0; conflicts < 5 && !pending;) {
      pending = await this.db.kysely
        .transaction()
        .execute(async (trx) => {
          const pool = await trx
            .selectFrom('proxy_proofs')
            .selectAll()
            .where('mint_url', '=', op.mint_url)
            .where('unit', '=', op.unit)
            .where('state', '=', 'unspent')
            .orderBy('amount', 'desc')
            .limit(MAX_INPUTS)
            .execute();
          // Inputs worth the amount suffice: the mint's fee comes out of the token (worth units − fee),
          // and the change (sum − units) comes back, so the node's holdings drop by exactly `units`.
          const picked: typeof pool = [];
          let sum = 0;
          for (const proof of pool) {
            if (sum >= units) break;
            picked.push(proof);
            sum += Number(proof.amount);
          }
          const fee = inputFee(
            picked.map((p) => p.keyset_id),
            keysets,
          );
          if (sum < units) {
            // Another issue's inputs may hold what this one needs until its change comes back.
            if (Date.now() < waitUntil && (await proofsHeldInFlight(trx, op.mint_url, op.unit))) {
              throw new HeldInFlight();
            }
            const message = `The node holds too little at ${op.mint_url} to issue this token now; nothing was taken`;
            const headers = { 'retry-after': '5' };
            throw new HttpError(503, message, { code: 'insufficient_node_funds', type: 'api_error', headers });
          }
          if (units - fee <= 0) {
            throw tokenError(
              'amount_below_fee',
              `The amount is not more than the mint's input fee (${fee} ${op.unit})`,
            );
          }
          const reserved = await trx
            .updateTable('proxy_proofs')
            .set({ state: 'reserved', spend_op_id: op.id })
            .where(
              'id',
              'in',
              picked.map((p) => p.id),
            )
            .where('state', '=', 'unspent')
            .executeTakeFirst();
          if (Number(reserved.numUpdatedRows) !== picked.length) throw new Conflict();
          const send = blankOutputs(units - fee, keyset, op.mint_url);
          const change = sum - units > 0 ? blankOutputs(sum - units, keyset, op.mint_url) : [];
          const journal: Journal = {
            inputs: picked.map((p) => ({ id: p.keyset_id, amount: Number(p.amount), secret: p.secret, C: p.c })),
            ys: picked.map((p) => p.y),
            inputRows: picked.map((p) => Number(p.id)),
            outputs: [...send, ...change].map((o) => OutputData.serialize(o)),
            keysetId: keyset.id,
            sendCount: send.length,
          };
          const now = Date.now();
          const updated = await trx
            .updateTable('proxy_mint_ops')
            .set({
              state: 'pending',
              request: JSON.stringify(journal),
              lease_until: now + this.leaseMs,
              updated_at: now,
            })
            .where('id', '=', op.id)
            .where('state', '=', 'preparing')
            .returningAll()
            .executeTakeFirst();
          if (!updated) throw new Settled();
          return normalizeOp(updated);
        })
        .catch(async (error) => {
          if (error instanceof Conflict) {
            conflicts++; // another issue took a proof: pick again
            return null;
          }
          if (error instanceof HeldInFlight) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            return null;
          }
          if (error instanceof HttpError) await this.fail(op, error.message, { releaseInputs: true });
          throw error;
        });
    }
    if (!pending) {
      await this.fail(op, 'could not reserve proofs', { releaseInputs: true });
      throw new HttpError(409, 'The node is busy issuing other tokens; try again', { code: 'wallet_busy' });
    }
    return this.drive(pending, true);
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
  private async spentElsewhere(op: MintOp): Promise<never> {
    await this.fail(op, 'inputs spent elsewhere', { releaseInputs: false, inputsSpent: true });
    if (op.kind === 'redeem') throw tokenError('token_already_spent', 'This token has already been spent');
    const message = `The node's proofs at ${op.mint_url} were spent elsewhere; nothing was taken from your balance`;
    throw new HttpError(502, message, { code: 'mint_error', type: 'api_error' });
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
      await this.db.kysely.transaction().execute(async (trx) => {
        const marked = await trx
          .updateTable('proxy_mint_ops')
          .set({ state: 'done', result, error: null, updated_at: now })
          .where('id', '=', op.id)
          .where('state', '=', 'pending')
          .executeTakeFirst();
        if (Number(marked.numUpdatedRows) !== 1) throw new Settled();
        const kept = proofs.slice(sendCount);
        if (kept.length) {
          await trx
            .insertInto('proxy_proofs')
            .values(
              kept.map((p) => ({
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
              })),
            )
            .execute();
        }
        if (op.kind === 'issue') {
          await trx.updateTable('proxy_proofs').set({ state: 'spent' }).where('spend_op_id', '=', op.id).execute();
        } else {
          await this.applyCredit(trx, op, now);
        }
      });
    } catch (error) {
      if (!(error instanceof Settled)) throw error;
    }
    return this.settledOp(op.id);
  }

  private async applyCredit(trx: Executor, op: MintOp, now: number) {
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
  private async settledOp(id: number): Promise<MintOp> {
    const row = await this.db.kysely
      .selectFrom('proxy_mint_ops')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const op = normalizeOp(row);
    if (op.state === 'done') return op;
    if (op.state === 'failed') {
      throw op.kind === 'redeem'
        ? tokenError('token_already_spent', 'This token could not be redeemed: ' + (op.error ?? 'failed'))
        : new HttpError(502, `The token could not be issued: ${op.error ?? 'failed'}`, {
            code: 'mint_error',
            type: 'api_error',
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
      type: 'api_error',
    });
  }

  // ---------------------------------------------------------------------------------------
  // State changes of operations

  /** Claims an unfinished operation whose lease ran out (no one is working on it). */
  async claim(id: number): Promise<MintOp | null> {
    const now = Date.now();
    const row = await this.db.kysely
      .updateTable('proxy_mint_ops')
      .set({ lease_until: now + this.leaseMs, attempts: sql<number>`attempts + 1`, updated_at: now })
      .where('id', '=', id)
      .where('state', 'in', ['preparing', 'pending'])
      .where('lease_until', '<=', now)
      .returningAll()
      .executeTakeFirst();
    return row ? normalizeOp(row) : null;
  }

  /** Records, before a swap is sent again, that it may be performed (see drive). */
  private async setMaybeSwapped(op: MintOp): Promise<MintOp> {
    await this.db.kysely
      .updateTable('proxy_mint_ops')
      .set({ maybe_swapped: 1 })
      .where('id', '=', op.id)
      .where('state', '=', 'pending')
      .execute();
    return { ...op, maybe_swapped: 1 };
  }

  /** Leaves the operation pending for a later attempt; returns the caller's 503. */
  private async stillPending(op: MintOp, error: unknown): Promise<HttpError> {
    const now = Date.now();
    this.log.warn({ opId: op.id, mint: op.mint_url, err: messageOf(error) }, 'mint operation left pending');
    await this.db.kysely
      .updateTable('proxy_mint_ops')
      // maybe_swapped: a refusal just noted in memory (see drive) is written down with the rest.
      .set({ lease_until: 0, error: messageOf(error).slice(0, 500), maybe_swapped: op.maybe_swapped, updated_at: now })
      .where('id', '=', op.id)
      .where('state', '=', 'pending')
      .execute();
    return op.kind === 'redeem'
      ? new HttpError(
          503,
          `The mint ${op.mint_url} did not confirm the redemption. Nothing is lost: send the same request again later to finish it (it will be credited once)`,
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
  private async fail(
    op: MintOp,
    reason: string,
    how: { releaseInputs: boolean; inputsSpent?: boolean },
  ): Promise<void> {
    const now = Date.now();
    await this.db.kysely.transaction().execute(async (trx) => {
      const marked = await trx
        .updateTable('proxy_mint_ops')
        .set({ state: 'failed', error: reason.slice(0, 500), updated_at: now })
        .where('id', '=', op.id)
        .where('state', 'in', ['preparing', 'pending'])
        .executeTakeFirst();
      if (Number(marked.numUpdatedRows) !== 1) return; // settled by someone else
      if (op.kind === 'redeem') {
        if (how.releaseInputs) await trx.deleteFrom('proxy_op_inputs').where('op_id', '=', op.id).execute();
        return;
      }
      if (op.debit_account_id !== null && op.debit_msat > 0) {
        await restoreDebit(trx, op.debit_account_id, op.debit_msat);
      }
      await trx
        .updateTable('proxy_proofs')
        .set(how.inputsSpent ? { state: 'spent' } : { state: 'unspent', spend_op_id: null })
        .where('spend_op_id', '=', op.id)
        .where('state', '=', 'reserved')
        .execute();
    });
  }

  /** A 'preparing' operation was never sent: end it and give back its debit. */
  async abandonPreparing(op: MintOp): Promise<never> {
    await this.fail(op, 'interrupted before it was sent', { releaseInputs: true });
    throw new HttpError(
      503,
      "The operation was interrupted before it reached the mint; nothing was taken (a refund's debit is given back), try again",
      { code: 'operation_interrupted', type: 'api_error' },
    );
  }

  private failureFor(op: MintOp, error: unknown): HttpError {
    const failure = mintFailure(error, op.mint_url);
    if (op.kind === 'issue' && failure.status === 400) {
      return new HttpError(
        502,
        `The mint ${op.mint_url} refused to issue the token; nothing was taken from your balance`,
        { code: 'mint_refused', type: 'api_error' },
      );
    }
    if (op.kind === 'issue' && failure.status === 503) {
      return new HttpError(
        503,
        `The mint ${op.mint_url} is unreachable; nothing was taken from your balance, try again later`,
        { code: 'mint_unreachable', type: 'api_error' },
      );
    }
    return failure;
  }

  /** Unfinished operations whose lease ran out, oldest first (for the recovery). */
  async unfinishedOps(limit = 100): Promise<MintOp[]> {
    const rows = await this.db.kysely
      .selectFrom('proxy_mint_ops')
      .selectAll()
      .where('state', 'in', ['preparing', 'pending'])
      .where('lease_until', '<=', Date.now())
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(normalizeOp);
  }
}

/** Fresh blinded outputs (random secrets and blinding factors) worth `amount` of the keyset. */
function blankOutputs(amount: number, keyset: KeysetWithKeys, mintUrl: string): OutputData[] {
  try {
    return OutputData.createRandomData(amount, { id: keyset.id, keys: keyset.keys });
  } catch {
    throw new HttpError(502, `The keyset of the mint ${mintUrl} cannot represent ${amount} ${keyset.unit}`, {
      code: 'mint_error',
      type: 'api_error',
    });
  }
}

function toBlinded(output: OutputData): BlindedMessage {
  return {
    amount: Number(output.blindedMessage.amount.toString()),
    id: output.blindedMessage.id,
    B_: output.blindedMessage.B_,
  };
}

/** An issue's mint fee (its inputs minus its outputs) in msat; null before it is journaled. */
function issueFeeMsat(op: MintOp): number | null {
  if (!op.request) return null;
  const journal = parseJournal(op);
  const inputs = journal.inputs.reduce((sum, p) => sum + p.amount, 0);
  const outputs = journal.outputs.reduce((sum, o) => sum + Number(o.blindedMessage.amount), 0);
  return unitToMsat(inputs - outputs, op.unit);
}

function parseJournal(op: MintOp): Journal {
  if (!op.request) throw new Error(`mint operation ${op.id} has no journal`);
  return JSON.parse(op.request) as Journal;
}

/** bigint columns arrive as strings from some drivers; make the row's numbers numbers. */
function normalizeOp(row: MintOp): MintOp {
  return {
    ...row,
    id: Number(row.id),
    credit_account_id: row.credit_account_id === null ? null : Number(row.credit_account_id),
    credit_msat: Number(row.credit_msat),
    debit_account_id: row.debit_account_id === null ? null : Number(row.debit_account_id),
    debit_msat: Number(row.debit_msat),
    attempts: Number(row.attempts),
    lease_until: Number(row.lease_until),
    claimed_at: row.claimed_at === null ? null : Number(row.claimed_at),
    maybe_swapped: Number(row.maybe_swapped),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export type { Account };
