import { spawn, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { accessLog, loggerOptions, redactSecrets } from '../../src/http/logging.js';
import { HttpError } from '../../src/http/errors.js';
import { RequestLogger } from '../../src/http/request-logger.js';
import { TSX_LOADER } from '../support/process.js';

/** A stream keeping each line written to it. */
function lineStream() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, stream };
}

function capture() {
  const { lines, stream } = lineStream();
  const options = loggerOptions('info') as pino.LoggerOptions;
  return { log: pino(options, stream), text: () => lines.join('') };
}

describe('log redaction', () => {
  it('censors secret-keyed fields at any depth, in arrays too, without touching the logged object', () => {
    const logged = {
      user: { email: 'a@example.com', Password: 'hunter2' },
      calls: [{ headers: { authorization: 'Bearer sk-1', accept: '*/*' } }],
      token: 'cashuB1',
    };
    const clean = redactSecrets(logged);
    expect(clean).toEqual({
      user: { email: 'a@example.com', Password: '[REDACTED]' },
      calls: [{ headers: { authorization: '[REDACTED]', accept: '*/*' } }],
      token: '[REDACTED]',
    });
    expect(logged.user.Password).toBe('hunter2');
    expect(logged.calls[0].headers.authorization).toBe('Bearer sk-1');
    const plain = { a: 1, b: { c: [1, 2] } };
    expect(redactSecrets(plain)).toBe(plain);
  });

  it('keeps secrets out of logged objects and logged errors alike', () => {
    const { log, text } = capture();
    log.info({ body: { password: 'pw-0001', name: 'n' }, 'x-cashu': 'cashuBsecret0002' }, 'a line');
    const error = new HttpError(402, 'pay', { headers: { 'x-cashu': 'cashuBchange0003' } });
    log.error({ err: error }, 'failed');
    const out = text();
    for (const secret of ['pw-0001', 'cashuBsecret0002', 'cashuBchange0003']) expect(out).not.toContain(secret);
    expect(out).toContain('"name":"n"');
    expect(out).toContain('"message":"pay"');
  });

  it('writes an error given as its message as that message', () => {
    const { log, text } = capture();
    log.warn({ err: 'no model with a usable price in its list' }, 'reading a provider model list failed');
    expect(JSON.parse(text()).err).toBe('no model with a usable price in its list');
  });
});

