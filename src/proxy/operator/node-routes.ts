// The node's money and keys at Routstr's operator paths: balances per mint, withdrawal of the
// earnings, the keys (Routstr's "temporary balances") and their limits, ecash transactions and
// Lightning invoices. Amounts are Routstr's: msat for keys, the mint's unit for ecash.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { msatToUnit, unitToMsat } from '../../cashu/nut01.js';
import { writeTransaction } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import type { NodeWallet } from '../wallet/wallet.js';
import { recordAudit } from './audit.js';
import { mintHoldings, withdrawEarnings } from './earnings.js';
import { seconds } from './operator-auth.js';
import { operatorError, operatorOfRequest, type OperatorDeps } from './operator-api.js';
import {
  accountExistsByHash,
  balancesOwedByMint,
  childKeyByHash,
  countInvoices,
  countTransactions,
  invoicesPage,
  keysPage,
  keysTotals,
  transactionsPage,
  updateChildKeyLimits,
} from './store.js';

const RESET_PERIODS = ['daily', 'weekly', 'monthly', 'none'] as const;
const Page = {
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
  offset: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 }),
};
const Search = Type.Optional(Type.String({ maxLength: 200 }));
const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' });
/** Whole units of a mint: sats or msats, at most 21 million bitcoin. */
const MAX_AMOUNT = 2_100_000_000_000_000;

