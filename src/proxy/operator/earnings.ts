// The node's money as the operator sees it and moves it (the admin page and the operator API):
// node totals, the proofs held per mint, recent accounts, requests and withdrawals, the withdrawal
// of the node's earnings. Its SQL is in ./store.ts.
import { writeTransaction, type Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { accountTotals, insertWithdrawal, lockNode, withdrawnMsat } from '../lightning/store.js';
import {
  countLiveReservations,
  finishWithdrawal,
  mintHoldings as mintHoldingRows,
  recentRequests,
  recentWithdrawals,
} from './store.js';
import type { NodeWallet } from '../wallet/wallet.js';
import { recordAudit } from './audit.js';

export interface NodeTotals {
  /** Everything users' accounts own (including reserved). */
  heldMsat: number;
  reservedMsat: number;
  /** Charged for requests, all time. */
  earnedMsat: number;
  /** Paid out (or being paid out) to the operator. */
  withdrawnMsat: number;
  /** The node's own money still in the wallet: earned − withdrawn. */
  earningsMsat: number;
  accounts: number;
  settledRequests: number;
  inFlight: number;
}

export async function nodeTotals(db: Database): Promise<NodeTotals> {
  const [accounts, inFlight, withdrawn] = await Promise.all([
    accountTotals(db.kysely),
    countLiveReservations(db.kysely),
    withdrawnMsat(db.kysely),
  ]);
  return {
    heldMsat: accounts.held,
    reservedMsat: accounts.reserved,
    earnedMsat: accounts.earned,
    withdrawnMsat: withdrawn,
    earningsMsat: accounts.earned - withdrawn,
    accounts: accounts.accounts,
    settledRequests: accounts.settled,
    inFlight,
  };
}

export interface MintHolding {
  mintUrl: string;
  unit: string;
  unspent: number;
  reserved: number;
  proofs: number;
}

/** The proofs the node holds, per mint and unit (read-only view of the wallet's proxy_proofs). */
export async function mintHoldings(db: Database): Promise<MintHolding[]> {
  const rows = await mintHoldingRows(db.kysely);
  return rows.map((row) => ({
    mintUrl: row.mint_url,
    unit: row.unit,
    unspent: row.unspent,
    reserved: row.reserved,
    proofs: row.proofs,
  }));
}

/** What the admin page renders itself (its script reads the rest from the operator API). */
export async function dashboardData(db: Database) {
  const [totals, holdings, requests, withdrawals] = await Promise.all([
    nodeTotals(db),
    mintHoldings(db),
    recentRequests(db.kysely, 50),
    recentWithdrawals(db.kysely, 20),
  ]);
  return { totals, holdings, requests, withdrawals };
}

export type DashboardData = Awaited<ReturnType<typeof dashboardData>>;

/**
 * Pays `amountMsat` of the node's earnings out as a Cashu token of `mintUrl`. The lock row makes
 * the check-and-record one serialized step across processes; the withdrawal is recorded before
 * the token is made and marked failed (freeing the amount) if the wallet cannot make it.
 */
export async function withdrawEarnings(
  db: Database,
  wallet: NodeWallet,
  amountMsat: number,
  mintUrl: string,
  by: string,
): Promise<{ id: number; token: string }> {
  if (!wallet.mints.includes(mintUrl)) {
    throw new HttpError(400, `Unknown mint ${mintUrl}; this node trusts ${wallet.mints.join(', ')}`);
  }
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0 || amountMsat % 1000 !== 0) {
    throw new HttpError(400, 'The amount must be a positive whole number of sats');
  }
  const now = Date.now();
  const id = await writeTransaction(db, async (trx) => {
    await lockNode(trx);
    const { earned } = await accountTotals(trx);
    const available = earned - (await withdrawnMsat(trx));
    if (amountMsat > available) {
      throw new HttpError(400, `The node's earnings are ${available} msat; ${amountMsat} msat cannot be withdrawn`);
    }
    const id = await insertWithdrawal(trx, {
      amount_msat: amountMsat,
      mint_url: mintUrl,
      status: 'pending',
      token: null,
      error: null,
      created_by: by,
      created_at: now,
      updated_at: now,
    });
    await recordAudit(trx, {
      actor: by,
      action: 'earnings.withdraw',
      target: String(id),
      after: { amount_msat: amountMsat, mint_url: mintUrl },
    });
    return id;
  });
  try {
    const token = await wallet.issue(amountMsat, mintUrl, { purpose: 'withdraw' });
    await finishWithdrawal(db.kysely, id, { status: 'issued', token }, Date.now());
    return { id, token };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await finishWithdrawal(db.kysely, id, { status: 'failed', error: message.slice(0, 500) }, Date.now());
    throw error instanceof HttpError ? error : new HttpError(503, `The token could not be made: ${message}`);
  }
}
