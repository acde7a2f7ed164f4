// The server the fuzz suite talks to: every service in one process (the test's own, so the
// prototype probe sees the server's objects), in front of a running fake upstream and dev mint,
// with live credentials of every area. Generated requests carry markers (~~name~~) that are
// replaced by these credentials as each request is sent, and re-armed after each batch (a
// generated request may well log the user out, delete it or refund the proxy key).
import { createHash } from 'node:crypto';
import { Pool, type Dispatcher } from 'undici';
import { startDevMint } from '../../src/devmint/index.js';
import { startFakeUpstream } from '../../src/fakeupstream/index.js';
import { TEST_MODEL, writeModelsFile } from '../proxy/forward-helpers.js';
import { info, openAccount, topup } from '../proxy/wallet-helpers.js';
import { Client } from '../quotes/helpers.js';
import type { DatabaseKind } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ADMIN, ADMIN_ENV, IMAGES, dataUrl, login, registerAndLogin, TEST_ENV } from '../users/helpers.js';
import type { Answer } from './checks.js';
import { FileValue, type FuzzRequest } from './openapi-arbitraries.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A request with no answer within this time hangs. */
export const REQUEST_TIMEOUT_MS = 10_000;

/** One proof (a power of two) keeps minting and redeeming cheap. */
const TOKEN_SAT = 256;
const POOL_OPTIONS = { connections: 8, keepAliveTimeout: 10_000 };

const PO_FILE = 'fuzz.po';
const PO = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "Hello world"\nmsgstr ""\n';
const XLIFF =
  '<xliff version="1.2"><file source-language="en" datatype="plaintext" original="a"><body>' +
  '<trans-unit id="a"><source>Hi</source></trans-unit></body></file></xliff>';

/** A small file of every upload format, some with prototype keys, and the format it is in. */
const SAMPLES = (
  [
    [PO_FILE, PO, 'GNU_PO'],
    ['strings.json', '{"menu":{"open":"Open"},"__proto__":{"polluted":"yes"}}', 'HIERARCHICAL_JSON'],
    ['strings.yml', 'en:\n  greeting: Hello\n  __proto__:\n    polluted: yes\n', 'YAML'],
    ['strings.xml', '<?xml version="1.0"?><resources><string name="a">Hi</string></resources>', 'ANDROID_XML'],
    ['Localizable.strings', '"hello" = "Hello";\n"constructor" = "x";\n', 'IOS_STRINGS'],
    ['a.xliff', XLIFF, 'XLIFF'],
  ] as const
).map(([name, text, format]) => [new FileValue(name, Buffer.from(text)), format] as const);
const SAMPLE_NAMES = SAMPLES.map(([file]) => file.name);

/** Values that reach past lookups and authentication, by parameter or property name. */
const HINTS = new Map<string, unknown[]>([
  ['id', ['~~task_id~~', '~~user_id~~']],
  ['user', ['~~user_id~~']],
  ['email', ['~~email~~', 'fuzz~~unique~~@example.test']],
  ['username', ['fuzz~~unique~~']],
  ['password', ['~~password~~', 'correct horse battery ~~unique~~']],
  ['current_password', ['~~password~~']],
  ['photo', [dataUrl('image/png', IMAGES.png), new FileValue('a.png', IMAGES.png), new FileValue('a.gif', IMAGES.gif)]],
  ['api_key', ['~~api_key~~']],
  ['project_id', ['~~project_id~~']],
  ['import_id', ['~~import_id~~']],
  ['order_id', ['~~order_id~~']],
  ['file', [...SAMPLES.map(([file]) => file), new FileValue('a.png', IMAGES.png)]],
  ['file_name', SAMPLE_NAMES],
  ['source_file_name', SAMPLE_NAMES],
  ['files', SAMPLE_NAMES],
  ['locale', ['de-DE', 'ja-JP', 'en-US']],
  ['to_locale', ['de-DE', 'ja-JP', 'fr-FR']],
  ['base_locale', ['en-US']],
  ['target_locales', ['de-DE', 'ja-JP']],
  // Each ~~cashu~~ is minted at the dev mint: a few of them go a long way.
  ['authorization', ['Bearer ~~sk~~', 'Bearer ~~sk~~', 'Bearer ~~sk~~', 'Bearer ~~cashu~~', 'Bearer sk-0', 'Basic e']],
  ['ecash_token', ['~~cashu~~', 'cashuBnotatoken', 'cashuAeyJ0b2tlbiI6W119']],
  ['model', [TEST_MODEL, 'test/embed']],
  ['path', ['v1/chat/completions', 'v1/completions', 'v1/embeddings', 'v1/responses', 'v1/models', 'v1/unknown']],
]);

