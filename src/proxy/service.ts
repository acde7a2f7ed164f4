// The proxy node (docs/proxy-wallet.md, docs/proxy-billing.md). Its routes are `/`, `/admin/`,
// `/v1/wallet/…` and the catch-all that forwards every unclaimed path upstream. Its parts are
// built here, once, and handed to the routes that use them.
import cluster from 'node:cluster';
import { errorHandlerFor, openAiStyle } from '../http/errors.js';
import { installJsonParser } from '../http/json-depth.js';
import type { ServiceDefinition } from '../services.js';
import { Authenticator, parseAuthorization } from './keys/accounts.js';
import { registerAdminRoutes } from './admin/admin.js';
import { authRoutes } from './operator/auth-routes.js';
import { healthRoutes } from './operator/health-routes.js';
import { nodeRoutes } from './operator/node-routes.js';
import { logsRoutes } from './operator/logs-routes.js';
import { usageRoutes } from './operator/usage-routes.js';
import { UsageAnalytics } from './usage/usage.js';
import { registerOperatorApi } from './operator/operator-api.js';
import { OperatorAuth } from './operator/operator-auth.js';
import { Billing } from './billing/billing.js';
import { ChildKeys } from './keys/child-keys.js';
import { ExpiryRefunds } from './lightning/expiry-refunds.js';
import { registerForwardRoutes } from './forward/forward-routes.js';
import { registerKeyExpiry } from './keys/key-expiry.js';
import { registerKeyRoutes } from './keys/key-routes.js';
import { registerLightningRoutes } from './lightning/lightning-routes.js';
import { buildLightning } from './lightning/lightning-service.js';
import { registerNodeInfoRoutes } from './nostr/node-info.js';
import { startAnnouncement } from './nostr/nostr.js';
import { loadModels, Pricing } from './billing/pricing.js';
import { providerRoutes } from './operator/provider-routes.js';
import { settingsRoutes } from './operator/settings-routes.js';
import { watchConfig } from './settings/config-watch.js';
import {
  applySettings,
  buildSeed,
  loadSnapshot,
  type RuntimeSnapshot,
  seedIfFresh,
  seedSettings,
} from './settings/runtime-config.js';
import { ProviderCatalog } from './forward/provider-models.js';
import { startRecovery } from './wallet/recovery.js';
import { RedemptionLimit } from './keys/redeem-limit.js';
import { NodeWallet } from './wallet/wallet.js';
import { Upstreams } from './forward/upstreams.js';
import { registerWalletRoutes } from './wallet-routes.js';

