// The node's Cashu wallet. It redeems tokens (a NUT-03 swap at the token's mint, so the sender
// cannot spend them again) and issues tokens (a swap of proofs the node holds: refunds and
// withdrawals). Proofs are rows of proxy_proofs. Each swap is journaled before it is sent and
// driven to its end by ./mint-journal.ts, so that a crash or a lost answer loses nothing.
// See docs/proxy-wallet.md.
import { Amount, OutputData, getEncodedToken, type SerializedDLEQ } from '@cashu/cashu-ts';
import type { Insertable } from 'kysely';
import { inputFee, msatToUnit, unitToMsat } from '../../cashu/index.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import type { ProxyConfig } from '../common/config.js';
import { ForeignSwaps, parseForeign } from './foreign.js';
import { MintClient, normalizeMintUrl, type KeysetWithKeys } from './mint-client.js';
import {
  CHANGE_POLL_MS,
  CHANGE_WAIT_MS,
  ChangeInFlight,
  MAX_INPUTS,
  MintJournal,
  Settled,
  messageOf,
  parseJournal,
  type Journal,
  type MintOp,
  type WalletLogger,
} from './mint-journal.js';
import {
  type Account,
  accountById,
  accountByKeyHash,
  changeMayComeBack,
  claimOpInputs,
  countUnclaimedRefunds,
  debitAvailable,
  insertMintOp,
  type Executor,
  journalIssue,
  markOpDone,
  markOpInputsSpent,
  markRefundClaimed,
  mintOpById,
  oldestUnclaimedRefund,
  opHoldingProofs,
  refundHistory,
  refundOps,
  reserveProofs,
  unspentProofs,
  type ProofRow,
} from './store.js';
import type { ProxyMintOpsTable } from '../common/tables.js';
import { mintFailure, parseToken, tokenError, type ForeignPolicy, type ParsedToken } from './tokens.js';

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
  /** A token of an untrusted mint, swapped into `mintUrl` (the primary mint): its mint; else null. */
  foreignMint: string | null;
  /** Of feeMsat, what the swap's melt cost beyond the foreign mint's input fee (null: no swap). */
  swapFeeMsat: number | null;
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
  /** A refund answer has carried the token (a Lightning refund has no token to carry: true). */
  claimed: boolean;
  /** A refund paid to a Lightning address: where, and what its invoice paid (null for a token). */
  lightning: { recipient: string; amountMsat: number } | null;
}

class Conflict extends Error {}

const noopLogger: WalletLogger = { info() {}, warn() {}, error() {} };

export class NodeWallet {
  readonly mints: string[];
  private journal: MintJournal;
  private foreign: ForeignSwaps;
  private foreignPolicy: ForeignPolicy;

  constructor(
    private db: Database,
    private config: ProxyConfig,
    log: WalletLogger = noopLogger,
  ) {
    this.mints = config.mints.map(normalizeMintUrl);
    this.journal = new MintJournal(db, config.mintTimeoutMs, this.primaryMint, log);
    this.foreign = new ForeignSwaps(db, this.journal, this.primaryMint, log);
    const foreignMints = config.foreignMints;
    this.foreignPolicy = {
      mints: Array.isArray(foreignMints) ? foreignMints.map(normalizeMintUrl) : foreignMints,
      maxMsat: config.foreignMaxMsat,
    };
  }

  /** The mint where refunds of mixed balances go. */
  get primaryMint(): string {
    return this.mints[0];
  }

  client(mintUrl: string): MintClient {
    return this.journal.client(mintUrl);
  }

  // The recovery's way in (./recovery.ts): see MintJournal.

  unfinishedOps(limit = 100): Promise<MintOp[]> {
    return this.journal.unfinishedOps(limit);
  }

  claim(id: number): Promise<MintOp | null> {
    return this.journal.claim(id);
  }

  drive(op: MintOp, fresh: boolean): Promise<MintOp> {
    return op.kind === 'foreign' ? this.foreign.drive(op, fresh) : this.journal.drive(op, fresh);
  }