export interface World {
  url: string;
  /** The published description of a service, as a client reads it. */
  document(name: string): Promise<any>;
  hints: Map<string, unknown[]>;
  /** Sends a generated request with its markers replaced; an error text when no answer came. */
  send(request: FuzzRequest): Promise<Answer | { error: string }>;
  /** Whether /healthz answers. */
  healthy(): Promise<boolean>;
  /** Makes every credential and id valid again. */
  rearm(): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(kind: DatabaseKind): Promise<World> {
  const upstream = await startFakeUpstream({ apiKey: 'operator-key' });
  const mint = await startDevMint({ unit: 'sat', port: 0 });
  const server: TestServer = await startTestServer(kind, {
    env: {
      ...TEST_ENV,
      ...ADMIN_ENV,
      SERVICES: 'proxy,tasks,quotes,docs',
      USERS_LOGIN_ACCOUNT_LIMIT: '100000',
      USERS_RESET_MAIL_LIMIT: '1000',
      QUOTES_IMPORT_POLL_MS: '50',
      PROXY_UPSTREAM_URL: upstream.url,
      PROXY_UPSTREAM_KEY: 'operator-key',
      PROXY_BTC_USD: '100000',
      PROXY_MODELS_FILE: writeModelsFile(),
      PROXY_MINTS: mint.url,
      PROXY_MINT_TIMEOUT_MS: '5000',
      PROXY_REDEEM_LIMIT_PER_MINUTE: '1000000',
      // FUZZ_LOG=error shows the server's own account of a failure.
      LOG_LEVEL: process.env.FUZZ_LOG ?? 'silent',
    },
  });
  const url = server.url;
  let pool = new Pool(url, POOL_OPTIONS);

  // Live credentials, replaced when a generated request spoils them.
  const live = new Map<string, string>();
  let user = await registerAndLogin(url, 'fuzz');
  let quotes = (await quotesClient(url, user.token))!;
  const tokens: string[] = [];
  const freshToken = async () => tokens.pop() ?? mint.mintToken(TOKEN_SAT);

  async function status(method: string, path: string, headers: Record<string, string> = {}): Promise<number> {
    const response = await fetch(url + path, { method, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await response.arrayBuffer();
    return response.status;
  }

  async function rearm() {
    if ((await status('GET', '/api/users/apikeys', bearer(user.token))) !== 200) {
      user = await login(url, user.email, user.password).then(
        ({ token }) => ({ ...user, token }),
        () => registerAndLogin(url, 'fuzz'),
      );
    }
    // The key pair and project stay while they work; a user at its key pair limit is replaced.
    if ((await quotes.client.get(`/1/projects/${quotes.projectId}`)).status !== 200) {
      const next = await quotesClient(url, user.token);
      if (!next) user = await registerAndLogin(url, 'fuzz');
      quotes = next ?? (await quotesClient(url, user.token))!;
    }
    const taskId = live.get('task_id');
    if (!taskId || (await status('GET', `/api/tasks/${taskId}`, bearer(user.token))) !== 200) {
      const created = await fetch(`${url}/api/tasks/create`, {
        method: 'POST',
        headers: { ...bearer(user.token), 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'fuzz task', description: 'kept alive by the fuzz suite' }),
      });
      live.set('task_id', ((await created.json()) as any).task.id);
    }
    const admin = live.get('admin');
    if (!admin || (await status('GET', '/api/users/all', bearer(admin))) !== 200) {
      const token = await login(url, ADMIN.email, ADMIN.password).then(
        ({ token }) => token,
        () => 'the-admin-is-gone',
      );
      live.set('admin', token);
    }
    const key = live.get('sk');
    const wallet = key ? await info(url, key) : null;
    if (!key || wallet?.status !== 200) live.set('sk', await openAccount(url, await freshToken()));
    else if (wallet.body.available < 100_000) await topup(url, key, await mint.mintToken(1024));
    while (tokens.length < 5) tokens.push(await mint.mintToken(TOKEN_SAT));
    live.set('token', user.token);
    live.set('user_id', user.id);
    live.set('email', user.email);
    live.set('password', user.password);
    live.set('api_key', quotes.client.apiKey);
    live.set('project_id', String(quotes.projectId));
    live.set('import_id', String(quotes.importId));
    live.set('order_id', String(quotes.orderId));
  }
  await rearm();

  let unique = 0;
  /** The text with its markers replaced: live values, a fresh token for each ~~cashu~~, a new number for ~~unique~~. */
  async function resolve(text: string): Promise<string> {
    if (!text.includes('~~')) return text;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const values = new Map(live);
    values.set('timestamp', timestamp);
    values.set('dev_hash', createHash('md5').update(`${timestamp}${quotes.client.apiSecret}`).digest('hex'));
    const parts = text.split(/~~([a-z_]+)~~/);
    for (let i = 1; i < parts.length; i += 2) {
      if (parts[i] === 'cashu') parts[i] = await freshToken();
      else if (parts[i] === 'unique') parts[i] = String(++unique);
      else parts[i] = values.get(parts[i]) ?? `~~${parts[i]}~~`;
    }
    return parts.join('');
  }

  async function send(request: FuzzRequest): Promise<Answer | { error: string }> {
    const headers: string[] = [];
    for (const [name, value] of request.headers) {
      headers.push(name, (await resolve(value)).replace(/[^\t\x20-\x7e\x80-\xff]/g, '?'));
    }
    let body = request.body;
    if (typeof body === 'string') body = await resolve(body);
    else if (body) body = Buffer.from(await resolve(Buffer.from(body).toString('latin1')), 'latin1');
    // undici refuses other characters in a path, and a refused request keeps its connection busy.
    const encode = (c: string) => encodeURIComponent(c.replace(/[\ud800-\udfff]/u, '\ufffd'));
    const path = (await resolve(request.path)).replace(/[^\x21-\xff]/gu, encode);
    const answer = pool
      .request({
        method: request.method as Dispatcher.HttpMethod,
        path,
        headers,
        body,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
      .then(async (response) => {
        const text = await response.body.text();
        const type = response.headers['content-type'];
        return { status: response.statusCode, contentType: [type ?? ''].flat().join(', '), text };
      })
      .catch((error: Error) => ({ error: String(error?.message ?? error) }));
    // A last resort against a stuck client: the pool is replaced, the request reported.
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<{ error: string }>((resolve) => {
      timer = setTimeout(() => {
        void pool.destroy();
        pool = new Pool(url, POOL_OPTIONS);
        resolve({ error: `no answer within ${REQUEST_TIMEOUT_MS + 2000} ms` });
      }, REQUEST_TIMEOUT_MS + 2000);
    });
    const result = await Promise.race([answer, stalled]);
    clearTimeout(timer);
    return result;
  }

  return {
    url,
    hints: HINTS,
    document: async (name) => (await fetch(`${url}/openapi/${name}.json`)).json(),
    send,
    healthy: async () => (await status('GET', '/healthz').catch(() => 0)) === 200,
    rearm,
    async close() {
      await pool.close();
      await server.close();
      await mint.close();
      await upstream.close();
    },
  };
}

/** A OneSky key pair of the user (null when it may have no more), a project with a file of each format, an order. */
async function quotesClient(url: string, token: string) {
  const keys = await fetch(`${url}/api/users/apikeys`, { method: 'POST', headers: bearer(token) });
  if (keys.status !== 201) return null;
  const { api_key, api_secret } = (await keys.json()) as { api_key: string; api_secret: string };
  const client = new Client(url, api_key, api_secret, token);
  const projectId = await client.createProject('en-US', ['de-DE', 'ja-JP']);
  const imports = [];
  for (const [file, format] of SAMPLES) {
    imports.push(await client.importFile(projectId, file.name, Buffer.from(file.bytes), format));
  }
  const imported = imports[0];
  const json = { files: [PO_FILE], to_locale: 'de-DE' };
  const order = await client.call('POST', `/1/projects/${projectId}/orders`, { json });
  if (order.status !== 201) throw new Error(`order ${order.status} ${order.text}`);
  return { client, projectId, importId: imported.id, orderId: order.body.data.id };
}
