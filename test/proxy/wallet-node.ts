// The wallet tests' node in this process: a dev mint and a proxy node that takes its tokens.
// (fixtures/wallet-node.ts runs the node as a child process, to kill it.)
import { startDevMint, type DevMint, type DevMintOptions } from '../../src/devmint/index.js';
import type { DatabaseKind } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';

export interface WalletNode {
  mint: DevMint;
  server: TestServer;
  /** The node's base URL. */
  base: string;
}

/** A dev mint (sat, no fees unless `mintOptions` say) and a proxy node that takes its tokens, `env` on top. */
export async function startWalletNode(
  kind: DatabaseKind,
  env: Record<string, string> = {},
  mintOptions: Partial<DevMintOptions> = {},
): Promise<WalletNode> {
  const mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0, ...mintOptions });
  const server = await startTestServer(kind, { env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, ...env } });
  return { mint, server, base: server.url };
}

/** Closes what startWalletNode started, also when it failed half-way. */
export async function stopWalletNode(node: Partial<WalletNode>): Promise<void> {
  await node.server?.close();
  await node.mint?.close();
}

/** The database id of the account of an sk- key. */
export async function accountId(server: TestServer, key: string): Promise<number> {
  const row = await server.db.kysely
    .selectFrom('proxy_accounts')
    .select('id')
    .where('key_prefix', '=', key.slice(0, 12))
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The key's hour passes: its account's expiry is behind it, and so is its refund's schedule (if it has one). */
export async function expireAccount(server: TestServer, key: string): Promise<void> {
  const id = await accountId(server, key);
  const past = Date.now() - 1000;
  await server.db.kysely.updateTable('proxy_accounts').set({ expires_at: past }).where('id', '=', id).execute();
  await server.db.kysely
    .updateTable('proxy_expiry_refunds')
    .set({ next_attempt_at: past })
    .where('account_id', '=', id)
    .execute();
}
