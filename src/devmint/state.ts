// The optional state file of a dev mint (`--state FILE`): everything it must remember to stay
// honest across restarts (spent proofs, signed outputs, quotes, invoices). Keys are not stored:
// they are derived again from the seed kept here.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Unit } from '../cashu/index.js';
import type { LedgerSnapshot } from './ledger.js';
import type { Invoice } from './lightning.js';
import type { MeltQuote } from './melt.js';
import type { MintQuote } from './quotes.js';

export interface MintState {
  version: 1;
  seed: string;
  unit: Unit;
  ledger: LedgerSnapshot;
  invoices: Invoice[];
  mintQuotes: MintQuote[];
  meltQuotes: MeltQuote[];
}

export function readState(file: string): MintState | undefined {
  if (!existsSync(file)) return undefined;
  const state = JSON.parse(readFileSync(file, 'utf8')) as MintState;
  if (state.version !== 1 || typeof state.seed !== 'string') throw new Error(`${file}: not a dev mint state file`);
  return state;
}

/** Written whole to a temporary file and renamed, so a crash never leaves half a file. */
export function writeState(file: string, state: MintState) {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(state));
  renameSync(temporary, file);
}

export function randomSeed(): string {
  return randomBytes(32).toString('hex');
}
