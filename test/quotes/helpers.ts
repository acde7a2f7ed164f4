// Helpers of the quotation API tests: a server with the users and tasks API and the quotation
// API, a signed OneSky client, uploads.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseKind } from '../support/databases.js';
import { request, type Answer } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

export type { Answer };

export const FIXTURES = join(import.meta.dirname, '../fixtures/quotes');
export const fixture = (name: string) => readFileSync(join(FIXTURES, name));

export const QUOTES_ENV: Record<string, string> = {
  SERVICES: 'tasks,quotes',
  USERS_SCRYPT_N: '16384',
  QUARTET_SECRET_KEY: '7a'.repeat(32),
  USERS_REGISTER_ADDRESS_LIMIT: '100000',
  USERS_LOGIN_ADDRESS_LIMIT: '100000',
  QUOTES_IMPORT_POLL_MS: '100',
};

export function startQuotesServer(
  kind: DatabaseKind,
  env: Record<string, string> = {},
  database?: TestServer['database'],
): Promise<TestServer> {
  return startTestServer(kind, { env: { ...QUOTES_ENV, ...env }, database });
}

let counter = 0;

/** A user of the users and tasks API with a OneSky key pair, and a client that signs every request. */
export class Client {
  constructor(
    readonly base: string,
    readonly apiKey: string,
    readonly apiSecret: string,
    readonly token: string,
  ) {}

  static async create(base: string): Promise<Client> {
    counter += 1;
    const tag = `quoter${process.pid}x${counter}`;
    const person = {
      first_name: 'Grace',
      last_name: 'Hopper',
      email: `${tag}@example.test`,
      username: tag,
      password: `long password ${tag} ok`,
    };
    const registered = await request(`${base}/api/users/register`, 'POST', { json: person });
    if (registered.status !== 201) throw new Error(`register ${registered.status} ${registered.text}`);
    const login = await request(`${base}/api/users/login`, 'POST', {
      json: { email: person.email, password: person.password },
    });
    const { token } = login.body as { token: string };
    const keys = await request(`${base}/api/users/apikeys`, 'POST', { token });
    if (keys.status !== 201) throw new Error(`apikeys ${keys.status} ${keys.text}`);
    const { api_key, api_secret } = keys.body as { api_key: string; api_secret: string };
    return new Client(base, api_key, api_secret, token);
  }

  /** The three OneSky authentication parameters for now (or a given timestamp). */
  auth(timestamp = Math.floor(Date.now() / 1000), secret = this.apiSecret): Record<string, string> {
    return {
      api_key: this.apiKey,
      timestamp: String(timestamp),
      dev_hash: createHash('md5').update(`${timestamp}${secret}`).digest('hex'),
    };
  }

  signed(path: string, auth = this.auth()): string {
    return `${path}${path.includes('?') ? '&' : '?'}${new URLSearchParams(auth)}`;
  }

  async call(
    method: string,
    path: string,
    options: {
      json?: unknown;
      form?: FormData;
      /** A body as it is (e.g. a form-encoded one, with its content type in `headers`). */
      body?: string;
      auth?: Record<string, string> | null;
      headers?: Record<string, string>;
    } = {},
  ): Promise<Answer> {
    const url = this.base + (options.auth === null ? path : this.signed(path, options.auth ?? this.auth()));
    const body = options.form ?? options.body;
    return request(url, method, { json: options.json, body, headers: options.headers });
  }

  get(path: string) {
    return this.call('GET', path);
  }

  async createProject(base = 'en-US', targets: string[] = ['de-DE', 'ja-JP']): Promise<number> {
    const answer = await this.call('POST', '/1/projects', {
      json: { name: 'hello-c', base_locale: base, target_locales: targets },
    });
    if (answer.status !== 201) throw new Error(`create project ${answer.status} ${answer.text}`);
    return answer.body.data.id;
  }

  /** Uploads a file and returns the import id (the import runs in the background). */
  async upload(
    projectId: number,
    name: string,
    content: Buffer | string,
    format: string,
    extra: Record<string, string> = {},
  ): Promise<Answer> {
    const form = new FormData();
    form.append('file_format', format);
    for (const [key, value] of Object.entries(extra)) form.append(key, value);
    form.append('file', new Blob([new Uint8Array(typeof content === 'string' ? Buffer.from(content) : content)]), name);
    return this.call('POST', `/1/projects/${projectId}/files`, { form });
  }

  /** [strings, words] of a quotation's translation_only (flags: `&is_including_…=0` …). */
  async quoteCounts(projectId: number, file: string, locale: string, flags = ''): Promise<number[]> {
    const path = `/1/projects/${projectId}/quotations?files=${encodeURIComponent(file)}&to_locale=${locale}${flags}`;
    const answer = await this.get(path);
    if (answer.status !== 200) throw new Error(`quotation ${answer.status} ${answer.text}`);
    return [answer.body.data.translation_only.string_count, answer.body.data.translation_only.word_count];
  }

  /**
   * Polls the import task until it is no longer in progress. A deadline, not a number of polls:
   * a 100k-string import on a busy machine takes minutes (the import's own time-out ends a stuck one).
   */
  async waitImport(projectId: number, importId: number, timeoutMs = 300_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const task = await this.get(`/1/projects/${projectId}/import-tasks/${importId}`);
      if (task.status !== 200) throw new Error(`import task ${task.status} ${task.text}`);
      if (task.body.data.status !== 'in-progress') return task.body.data;
      if (Date.now() > deadline) throw new Error(`import ${importId} did not finish within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async importFile(
    projectId: number,
    name: string,
    content: Buffer | string,
    format: string,
    extra: Record<string, string> = {},
  ): Promise<any> {
    const answer = await this.upload(projectId, name, content, format, extra);
    if (answer.status !== 201) throw new Error(`upload ${answer.status} ${answer.text}`);
    return this.waitImport(projectId, answer.body.data.import.id);
  }
}

/**
 * An import a process claimed and never ended (it died, or lost the database): running, with its
 * payload (other.pot) stored; its lease ran out unless `leaseUntil` says otherwise. Its id.
 */
export async function insertRunningImport(
  server: TestServer,
  projectId: number,
  fileName: string,
  options: { attempts?: number; leaseUntil?: number | null } = {},
): Promise<number> {
  const row = await server.db.kysely
    .insertInto('quote_imports')
    .values({
      project_id: projectId,
      file_name: fileName,
      format: 'GNU_PO',
      locale: 'en-US',
      keep_all_strings: 1,
      allow_same_as_original: 0,
      status: 'running',
      message: null,
      byte_count: 10,
      string_count: null,
      word_count: null,
      attempts: options.attempts ?? 1,
      created_at: Date.now(),
      started_at: Date.now() - 60_000,
      finished_at: null,
      lease_until: options.leaseUntil === undefined ? Date.now() - 1000 : options.leaseUntil,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await server.db.kysely
    .insertInto('quote_import_payloads')
    .values({ import_id: Number(row.id), payload: fixture('other.pot') })
    .execute();
  return Number(row.id);
}
