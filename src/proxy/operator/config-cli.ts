// `quartet proxy-config import`: replaces the run-time configuration in the database (providers,
// models, settings) with what PROXY_PROVIDERS_FILE (or PROXY_UPSTREAM_URL), PROXY_MODELS_FILE and the
// environment say now; every running process sharing the database applies it within seconds. Audited.
import type { Command } from '../../cli.js';
import { openDatabase, writeTransaction } from '../../db/index.js';
import { migrate } from '../../db/migrate.js';
import { loadFullConfig, serviceMigrations } from '../../services.js';
import { loadModels } from '../billing/pricing.js';
import { buildSeed, replaceWithSeed, seedSettings } from '../settings/runtime-config.js';
import { allProviders } from '../settings/store.js';
import { recordAudit } from './audit.js';

const USAGE = 'usage: quartet proxy-config import';

export const command: Command = {
  summary: 'proxy node: import the providers, models and settings of the files and environment into the database',
  async run(args, env) {
    if (args.length !== 1 || args[0] !== 'import') {
      console.error(USAGE);
      return 2;
    }
    const config = loadFullConfig(env);
    const proxy = config.proxy;
    const seed = buildSeed(
      proxy.forward.providers,
      loadModels(proxy.forward.modelsFile),
      seedSettings(proxy),
      Date.now(),
    );
    const db = await openDatabase(config.database);
    try {
      await migrate(db, serviceMigrations);
      await writeTransaction(db, async (trx) => {
        const before = (await allProviders(trx)).map((row) => row.slug);
        await replaceWithSeed(trx, seed);
        await recordAudit(trx, {
          actor: 'cli',
          action: 'config.import',
          target: 'config',
          before: { providers: before },
          after: { providers: seed.providers.map((p) => p.row.slug), settings: seed.settings },
        });
      });
    } finally {
      await db.close();
    }
    const models = seed.providers.reduce((n, p) => n + p.models.length, 0);
    console.log(`imported ${seed.providers.length} provider(s) and ${models} model(s)`);
    return 0;
  },
};
