// `quartet dev-mint`: argument parsing, and the real command as a child process.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wallet } from '@cashu/cashu-ts';
import { afterAll, describe, expect, test } from 'vitest';
import { devMintCommand, parseArgs, UsageError } from '../../src/devmint/cli.js';

describe('parseArgs', () => {
  test('defaults: port 3338, quotes paid automatically', () => {
    expect(parseArgs([])).toEqual({ port: 3338, autoPay: true });
  });

  test('every option, with a space or an =', () => {
    expect(
      parseArgs([
        '--port',
        '0',
        '--host=0.0.0.0',
        '--unit',
        'msat',
        '--fee-ppk=100',
        '--seed',
        'demo',
        '--state',
        'mint.json',
        '--no-auto-pay',
        '--log',
      ]),
    ).toEqual({
      port: 0,
      host: '0.0.0.0',
      unit: 'msat',
      inputFeePpk: 100,
      seed: 'demo',
      stateFile: 'mint.json',
      autoPay: false,
      logger: true,
    });
  });

  test.each([
    [['--unit', 'usd'], /--unit must be one of sat, msat/],
    [['--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['--fee-ppk', '-1'], /--fee-ppk must be an integer/],
    [['--seed'], /--seed needs a value/],
    [['--frobnicate'], /unknown option "--frobnicate"/],
  ])('%j is refused', (args, message) => {
    expect(() => parseArgs(args)).toThrow(UsageError);
    expect(() => parseArgs(args)).toThrow(message);
  });
});

describe('quartet dev-mint as a process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'devmint-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function run(args: string[]) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'dev-mint', ...args], {
      cwd: join(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const url = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        const match = /url\s+(http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`dev-mint exited with ${code}: ${output}`)));
    });
    url.catch(() => {}); // awaited by the tests that expect a URL; others expect the exit
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, url, exited, output: () => output };
  }

  test('prints a banner naming it a development tool, serves the NUT routes, stops on SIGTERM with 0', async () => {
    const mint = run(['--port', '0', '--no-auto-pay', '--state', join(dir, 'state.json')]);
    const url = await mint.url;
    expect(mint.output()).toContain('DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE');
    const info = await (await fetch(`${url}/v1/info`)).json();
    expect(info.name).toContain('DEVELOPMENT TOOL');
    // A wallet mints through the dev route that pays quotes.
    const wallet = new Wallet(url);
    await wallet.loadMint();
    const quote = await wallet.createMintQuoteBolt11(8);
    expect((await fetch(`${url}/dev/quotes/${quote.quote}/pay`, { method: 'POST' })).status).toBe(200);
    expect((await wallet.mintProofsBolt11(8, quote.quote)).length).toBe(1);
    // And hands out tokens for demos.
    const minted = await (
      await fetch(`${url}/dev/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"amount":16}',
      })
    ).json();
    expect(minted).toEqual({ token: expect.stringMatching(/^cashuB/), amount: 16, unit: 'sat' });
    expect((await wallet.receive(minted.token)).reduce((sum, p) => sum + p.amount.toNumber(), 0)).toBe(16);
    mint.child.kill('SIGTERM');
    expect(await mint.exited).toBe(0);
  });

  test('bad arguments: exit code 2 and the usage on stderr', async () => {
    const errors: string[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args.join(' '));
    try {
      expect(await devMintCommand.run(['--unit', 'usd'], {})).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors.join('\n')).toContain('usage: quartet dev-mint');
  });
});
