// `npm run demo`: the prepaid proxy node end to end, on loopback only. It starts the dev mint
// and the fake upstream (development tools: no real money, no real model) and the node, then
// walks through mint → top-up → chat completion → streamed completion → balance → refund
// (and a per-request X-Cashu payment), printing each step.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { getTokenMetadata } from '@cashu/cashu-ts';
import { loadFullConfig } from '../src/services.js';
import { startDevMint } from '../src/devmint/index.js';
import { startFakeUpstream } from '../src/fakeupstream/index.js';
import { buildServer } from '../src/server.js';

const MODEL = 'openai/gpt-4o-mini';
let step = 0;
const show = (title: string, detail: unknown = '') => {
  const text = typeof detail === 'string' ? detail : JSON.stringify(detail, null, 2).replace(/\n/g, '\n   ');
  console.log(`\n${++step}. ${title}${detail === '' ? '' : `\n   ${text}`}`);
};
const short = (token: string) => `${token.slice(0, 24)}…${token.slice(-8)} (${token.length} characters)`;

async function json(response: Response) {
  const body = await response.json();
  if (!response.ok) throw new Error(`${response.status} ${JSON.stringify(body)}`);
  return body;
}

const dir = mkdtempSync(join(tmpdir(), 'quartet-demo-'));
const mint = await startDevMint({ unit: 'sat', port: 0 });
const upstream = await startFakeUpstream({ port: 0 });
const config = loadFullConfig({
  HOST: '127.0.0.1',
  DATABASE_URL: `sqlite:${join(dir, 'demo.db')}`,
  SERVICES: 'proxy',
  PROXY_MINTS: mint.url,
  PROXY_UPSTREAM_URL: upstream.url,
  PROXY_BTC_USD: process.env.PROXY_BTC_USD ?? '100000',
  PROXY_ADMIN_PASSWORD: 'demo-admin-password',
});
const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
const { app } = await buildServer(config, { logger: { level: 'warn', stream: quiet } });
await app.listen({ port: Number(process.env.DEMO_PORT ?? 0), host: '127.0.0.1' });
const node = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

try {
  console.log('quartet proxy node demo (dev mint and fake upstream: development tools, no real value)');
  console.log(`   dev mint       ${mint.url}`);
  console.log(`   fake upstream  ${upstream.url}`);
  console.log(`   proxy node     ${node}   (admin page: ${node}/admin/, password demo-admin-password)`);

  const info = await json(await fetch(`${node}/`));
  const priced = info.models.find((m: { id: string }) => m.id === MODEL);
  show(
    `The node prices ${info.models.length} models at BTC/USD ${info.btc_usd}; ${MODEL} costs (sat per token)`,
    priced.sats_pricing,
  );

  const first = await mint.mintToken(500);
  show('Mint: 500 sat from the dev mint (quote, fake Lightning payment, blind signatures)', short(first));

  const opened = await json(await fetch(`${node}/v1/wallet/`, { headers: { authorization: `Bearer ${first}` } }));
  const key: string = opened.api_key;
  show('Open an account: the token as bearer is redeemed once and names the account', {
    api_key: `${key.slice(0, 12)}…`,
    balance_msat: opened.balance,
  });

  const second = await mint.mintToken(1500);
  const topped = await json(
    await fetch(`${node}/v1/wallet/topup?ecash_token=${encodeURIComponent(second)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    }),
  );
  show('Top-up: another 1500 sat token, swapped at the mint and credited', topped);

  const client = new OpenAI({ baseURL: `${node}/v1`, apiKey: key, maxRetries: 0 });
  const { data: completion, response } = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'Tell me about prepaid proxies.' }], max_tokens: 40 })
    .withResponse();
  show('Chat completion with the openai SDK', {
    answer: completion.choices[0].message.content,
    usage: { prompt_tokens: completion.usage?.prompt_tokens, completion_tokens: completion.usage?.completion_tokens },
    'x-cashu-reserved-msat': response.headers.get('x-cashu-reserved-msat'),
    'x-cashu-cost-msat': response.headers.get('x-cashu-cost-msat'),
    'x-cost-input-msat': response.headers.get('x-cost-input-msat'),
    'x-cost-output-msat': response.headers.get('x-cost-output-msat'),
  });

  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Stream a short answer.' }],
    stream: true,
  });
  process.stdout.write(
    `\n${++step}. Streamed completion (usage forced upstream; the cost rides on the usage chunk)\n   `,
  );
  let cost: unknown;
  for await (const chunk of stream) {
    process.stdout.write(chunk.choices[0]?.delta?.content ?? '');
    if ((chunk as { cost?: unknown }).cost) cost = (chunk as { cost?: unknown }).cost;
  }
  console.log(`\n   cost: ${JSON.stringify(cost)}`);

  const balance = await json(await fetch(`${node}/v1/wallet/`, { headers: { authorization: `Bearer ${key}` } }));
  show('Balance', {
    balance: balance.balance,
    reserved: balance.reserved,
    total_spent: balance.total_spent,
    total_requests: balance.total_requests,
  });

  const paying = await mint.mintToken(20);
  const paid = await fetch(`${node}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-cashu': paying },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Paid per request.' }] }),
  });
  await paid.json();
  const change = paid.headers.get('x-cashu');
  show('Per-request payment: a 20 sat token in X-Cashu, no account needed', {
    status: paid.status,
    'x-cashu-cost-msat': paid.headers.get('x-cashu-cost-msat'),
    change: change ? `${short(change)} worth ${getTokenMetadata(change).amount} sat` : null,
  });

  const refund = await json(
    await fetch(`${node}/v1/wallet/refund`, { method: 'POST', headers: { authorization: `Bearer ${key}` } }),
  );
  show("Refund: the available balance back as a Cashu token of the account's mint", {
    msats: refund.msats,
    token: short(refund.token),
  });

  const after = await json(await fetch(`${node}/v1/wallet/`, { headers: { authorization: `Bearer ${key}` } }));
  show('Balance after the refund (what remains is below one sat)', { balance: after.balance });
  console.log('\nDone.');
} finally {
  await app.close();
  await upstream.close();
  await mint.close();
  rmSync(dir, { recursive: true, force: true });
}