describe('the access log', () => {
  it.each([
    ["pino's child", undefined],
    ['the request logger made when used', RequestLogger.factory],
  ])("writes, without pino's serializers, the very line pino writes (%s per request)", async (_name, factory) => {
    const { lines, stream } = lineStream();
    const app = Fastify({
      logger: { ...(loggerOptions('info') as object), stream },
      disableRequestLogging: true,
      childLoggerFactory: factory,
    });
    const [direct, throughPino] = [accessLog(app.log, true), accessLog(app.log, false)];
    app.addHook('onResponse', (request, reply, done) => {
      direct(request, reply);
      throughPino(request, reply);
      done();
    });
    app.get('/*', async (request, reply) =>
      reply.code(Number((request.query as { code?: string }).code ?? 200)).send(),
    );
    const urls = [
      '/v1/models',
      '/v1/wallet/balance?api_key=sk-secret-0001&x=1',
      '/p/%22quoted%22/%5Cback?token=cashuBsecret0002',
      '/caf%C3%A9/\u00e9?code=404',
    ];
    for (const url of urls) await app.inject({ url, headers: { 'x-request-id': 'req-"1"' } });
    await app.close();
    expect(lines).toHaveLength(urls.length * 2);
    for (let i = 0; i < lines.length; i += 2) {
      const time = /"time":\d+/;
      expect(lines[i].replace(time, '"time":0')).toBe(lines[i + 1].replace(time, '"time":0'));
      expect(JSON.parse(lines[i]).msg).toBe('request completed');
    }
    expect(lines.join('')).not.toMatch(/sk-secret-0001|cashuBsecret0002/);
    expect(JSON.parse(lines[6]).status).toBe(404);
  });

  it("logs a request's own lines with its id, at the node's level or its route's", async () => {
    const { lines, stream } = lineStream();
    const app = Fastify({
      logger: { ...(loggerOptions('info') as object), stream },
      disableRequestLogging: true,
      childLoggerFactory: RequestLogger.factory,
      genReqId: (request) => String(request.headers['x-request-id']),
    });
    app.get('/', async (request) => {
      request.log.debug('not at info');
      request.log.warn({ token: 'cashuBsecret0003' }, 'a warning');
      expect(request.log.level).toBe('info');
      return {};
    });
    app.get('/verbose', { logLevel: 'debug' }, async (request) => {
      request.log.debug('at debug here');
      return {};
    });
    await app.inject({ url: '/', headers: { 'x-request-id': 'req-7' } });
    await app.inject({ url: '/verbose', headers: { 'x-request-id': 'req-8' } });
    await app.close();
    const logged = lines.map((line) => JSON.parse(line));
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({ level: 40, reqId: 'req-7', msg: 'a warning', token: '[REDACTED]' });
    expect(logged[1]).toMatchObject({ level: 20, reqId: 'req-8', msg: 'at debug here' });
  });

  it('writes the line of a server error through pino, as an error', async () => {
    const { lines, stream } = lineStream();
    const app = Fastify({ logger: { ...(loggerOptions('info') as object), stream }, disableRequestLogging: true });
    const log = accessLog(app.log, true);
    app.addHook('onResponse', (request, reply, done) => {
      log(request, reply);
      done();
    });
    app.get('/', async (_request, reply) => reply.code(503).send());
    await app.inject({ url: '/' });
    await app.close();
    const line = JSON.parse(lines.find((text) => text.includes('"status":503'))!);
    expect(line).toMatchObject({ level: 50, msg: 'request failed', req: { method: 'GET', url: '/' } });
  });
});

/** A script logging through the background standard output (as `serve` does), in a process of its own. */
const LOGGING = new URL('../../src/http/logging.ts', import.meta.url).href;
const loggingScript = (body: string) => [
  '--import',
  TSX_LOADER,
  '--input-type=module',
  '-e',
  `import pino from 'pino'; import { stdoutDestination } from '${LOGGING}';
   const log = pino({ base: null, timestamp: false }, stdoutDestination(false)); ${body}`,
];
const lineNumbers = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).n);

describe('standard output written in the background', () => {
  const many = Array.from({ length: 5000 }, (_, n) => n);

  it('writes every line, in order, when the process ends by running out of work', () => {
    const run = spawnSync(process.execPath, loggingScript('for (let n = 0; n < 5000; n++) log.info({ n });'), {
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(lineNumbers(run.stdout)).toEqual(many);
  });

  it("calls logger.flush's callback once what was logged before it is written", () => {
    const script = `import { writeSync } from 'node:fs';
      for (let n = 0; n < 50; n++) log.info({ n });
      log.flush(() => { writeSync(1, 'flushed\\n'); process.exit(0); });
      setTimeout(() => {}, 30_000);`;
    const run = spawnSync(process.execPath, loggingScript(script), { encoding: 'utf8', timeout: 20_000 });
    const lines = run.stdout.trim().split('\n');
    expect(lines.at(-1)).toBe('flushed');
    expect(lineNumbers(lines.slice(0, -1).join('\n'))).toEqual(many.slice(0, 50));
  });

  it('writes a lone line within moments while the process goes on', async () => {
    const child = spawn(process.execPath, loggingScript('log.info({ n: 7 }); setTimeout(() => {}, 30_000);'));
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += String(chunk)));
    try {
      await expect.poll(() => stdout, { timeout: 10_000 }).toContain('"n":7');
    } finally {
      child.kill();
    }
  });
});