export function nodeRoutes(deps: OperatorDeps & { wallet: NodeWallet }) {
  const { db, wallet } = deps;
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/admin/api/balances',
      {
        schema: {
          summary: 'Ecash held per mint and unit: the wallet, what users own, what is the operator’s',
          response: {
            200: Type.Array(
              Type.Object({
                mint_url: Type.String(),
                unit: Type.String(),
                wallet_balance: Type.Integer(),
                user_balance: Type.Integer(),
                owner_balance: Type.Integer(),
                reserved_balance: Type.Integer(),
                proofs: Type.Integer(),
              }),
            ),
          },
        },
      },
      async () => {
        // The wallet is the database's proofs (the node's own journal), so no mint is asked.
        const [holdings, owed] = await Promise.all([mintHoldings(db), balancesOwedByMint(db.kysely)]);
        const rows = new Map<
          string,
          { mint_url: string; unit: string; wallet: number; reserved: number; proofs: number; owed: number }
        >();
        const row = (mint: string, unit: string) => {
          const key = `${mint} ${unit}`;
          let entry = rows.get(key);
          if (!entry) rows.set(key, (entry = { mint_url: mint, unit, wallet: 0, reserved: 0, proofs: 0, owed: 0 }));
          return entry;
        };
        for (const mint of wallet.mints) row(mint, 'sat');
        for (const h of holdings) {
          Object.assign(row(h.mintUrl, h.unit), { wallet: h.unspent, reserved: h.reserved, proofs: h.proofs });
        }
        for (const o of owed) row(o.mint_url, o.unit).owed += Number(o.owed);
        return [...rows.values()].map((r) => {
          // What users own, in whole units rounded up (Routstr's): the operator's share is never overstated.
          const user = Math.ceil(r.owed / unitToMsat(1, r.unit));
          return {
            mint_url: r.mint_url,
            unit: r.unit,
            wallet_balance: r.wallet,
            user_balance: user,
            owner_balance: r.wallet - user,
            reserved_balance: r.reserved,
            proofs: r.proofs,
          };
        });
      },
    );

    app.post(
      '/admin/withdraw',
      {
        schema: {
          summary: 'Withdraw the node’s earnings as a Cashu token',
          body: Type.Object({
            amount: Type.Integer({ maximum: MAX_AMOUNT }),
            mint_url: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
            unit: Type.Optional(Type.Union([Type.Literal('sat'), Type.Literal('msat')])),
          }),
          response: { 200: Type.Object({ token: Type.String(), mint_url: Type.String() }) },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const { amount, unit = 'sat' } = request.body;
        if (amount <= 0) throw operatorError(400, 'invalid_amount', 'Withdrawal amount must be positive');
        const mintUrl = request.body.mint_url ?? wallet.mints[0];
        const amountMsat = unitToMsat(amount, unit);
        if (unit === 'msat' && amount % 1000 !== 0) {
          throw operatorError(400, 'invalid_amount', 'This node pays out whole sats: give a multiple of 1000 msat');
        }
        try {
          const { token } = await withdrawEarnings(db, wallet, amountMsat, mintUrl, actor);
          return { token, mint_url: mintUrl };
        } catch (error) {
          // withdrawEarnings speaks the admin page's HttpError; Routstr's clients read `detail`.
          if (error instanceof HttpError && error.status < 500) {
            throw operatorError(error.status, 'withdraw_refused', error.message);
          }
          throw error;
        }
      },
    );

    const KeyRow = Type.Object({
      hashed_key: Type.String(),
      balance: Type.Integer(),
      total_spent: Type.Integer(),
      total_requests: Type.Integer(),
      refund_address: Type.Union([Type.String(), Type.Null()]),
      key_expiry_time: Type.Union([Type.Integer(), Type.Null()]),
      parent_key_hash: Type.Union([Type.String(), Type.Null()]),
      balance_limit: Type.Union([Type.Integer(), Type.Null()]),
      balance_limit_reset: Type.Union([Type.String(), Type.Null()]),
      validity_date: Type.Union([Type.Integer(), Type.Null()]),
      created_at: Type.Integer(),
    });

    app.get(
      '/admin/api/temporary-balances',
      {
        schema: {
          summary: 'The keys (accounts and child keys), newest first, searchable by key hash or refund address',
          querystring: Type.Object({ search: Search, ...Page }),
          response: {
            200: Type.Object({
              balances: Type.Array(KeyRow),
              total: Type.Integer(),
              totals: Type.Object({
                total_balance: Type.Integer(),
                total_spent: Type.Integer(),
                total_requests: Type.Integer(),
              }),
            }),
          },
        },
      },
      async (request) => {
        const search = request.query.search?.trim() || null;
        const [rows, totals] = await Promise.all([
          keysPage(db.kysely, search, request.query.limit, request.query.offset),
          keysTotals(db.kysely, search),
        ]);
        return {
          balances: rows.map((row) => ({
            hashed_key: row.hashed_key,
            balance: Number(row.balance),
            total_spent: Number(row.total_spent),
            total_requests: Number(row.total_requests),
            refund_address: row.refund_address,
            // A top-level key's expiry refunds it; a child key's ends it (Routstr's validity_date).
            key_expiry_time: row.parent_key_hash === null ? seconds(nullableNumber(row.expires_at)) : null,
            parent_key_hash: row.parent_key_hash,
            balance_limit: nullableNumber(row.balance_limit),
            balance_limit_reset: row.balance_limit_reset,
            validity_date: row.parent_key_hash === null ? null : seconds(nullableNumber(row.expires_at)),
            created_at: seconds(Number(row.created_at)),
          })),
          total: Number(totals.total),
          totals: {
            total_balance: Number(totals.total_balance),
            total_spent: Number(totals.total_spent),
            total_requests: Number(totals.total_requests),
          },
        };
      },
    );

    app.patch(
      '/admin/api/apikeys/:hashed_key',
      {
        schema: {
          summary: 'Change a child key’s spending limit, its reset period or its validity date',
          params: Type.Object({ hashed_key: Sha256Hex }),
          body: Type.Object({
            balance_limit: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_AMOUNT }), Type.Null()])),
            balance_limit_reset: Type.Optional(Type.Union([...RESET_PERIODS.map((p) => Type.Literal(p)), Type.Null()])),
            validity_date: Type.Optional(
              Type.Union([Type.Integer({ minimum: 0, maximum: 253_402_300_799 }), Type.Null()]),
            ),
          }),
          response: {
            200: Type.Object({
              hashed_key: Type.String(),
              balance_limit: Type.Union([Type.Integer(), Type.Null()]),
              balance_limit_reset: Type.Union([Type.String(), Type.Null()]),
              validity_date: Type.Union([Type.Integer(), Type.Null()]),
            }),
          },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const hash = request.params.hashed_key;
        const body = request.body;
        return writeTransaction(db, async (trx) => {
          const child = await childKeyByHash(trx, hash);
          if (!child) {
            if (await accountExistsByHash(trx, hash)) {
              throw operatorError(
                400,
                'not_a_child_key',
                'A top-level key has no limit but its balance: limits and validity dates are set on child keys',
              );
            }
            throw operatorError(404, 'not_found', 'API key not found');
          }
          // Routstr's semantics: a field left out or null is left as it is.
          const change: Parameters<typeof updateChildKeyLimits>[2] = {};
          if (body.balance_limit != null) change.limit_msat = body.balance_limit;
          if (body.balance_limit_reset != null) change.reset_period = body.balance_limit_reset;
          if (body.validity_date != null) change.expires_at = body.validity_date * 1000;
          const before = {
            balance_limit: nullableNumber(child.limit_msat),
            balance_limit_reset: child.reset_period,
            validity_date: seconds(nullableNumber(child.expires_at)),
          };
          await updateChildKeyLimits(trx, child.id, change);
          const after = {
            balance_limit: change.limit_msat ?? before.balance_limit,
            balance_limit_reset: change.reset_period ?? before.balance_limit_reset,
            validity_date: change.expires_at === undefined ? before.validity_date : seconds(change.expires_at),
          };
          await recordAudit(trx, { actor, action: 'apikey.update', target: hash, before, after });
          return { hashed_key: hash, ...after };
        });
      },
    );

    app.get(
      '/admin/api/transactions',
      {
        schema: {
          summary: 'Ecash in (tokens redeemed) and out (refunds, withdrawals), newest first',
          querystring: Type.Object({
            type: Type.Optional(Type.Union([Type.Literal('in'), Type.Literal('out')])),
            status: Type.Optional(Type.String({ maxLength: 20 })),
            source: Type.Optional(Type.String({ maxLength: 20 })),
            search: Search,
            ...Page,
          }),
        },
      },
      async (request) => {
        const q = request.query;
        const filter = {
          type: q.type ?? null,
          status: q.status || null,
          source: q.source || null,
          search: q.search?.trim() || null,
          limit: q.limit,
          offset: q.offset,
        };
        const [rows, total] = await Promise.all([
          transactionsPage(db.kysely, filter),
          countTransactions(db.kysely, filter),
        ]);
        return {
          transactions: rows.map((op) => {
            const incoming = op.kind !== 'issue';
            const msat = Number(incoming ? op.credit_msat : op.debit_msat);
            const source = op.purpose === 'withdraw' ? 'admin' : op.purpose === 'payment' ? 'x-cashu' : 'apikey';
            return {
              id: String(op.id),
              // The journal keeps a token's sha256, not the token: a bearer secret has no place in a list.
              token: null,
              token_hash: op.token_hash,
              amount: msatToUnit(msat, op.unit),
              unit: op.unit,
              mint_url: op.mint_url,
              type: incoming ? 'in' : 'out',
              request_id: null,
              created_at: seconds(Number(op.created_at)),
              collected: op.state === 'done',
              swept: false,
              source,
              api_key_hashed_key: op.credit_key_hash,
              kind: op.kind,
              purpose: op.purpose,
              status: transactionStatus(op.state, incoming, op.purpose, op.claimed_at),
            };
          }),
          total,
        };
      },
    );

    app.get(
      '/admin/api/lightning-invoices',
      {
        schema: {
          summary: 'Lightning invoices that fund keys, newest first',
          querystring: Type.Object({
            status: Type.Optional(Type.String({ maxLength: 20 })),
            purpose: Type.Optional(Type.String({ maxLength: 20 })),
            search: Search,
            ...Page,
          }),
        },
      },
      async (request) => {
        const q = request.query;
        const filter = {
          status: q.status || null,
          purpose: q.purpose || null,
          search: q.search?.trim() || null,
          limit: q.limit,
          offset: q.offset,
        };
        const [rows, total] = await Promise.all([invoicesPage(db.kysely, filter), countInvoices(db.kysely, filter)]);
        return {
          invoices: rows.map((row) => ({
            id: row.id,
            bolt11: row.bolt11,
            amount_sats: Number(row.amount_sats),
            description: `quartet ${row.purpose}`,
            // Routstr's UI shortens it: a string always.
            payment_hash: row.payment_hash ?? '',
            status: row.status,
            api_key_hash: row.api_key_hash,
            purpose: row.purpose,
            mint_url: row.mint_url,
            created_at: seconds(Number(row.created_at)),
            expires_at: seconds(Number(row.expires_at)),
            paid_at: seconds(nullableNumber(row.paid_at)),
            balance_limit: null,
            balance_limit_reset: null,
            validity_date: null,
          })),
          total,
        };
      },
    );
  };
}

const nullableNumber = (value: number | string | null) => (value === null ? null : Number(value));

/**
 * Routstr's statuses (its UI knows these four): an admin withdrawal is `issued` once made; a refund
 * is `collected` once an answer carried it; ecash in is `collected` once redeemed.
 */
function transactionStatus(state: string, incoming: boolean, purpose: string, claimedAt: number | null): string {
  if (state !== 'done') return 'pending';
  if (incoming) return 'collected';
  if (purpose === 'withdraw') return 'issued';
  return claimedAt === null ? 'pending' : 'collected';
}
