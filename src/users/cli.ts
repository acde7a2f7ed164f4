// `quartet users …`: create accounts (the only way, with the bootstrap variables, to make an
// admin), list them, and read the reset-mail outbox when no SMTP server is configured.
import { parseArgs } from 'node:util';
import type { Command } from '../cli.js';
import { openDatabase } from '../db/index.js';
import { migrate } from '../db/migrate.js';
import type { Env } from '../env.js';
import { HttpError } from '../http/errors.js';
import { loadFullConfig, serviceMigrations } from '../services.js';
import { Accounts, publicUser } from './accounts.js';

const USAGE = `usage:
  quartet users create [--admin] --email E --username U [--first-name F] [--last-name L] --password-stdin
  quartet users list
  quartet users outbox [--all]`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

async function withAccounts<T>(env: Env, work: (accounts: Accounts) => Promise<T>): Promise<T> {
  const config = loadFullConfig(env);
  const db = await openDatabase(config.database);
  try {
    await migrate(db, serviceMigrations);
    return await work(new Accounts(db, config.users));
  } finally {
    await db.close();
  }
}

export const command: Command = {
  summary: 'manage users: create (admins too), list, read the reset-mail outbox',
  async run(args, env) {
    const [sub, ...rest] = args;
    if (sub === 'create') {
      const { values } = parseArgs({
        args: rest,
        options: {
          admin: { type: 'boolean', default: false },
          email: { type: 'string' },
          username: { type: 'string' },
          'first-name': { type: 'string', default: 'Admin' },
          'last-name': { type: 'string', default: 'User' },
          'password-stdin': { type: 'boolean', default: false },
        },
      });
      if (!values.email || !values.username || !values['password-stdin']) {
        console.error(USAGE);
        return 2;
      }
      const password = await readStdin();
      return withAccounts(env, async (accounts) => {
        try {
          const user = await accounts.register(
            {
              email: values.email!,
              username: values.username!,
              first_name: values['first-name']!,
              last_name: values['last-name']!,
              password,
            },
            values.admin ? 'admin' : 'user',
          );
          console.log(`created ${user.role} ${user.email} (id ${user.id})`);
          return 0;
        } catch (error) {
          if (!(error instanceof HttpError)) throw error;
          console.error(`quartet users create: ${error.message}`);
          return 1;
        }
      });
    }
    if (sub === 'list') {
      return withAccounts(env, async (accounts) => {
        for (let offset = 0; ; offset += 100) {
          const { rows } = await accounts.store.listUsers(offset, 100);
          for (const row of rows.map(publicUser)) {
            console.log([row.id, row.role, row.email, row.username, row.created_at].join('\t'));
          }
          if (rows.length < 100) return 0;
        }
      });
    }
    if (sub === 'outbox') {
      const { values } = parseArgs({ args: rest, options: { all: { type: 'boolean', default: false } } });
      return withAccounts(env, async (accounts) => {
        const mails = await accounts.store.outbox(values.all!);
        if (!mails.length) {
          console.log(values.all ? 'the outbox is empty' : 'no unsent mail (--all shows sent ones too)');
        }
        for (const mail of mails) {
          console.log(
            `--- mail ${mail.id} to ${mail.recipient} at ${new Date(mail.created_at).toISOString()}` +
              (mail.sent_at ? ` (sent)` : mail.last_error ? ` (sending failed: ${mail.last_error})` : ''),
          );
          console.log(`Subject: ${mail.subject}\n\n${mail.body}\n`);
        }
        return 0;
      });
    }
    console.error(USAGE);
    return 2;
  },
};