  abandonPreparing(op: MintOp): Promise<never> {
    return this.journal.abandonPreparing(op);
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
    // The token would now cost a swap at the mint: the caller's last word (a rate limit) first.
    await options.admit?.();
    // A token of an untrusted mint is quoted for a swap into the primary mint (./foreign.ts): not
    // when it is journaled already (sent again to finish it), which needs no quotes, nor its mint.
    if (parsed.foreign) {
      const settled = await this.settleWithHolder(parsed);
      if (settled) return settled;
    }
    const plan = parsed.foreign ? await this.foreign.plan(parsed) : await this.swapPlan(parsed);
    const now = Date.now();
    for (let attempt = 0; attempt < 3; attempt++) {
      const op = await this.journalRedeem(
        {
          kind: parsed.foreign ? 'foreign' : 'redeem',
          purpose: options.purpose ?? 'payment',
          state: 'pending',
          mint_url: plan.mintUrl,
          unit: plan.unit,
          token_hash: parsed.tokenHash,
          request: plan.request,
          ...creditColumns(options.credit),
          credit_msat: plan.creditMsat,
          lease_until: now + this.journal.leaseMs,
          created_at: now,
          updated_at: now,
        },
        parsed.ys,
      );
      if (op) return this.redeemResult(await this.drive(op, true));
      // Some proof is already in another redemption: settle against that one.
      const settled = await this.settleWithHolder(parsed);
      if (settled) return settled;
      // it failed and let go meanwhile: try again
    }
    throw new HttpError(409, 'This token is being redeemed by another request; try again in a moment', {
      code: 'redemption_in_progress',
    });
  }

  /** The redemption already holding some of the token's proofs, finished if it is this token's; null: none. */
  private async settleWithHolder(parsed: ParsedToken): Promise<RedeemResult | null> {
    const holder = await opHoldingProofs(this.db.kysely, parsed.ys);
    if (!holder) return null;
    if (holder.state === 'done' || holder.state === 'failed') {
      throw tokenError('cashu_token_already_spent', 'This token has already been redeemed (it is spent)');
    }
    if (holder.token_hash !== parsed.tokenHash) {
      throw new HttpError(409, 'Some proofs of this token are being redeemed in another token right now', {
        code: 'redemption_in_progress',
      });
    }
    const claimed = await this.journal.claim(holder.id);
    if (!claimed) {
      throw new HttpError(409, 'This token is being redeemed by another request; try again in a moment', {
        code: 'redemption_in_progress',
      });
    }
    return this.redeemResult(await this.drive(claimed, false));
  }

