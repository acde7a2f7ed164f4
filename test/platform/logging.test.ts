import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions, redactSecrets } from '../../src/http/logging.js';
import { HttpError } from '../../src/http/errors.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
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
});
