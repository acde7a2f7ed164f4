// The proxy's per-app state, shared by its two registrations (wallet routes and forwarding):
// one NodeWallet per app, and the contributors to `GET /` (the billing part adds the models).
// Keyed by the service context, which server.ts creates once per mounted service.
import type { ServiceContext } from '../services.js';
import { NodeWallet, type WalletLogger } from './wallet.js';

export type NodeInfoContributor = () => Record<string, unknown> | Promise<Record<string, unknown>>;

export interface ProxyState {
  wallet: NodeWallet;
  /** Functions whose fields are merged into the node information of `GET /`. */
  nodeInfo: NodeInfoContributor[];
}

const states = new WeakMap<ServiceContext, ProxyState>();

/** The proxy state of this app, created on first use. */
export function proxyState(context: ServiceContext, log?: WalletLogger): ProxyState {
  let state = states.get(context);
  if (!state) {
    state = { wallet: new NodeWallet(context.db, context.config.proxy, log), nodeInfo: [] };
    states.set(context, state);
  }
  return state;
}

/** Adds fields to `GET /` (e.g. `models` with their pricing). Later contributors win on a clash. */
export function addNodeInfo(context: ServiceContext, contributor: NodeInfoContributor): void {
  proxyState(context).nodeInfo.push(contributor);
}