export const service: ServiceDefinition = {
  name: 'proxy',
  openapi: { title: 'quartet proxy node', version: '0.0.1' },
  async register(app, context) {
    app.setErrorHandler(errorHandlerFor(openAiStyle));
    // Routstr's clients POST `Content-Type: application/json` with no body to top up and refund.
    installJsonParser(app, { emptyIsNoBody: true });
    const { db } = context;
    const config = context.config.proxy;

    const wallet = new NodeWallet(db, config, app.log);
    const authenticator = new Authenticator(db, wallet, config.mintTimeoutMs);
    const redemptionLimit = new RedemptionLimit(db, wallet, config.redeemLimitPerMinute);
    // The providers, their models and the node's settings live in the database (settings/), seeded from
    // the files and environment on a fresh database; every process polls for changes and swaps them in.
    const envKey = config.nostr.key;
    // What the files and environment say, as read at start (before the database's settings replace them).
    const fileProviders = config.forward.providers;
    const envSettings = seedSettings(config);
    const startSeed = () => buildSeed(fileProviders, loadModels(config.forward.modelsFile), envSettings, Date.now());
    await seedIfFresh(db, startSeed);
    const snapshot = await loadSnapshot(db.kysely, config);
    if (!snapshot) throw new Error('the run-time configuration was not seeded');
    applySettings(config, snapshot.settings, envKey);
    config.forward.providers = snapshot.providers;
    // The providers and the models they serve (forward/provider-models.ts); fetched model lists are read now
    // and again every PROXY_PROVIDERS_REFRESH_SECONDS.
    let catalog = new ProviderCatalog(snapshot.providers, new Map());
    await catalog.refresh(config.forward, app.log);
    const pricing = new Pricing(config.forward, app.log, catalog.models);
    const upstream = new Upstreams(config.forward, catalog, app.log, context.metrics);
    const refreshLists = (of: ProviderCatalog) =>
      of
        .refresh(config.forward, app.log)
        // A list read for a catalog a reload has replaced meanwhile is not used.
        .then(() => of === catalog && pricing.replaceModels(of.models));
    const refreshModels = setInterval(() => {
      if (!catalog.fetches) return;
      // Not unhandled: the next refresh tries again.
      refreshLists(catalog).catch((error) => app.log.error({ err: error }, 'refreshing the provider models failed'));
    }, config.forward.providersRefreshMs).unref();
    app.addHook('onClose', async () => clearInterval(refreshModels));
    // With WORKERS > 1 the primary announces the node (src/workers.ts), not each worker.
    let announcement = cluster.isWorker ? null : startAnnouncement(config, app.log);
    const reannounce = async () => {
      await announcement?.stop();
      if (!cluster.isWorker) announcement = startAnnouncement(config, app.log);
    };
    app.addHook('onClose', async () => announcement?.stop());
    // A reload: new catalog, prices and providers swapped in one tick (a request reserved before keeps
    // the price it reserved at: forward/billed-exchange.ts holds it), the old providers' pools closed
    // once their requests are done.
    const applySnapshot = async (next: RuntimeSnapshot) => {
      const fresh = new ProviderCatalog(next.providers, new Map());
      const complete = fresh.adoptFetched(catalog);
      catalog = fresh;
      config.forward.providers = next.providers;
      pricing.replaceModels(fresh.models);
      upstream
        .replace(next.providers, fresh)
        .catch((error) => app.log.warn({ err: error }, 'closing a replaced provider failed'));
      if (applySettings(config, next.settings, envKey)) await reannounce();
      if (!complete) {
        refreshLists(fresh).catch((error) => app.log.error({ err: error }, 'reading the provider models failed'));
      }
      app.log.info({ version: next.version, providers: next.providers.length }, 'run-time configuration applied');
    };
    const configWatch = watchConfig(db, config, snapshot.version, applySnapshot, app.log);
    app.addHook('onClose', async () => configWatch.stop());
    const billing = new Billing(db, config.forward, app.log, context.metrics);
    const lightning = buildLightning(db, wallet, config, app.log);

    // Finish what a crash or an unreachable mint left unfinished: now, then periodically.
    // Started once the server is ready: a first pass during start-up would have its mint requests'
    // time limits run out while the routes' schemas are compiled on the same thread.
    let recovery: ReturnType<typeof startRecovery> | undefined;
    app.addHook('onReady', async () => {
      recovery = startRecovery(wallet, config.recoveryIntervalMs, app.log, [lightning.recoverOnce]);
    });
    billing.start();
    app.addHook('onClose', async () => recovery?.stop());
    // Expired keys with a Refund-LNURL address are paid to it (lightning/expiry-refunds.ts); every process
    // runs the job, each account is taken by one.
    const expiryRefunds = new ExpiryRefunds(db, lightning.payments, config.lightning, app.log);
    app.addHook('onReady', async () => expiryRefunds.start());
    app.addHook('onClose', async () => expiryRefunds.stop());
    app.addHook('onClose', async () => {
      await billing.close();
      await upstream.close();
    });

    // A token as the bearer is redeemed by whichever route authenticates it (the wallet routes and
    // forwarding alike), so this hook covers every route of the proxy (see keys/redeem-limit.ts). A
    // callback hook: it runs on every request, and an async one costs a promise each time.
    app.addHook('onRequest', (request, _reply, done) => {
      const header = request.headers.authorization;
      // A key's header (nearly every request) is told apart without parsing it: a token starts "cashu".
      if (header === undefined || !header.includes('cashu')) return done();
      const credential = parseAuthorization(header);
      if (credential?.kind !== 'token') return done();
      redemptionLimit.countToken(request.ip, credential.token).then(() => done(), done);
    });
    registerKeyExpiry(app, { db, authenticator });

    registerNodeInfoRoutes(app, { config, wallet, pricing });
    const childKeys = new ChildKeys(db, authenticator);
    await registerWalletRoutes(app, { db, wallet, authenticator, redemptionLimit, lightning, childKeys });
    await registerKeyRoutes(app, { db, authenticator, childKeys });
    await registerLightningRoutes(app, {
      db,
      lightning,
      authenticator,
      invoicesPerMinute: config.redeemLimitPerMinute,
    });
    await registerForwardRoutes(app, {
      db,
      config: config.forward,
      wallet,
      authenticator,
      redemptionLimit,
      pricing,
      upstream,
      billing,
    });
    // The operator's API (Routstr's /admin/api/…) and page share one way of signing in.
    const auth = new OperatorAuth(db, config.forward.adminPassword, config.forward.adminSessionMs, context.identity);
    // Usage analytics: a job rolls the ledger up off the request path (usage/store.ts).
    const usage = new UsageAnalytics(db, app.log);
    app.addHook('onReady', async () => usage.start());
    app.addHook('onClose', async () => usage.stop());
    const operatorDeps = { db, config, auth, runtime: { reload: configWatch.check, envKey, startSeed } };
    await registerOperatorApi(app, operatorDeps, [
      authRoutes(operatorDeps),
      nodeRoutes({ ...operatorDeps, wallet }),
      providerRoutes(operatorDeps),
      settingsRoutes(operatorDeps),
      healthRoutes(operatorDeps, upstream),
      usageRoutes(usage),
      logsRoutes(context.logs),
    ]);
    await registerAdminRoutes(app, context, wallet, lightning, auth);
  },
};
