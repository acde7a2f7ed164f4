// `quartet <command>`: serve (default), migrate, and the services' admin commands.
import './noproto.js';
import './tick-shape.js';
import { migrateDatabase } from './db/migrate.js';
import { ConfigError, loadEnv, type Env } from './env.js';
import { loadFullConfig, serviceMigrations } from './services.js';

export interface Command {
  summary: string;
  run(args: string[], env: Env): Promise<number | void>;
}

const commands: Record<string, () => Promise<Command>> = {
  serve: async () => ({
    summary: 'serve the mounted services (default)',
    async run(_args, env) {
      const config = loadFullConfig(env);
      const { isWorkerProcess, runPrimary } = await import('./workers.js');
      if (config.workers > 1 && !isWorkerProcess()) return runPrimary(config);
      const { startServer } = await import('./server.js');
      await startServer(config);
      return undefined;
    },
  }),
  migrate: async () => ({
    summary: 'apply pending database migrations and exit',
    async run(_args, env) {
      const applied = await migrateDatabase(loadFullConfig(env).database, serviceMigrations);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
      return 0;
    },
  }),
  'fake-upstream': async () => (await import('./fakeupstream/command.js')).command,
  users: async () => (await import('./users/cli.js')).command,
  'proxy-config': async () => (await import('./proxy/operator/config-cli.js')).command,
  'dev-mint': async () => (await import('./devmint/cli.js')).devMintCommand,
};

function usage(): string {
  return [
    'usage: quartet <command> [options]',
    '',
    'commands:',
    ...Object.keys(commands).map((name) => `  ${name}`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number | void> {
  const [name = 'serve', ...args] = argv;
  if (name === 'help' || name === '--help' || name === '-h') {
    console.log(usage());
    return 0;
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined; // not `constructor`
  if (!load) {
    console.error(`quartet: unknown command "${name}"\n${usage()}`);
    return 2;
  }
  const command = await load();
  return command.run(args, loadEnv());
}

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exit(code);
  },
  (error) => {
    if (error instanceof ConfigError) {
      console.error(`quartet: invalid configuration: ${error.message}`);
      process.exit(2);
    }
    console.error(`quartet: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
