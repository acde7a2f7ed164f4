// `quartet dev-mint`: runs the development mint until SIGINT/SIGTERM.
import type { Command } from '../cli.js';
import type { Env } from '../env.js';
import { LABEL, startDevMint, type DevMintOptions } from './index.js';
import { isUnit, UNITS } from '../cashu/index.js';

const SYNOPSIS =
  'usage: quartet dev-mint [--port 3338] [--host 127.0.0.1] [--unit sat|msat] [--fee-ppk N] [--seed TEXT] ' +
  '[--state FILE] [--auto-pay|--no-auto-pay] [--log]';
const USAGE = `${SYNOPSIS}

A Cashu mint with a fake Lightning backend, for development and tests.
It is a ${LABEL}.
Mint quotes are paid automatically unless --no-auto-pay (then POST /dev/quotes/{id}/pay).
--state FILE keeps spent proofs, quotes and the seed in a JSON file across restarts.
Dev routes: POST /dev/tokens, GET|POST|DELETE /dev/faults, POST /dev/quotes/{id}/pay, POST /dev/invoices,
POST /dev/melts/fail-next, POST /dev/keysets/rotate (see docs/devmint.md).`;

export class UsageError extends Error {}

/** Parses the command's arguments; throws UsageError with a one-line reason. */
export function parseArgs(args: string[]): DevMintOptions & { help?: boolean } {
  const options: DevMintOptions & { help?: boolean } = { port: 3338, autoPay: true };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=')
        ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
        : [arg, undefined];
    const value = () => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    const integer = (min: number, max: number) => {
      const v = value();
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
        throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got "${v}"`);
      }
      return Number(v);
    };
    switch (flag) {
      case '--port':
        options.port = integer(0, 65535);
        break;
      case '--host':
        options.host = value();
        break;
      case '--unit': {
        const unit = value();
        if (!isUnit(unit)) throw new UsageError(`--unit must be one of ${UNITS.join(', ')}, got "${unit}"`);
        options.unit = unit;
        break;
      }
      case '--fee-ppk':
        options.inputFeePpk = integer(0, 100_000);
        break;
      case '--seed':
        options.seed = value();
        break;
      case '--state':
        options.stateFile = value();
        break;
      case '--auto-pay':
        options.autoPay = true;
        break;
      case '--no-auto-pay':
        options.autoPay = false;
        break;
      case '--log':
        options.logger = true;
        break;
      case '--help':
      case '-h':
        options.help = true;
        break;
      default:
        throw new UsageError(`unknown option "${arg}"`);
    }
  }
  return options;
}

export const devMintCommand: Command = {
  summary: `run a development Cashu mint (${LABEL})`,
  async run(args: string[], _env: Env) {
    let options;
    try {
      options = parseArgs(args);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      console.error(`quartet dev-mint: ${error.message}\n${USAGE}`);
      return 2;
    }
    if (options.help) {
      console.log(USAGE);
      return 0;
    }
    const mint = await startDevMint(options);
    console.log(
      [
        '==================================================================',
        ` quartet dev mint: a ${LABEL}`,
        ` url      ${mint.url}`,
        ` unit     ${mint.unit}   keyset ${mint.keysetId()}`,
        ` keys     ${keysNote(options)}`,
        ` quotes   ${options.autoPay ? 'paid automatically' : 'paid by POST /dev/quotes/{id}/pay'}`,
        '==================================================================',
      ].join('\n'),
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await mint.close();
    return 0;
  },
};

function keysNote(options: DevMintOptions): string {
  if (options.stateFile) return `kept with the state in ${options.stateFile}`;
  if (options.seed === undefined) return 'random (pass --seed or --state to keep them across restarts)';
  return 'derived from --seed';
}