  /** The swap of a trusted mint's token at its mint: outputs worth its value minus the input fee. */
  private async swapPlan(parsed: ParsedToken) {
    const remaining = parsed.amount - parsed.fee;
    let keyset: KeysetWithKeys;
    try {
      keyset = await this.client(parsed.mintUrl).activeKeyset(parsed.unit);
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
    return {
      mintUrl: parsed.mintUrl,
      unit: parsed.unit,
      request: JSON.stringify(journal),
      creditMsat: unitToMsat(remaining, parsed.unit),
    };
  }

  /** Decodes and checks a token (throws its HttpError), as redeem does before any swap. */
  private async readToken(token: string) {
    const parsed = await parseToken(
      token,
      this.mints,
      (url) => this.client(url),
      this.config.maxTopupMsat,
      this.foreignPolicy,
    );
    if (parsed.amount - parsed.fee <= 0) {
      throw tokenError(
        'cashu_token_swap_fees_exceed_amount',
        `The token is worth ${parsed.amount} ${parsed.unit} and the mint's input fee is ` +
          `${parsed.fee} ${parsed.unit}: nothing would remain to credit`,
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
      return await writeTransaction(this.db, async (trx) => {
        const op = await insertMintOp(trx, { ...values, debit_account_id: null, result: null, error: null });
        if ((await claimOpInputs(trx, op.id, ys)) !== ys.length) throw new Conflict();
        return op;
      });
    } catch (error) {
      if (error instanceof Conflict) return null;
      throw error;
    }
  }

  private async redeemResult(op: MintOp): Promise<RedeemResult> {
    const journal = parseJournal(op);
    const inputSum = journal.inputs.reduce((sum, p) => sum + p.amount, 0);
    let creditedAccountId = op.credit_account_id;
    if (creditedAccountId === null && op.credit_key_hash) {
      creditedAccountId = (await accountByKeyHash(this.db.kysely, op.credit_key_hash))?.id ?? null;
    }
    const feeMsat = unitToMsat(inputSum, op.unit) - op.credit_msat;
    const foreign = op.kind === 'foreign' ? parseForeign(op) : null;
    return {
      amountMsat: op.credit_msat,
      feeMsat,
      mintUrl: op.mint_url,
      unit: op.unit,
      opId: op.id,
      creditedAccountId,
      foreignMint: foreign?.foreignMint ?? null,
      swapFeeMsat: foreign ? feeMsat - foreign.inputFee * 1000 : null,
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
    // No account pays it (the node's own money): debit_msat records the amount for the operator's list.
    const values = this.issueOpValues(
      normalizeMintUrl(mintUrl),
      unit,
      options.purpose ?? 'withdraw',
      null,
      amountMsat,
      now,
    );
    const done = await this.runIssue(await insertMintOp(this.db.kysely, values), units);
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
    if (unclaimed) return this.refundAnswer(unclaimed, true);
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = Date.now();
      // Reads the balance, then debits it: SQLite's write lock from the start (writeTransaction).
      const started = await writeTransaction(this.db, async (trx) => {
        const account = await accountById(trx, accountId);
        if (!account) throw new HttpError(401, 'Unknown account', { code: 'invalid_api_key' });
        const availableMsat = account.balanceMsat - account.reservedMsat;
        const units = msatToUnit(availableMsat, account.unit);
        if (units <= 0) return { op: null, units: 0, availableMsat };
        const debit = unitToMsat(units, account.unit);
        if (!(await debitAvailable(trx, account.id, debit, now))) throw new Conflict();
        const op = await insertMintOp(
          trx,
          this.issueOpValues(account.mintUrl, account.unit, 'refund', account.id, debit, now),
        );
        return { op, units, availableMsat };
      }).catch((error) => {
        if (error instanceof Conflict) return null; // the balance moved under us: read it again
        throw error;
      });
      if (started === null) continue;
      if (started.op) return this.refundAnswer(await this.runIssue(started.op, started.units), false);
      return this.latestRefund(accountId, started.availableMsat);
    }
    throw new HttpError(409, 'The balance is changing right now; try the refund again', { code: 'balance_changing' });
  }

  /** With nothing left to refund: the last refund again (its answer may have been lost). */
  private async latestRefund(accountId: number, availableMsat: number): Promise<RefundResult> {
    let [op] = await refundOps(this.db.kysely, accountId, { limit: 1 });
    if (!op) {
      // Routstr's codes and words, which its clients compare (code first, older ones the detail).
      const dust = availableMsat > 0;
      throw new HttpError(400, 'Nothing to refund: the available balance is less than one unit of the mint', {
        code: dust ? 'balance_too_small_to_refund' : 'no_balance_to_refund',
        detail: dust ? 'Balance too small to refund' : 'No balance to refund',
      });
    }
    if (op.state !== 'done') {
      const claimed = await this.journal.claim(op.id);
      if (!claimed) {
        throw new HttpError(
          409,
          'A refund of this account is in progress; call refund again in a moment to fetch its token',
          { code: 'refund_in_progress' },
        );
      }
      op =
        claimed.state === 'preparing'
          ? await this.journal.abandonPreparing(claimed)
          : await this.journal.drive(claimed, false);
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

  /** The account's refunds that took money, tokens and Lightning payments, newest first (at most `limit`). */
  async refunds(accountId: number, page: { before?: number; limit: number }): Promise<RefundRecord[]> {
    const rows = await refundHistory(this.db.kysely, accountId, page);
    return rows.map((row) => {
      const { recipient, paid_msat: paidMsat, ...op } = row;
      const lightning = op.kind === 'melt';
      return {
        id: op.id,
        state: op.state === 'done' ? 'done' : 'pending',
        msats: op.debit_msat,
        // A Lightning refund's fee: what was debited beyond the invoice (fee reserve held, or fee paid, and input fee).
        feeMsat: lightning ? (paidMsat === null ? null : op.debit_msat - paidMsat) : issueFeeMsat(op),
        token: lightning ? null : op.result,
        mintUrl: op.mint_url,
        unit: op.unit,
        createdAt: op.created_at,
        claimed: lightning || op.claimed_at !== null,
        lightning: lightning && recipient !== null && paidMsat !== null ? { recipient, amountMsat: paidMsat } : null,
      };
    });
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
      lease_until: now + this.journal.leaseMs,
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
      await this.journal.fail(op, `mint unavailable before sending: ${messageOf(error)}`, { releaseInputs: true });
      throw this.journal.failureFor(op, error);
    }
    let pending: MintOp | null = null;
    const waitUntil = Date.now() + CHANGE_WAIT_MS;
    for (let conflicts = 0; conflicts < 5 && !pending;) {
      // Reads the pool, then reserves from it: SQLite's write lock from the start (writeTransaction).
      pending = await writeTransaction(this.db, async (trx) => {
        const pool = await unspentProofs(trx, op.mint_url, op.unit, MAX_INPUTS);
        // Inputs worth the amount suffice: the mint's fee comes out of the token (worth units − fee),
        // and the change (sum − units) comes back, so the node's holdings drop by exactly `units`.
        // Largest first: the fewest inputs, so the least fee.
        const picked: ProofRow[] = [];
        let sum = 0;
        for (const proof of pool) {
          if (sum >= units) break;
          picked.push(proof);
          sum += proof.amount;
        }
        const fee = inputFee(
          picked.map((p) => p.keyset_id),
          keysets,
        );
        const exact = exactProofs(pool, units);
        if (exact && handingOverPays(exact, fee, units, keyset.id, keysets)) {
          // Proofs that already sum to the amount are the token: no swap, so no input fee for the node.
          const ids = exact.map((p) => p.id);
          if ((await reserveProofs(trx, ids, op.id)) !== exact.length) throw new Conflict();
          return handOver(trx, op, exact);
        }
        if (sum >= units && fee > 0) sum += consolidate(pool, picked, fee, keysets);
        if (sum < units) {
          // Another operation's inputs may hold what this one needs until its change comes back.
          if (Date.now() < waitUntil && (await changeMayComeBack(trx, op.mint_url, op.unit, pool, MAX_INPUTS))) {
            throw new ChangeInFlight();
          }
          const message = `The node holds too little at ${op.mint_url} to issue this token now; nothing was taken`;
          const headers = { 'retry-after': '5' };
          throw new HttpError(503, message, { code: 'insufficient_node_funds', type: 'api_error', headers });
        }
        if (units - fee <= 0) {
          throw tokenError(
            'cashu_token_swap_fees_exceed_amount',
            `The amount is not more than the mint's input fee (${fee} ${op.unit})`,
          );
        }
        const reserved = await reserveProofs(
          trx,
          picked.map((p) => p.id),
          op.id,
        );
        if (reserved !== picked.length) throw new Conflict();
        const send = blankOutputs(units - fee, keyset, op.mint_url);
        const change = sum - units > 0 ? blankOutputs(sum - units, keyset, op.mint_url) : [];
        const journal: Journal = {
          inputs: picked.map((p) => ({ id: p.keyset_id, amount: p.amount, secret: p.secret, C: p.c })),
          ys: picked.map((p) => p.y),
          inputRows: picked.map((p) => p.id),
          outputs: [...send, ...change].map((o) => OutputData.serialize(o)),
          keysetId: keyset.id,
          sendCount: send.length,
        };
        const now = Date.now();
        const updated = await journalIssue(trx, op.id, {
          request: JSON.stringify(journal),
          lease_until: now + this.journal.leaseMs,
          updated_at: now,
        });
        if (!updated) throw new Settled();
        return updated;
      }).catch(async (error) => {
        if (error instanceof Conflict) {
          conflicts++; // another issue took a proof: pick again
          return null;
        }
        if (error instanceof ChangeInFlight) {
          await new Promise((resolve) => setTimeout(resolve, CHANGE_POLL_MS));
          return null;
        }
        if (error instanceof HttpError) await this.journal.fail(op, error.message, { releaseInputs: true });
        throw error;
      });
    }
    if (!pending) {
      await this.journal.fail(op, 'could not reserve proofs', { releaseInputs: true });
      throw new HttpError(409, 'The node is busy issuing other tokens; try again', { code: 'wallet_busy' });
    }
    return pending.state === 'done' ? pending : this.journal.drive(pending, true);
  }
}

type KeysetFee = { id: string; inputFeePpk: number };

/**
 * Completes an issue by handing over the node's proofs `exact` (reserved for it) as the token, in
 * the caller's transaction: journaled (`direct`, no outputs), done, its inputs spent, at once.
 * Nothing reaches the mint, so nothing can be lost in between: a crash before the commit leaves
 * the proofs the node's, after it the token is stored with the operation.
 */
async function handOver(trx: Executor, op: MintOp, exact: ProofRow[]): Promise<MintOp> {
  const journal: Journal = {
    inputs: exact.map((p) => ({ id: p.keyset_id, amount: p.amount, secret: p.secret, C: p.c })),
    ys: exact.map((p) => p.y),
    inputRows: exact.map((p) => p.id),
    outputs: [],
    keysetId: exact[0].keyset_id,
    sendCount: 0,
    direct: true,
  };
  const proofs = exact.map((p) => ({
    id: p.keyset_id,
    amount: Amount.from(p.amount),
    secret: p.secret,
    C: p.c,
    ...(p.dleq ? { dleq: JSON.parse(p.dleq) as SerializedDLEQ } : {}),
  }));
  const token = getEncodedToken({ mint: op.mint_url, unit: op.unit, proofs });
  const now = Date.now();
  const journaled = await journalIssue(trx, op.id, {
    request: JSON.stringify(journal),
    lease_until: now,
    updated_at: now,
  });
  if (!journaled || !(await markOpDone(trx, op.id, token, now))) throw new Settled();
  await markOpInputsSpent(trx, op.id);
  return mintOpById(trx, op.id);
}

/** Most proofs a token handed over without a swap may hold (it travels in headers: X-Cashu change). */
const MAX_DIRECT_PROOFS = 32;
/** Most small proofs one swap takes along to merge into its change. */
const MAX_CONSOLIDATED = 16;

/**
 * Proofs of the pool (largest first) that sum to exactly `units`, at most MAX_DIRECT_PROOFS of
 * them, or null. Greedy by amount: with power-of-two amounts it finds such a set when one exists.
 */
function exactProofs(pool: ProofRow[], units: number): ProofRow[] | null {
  const picked: ProofRow[] = [];
  let left = units;
  for (const proof of pool) {
    if (left === 0 || picked.length === MAX_DIRECT_PROOFS) break;
    if (proof.amount <= left) {
      picked.push(proof);
      left -= proof.amount;
    }
  }
  return left === 0 ? picked : null;
}

/**
 * Whether handing `exact` over beats a swap for the recipient: its own swap of them costs their
 * input fee, against the swap's fee (`swapFee`, taken from the token) plus the fee of the fresh
 * proofs it would then swap (one per bit of the amount, in the active keyset). At a mint without
 * fees neither costs anything: a swap then, which gives the recipient fresh proofs.
 */
function handingOverPays(
  exact: ProofRow[],
  swapFee: number,
  units: number,
  activeKeyset: string,
  keysets: readonly KeysetFee[],
): boolean {
  const own = inputFee(
    exact.map((p) => p.keyset_id),
    keysets,
  );
  const freshProofs = [...(units - swapFee).toString(2)].filter((bit) => bit === '1').length;
  const fresh = inputFee(Array<string>(freshProofs).fill(activeKeyset), keysets);
  return own > 0 && own <= swapFee + fresh;
}

/**
 * Consolidation of the node's change, free of charge: a mint's input fee is rounded up to a whole
 * unit per swap (NUT-02), so a swap may take the node's smallest proofs along as long as its fee
 * does not rise; they come back merged into the change (few proofs of powers of two), so that
 * later refunds need fewer inputs. Adds them to `picked`; returns their sum.
 */
function consolidate(pool: ProofRow[], picked: ProofRow[], fee: number, keysets: readonly KeysetFee[]): number {
  const taken = new Set(picked.map((p) => p.id));
  const ids = picked.map((p) => p.keyset_id);
  let added = 0;
  let count = 0;
  for (let i = pool.length - 1; i >= 0 && count < MAX_CONSOLIDATED && picked.length < MAX_INPUTS; i--) {
    const proof = pool[i];
    if (taken.has(proof.id)) break; // the smallest left are the inputs themselves
    if (inputFee([...ids, proof.keyset_id], keysets) > fee) break;
    ids.push(proof.keyset_id);
    picked.push(proof);
    added += proof.amount;
    count++;
  }
  return added;
}

/** Fresh blinded outputs (random secrets and blinding factors) worth `amount` of the keyset. */
function blankOutputs(amount: number, keyset: KeysetWithKeys, mintUrl: string): OutputData[] {
  try {
    return OutputData.createRandomData(amount, { id: keyset.id, keys: keyset.keys });
  } catch {
    throw new HttpError(502, `The keyset of the mint ${mintUrl} cannot represent ${amount} ${keyset.unit}`, {
      code: 'mint_error',
      type: 'mint_error',
    });
  }
}

/** An issue's mint fee (its inputs minus its outputs) in msat; null before it is journaled. */
function issueFeeMsat(op: MintOp): number | null {
  if (!op.request) return null;
  const journal = parseJournal(op);
  if (journal.direct) return 0; // the node's proofs handed over: no swap, no fee
  const inputs = journal.inputs.reduce((sum, p) => sum + p.amount, 0);
  const outputs = journal.outputs.reduce((sum, o) => sum + Number(o.blindedMessage.amount), 0);
  return unitToMsat(inputs - outputs, op.unit);
}

export type { Account, MintOp, WalletLogger };
