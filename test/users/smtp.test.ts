// With SMTP_URL the reset mail goes out over SMTP (to a small SMTP server run by the test on
// loopback) and is marked sent in the outbox.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newPerson, startTasksServer, type TestServer } from './helpers.js';

/** Just enough SMTP (RFC 5321) to accept messages; collects each message's DATA. */
function smtpSink(): Promise<{ server: Server; port: number; messages: string[] }> {
  const messages: string[] = [];
  const server = createServer((socket) => {
    let buffer = '';
    let data: string | null = null;
    socket.write('220 sink ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (data !== null) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          messages.push(data + buffer.slice(0, end));
          buffer = buffer.slice(end + 5);
          data = null;
          socket.write('250 queued\r\n');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 sink\r\n');
        else if (verb === 'DATA') {
          data = '';
          socket.write('354 go on\r\n');
        } else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => {});
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as any).port, messages })),
  );
}

describe('reset mail over SMTP', () => {
  let sink: Awaited<ReturnType<typeof smtpSink>>;
  let server: TestServer;
  beforeAll(async () => {
    sink = await smtpSink();
    server = await startTasksServer('sqlite', {
      SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
      SMTP_FROM: 'quartet <noreply@example.test>',
    });
  });
  afterAll(async () => {
    await server?.close();
    sink?.server.close();
  });

  it('delivers the code by SMTP and marks the outbox entry sent', async () => {
    const person = newPerson('smtp');
    await call(server.url, 'POST', '/api/users/register', { json: person });
    expect(
      (await call(server.url, 'POST', '/api/users/forgotpassword/request', { json: { email: person.email } })).status,
    ).toBe(202);
    for (let i = 0; i < 250 && sink.messages.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sink.messages).toHaveLength(1);
    expect(sink.messages[0]).toMatch(new RegExp(`To: ${person.email}`, 'i'));
    const code = /Reset code: ([A-Za-z0-9_-]{43})/.exec(sink.messages[0])?.[1];
    expect(code).toBeTruthy();
    let sent;
    for (let i = 0; i < 250 && !sent?.sent_at; i++) {
      sent = await server.db.kysely
        .selectFrom('mail_outbox')
        .selectAll()
        .where('recipient', '=', person.email)
        .executeTakeFirst();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(sent?.sent_at).toBeTruthy();
    const reset = await call(server.url, 'PUT', '/api/users/forgotpassword', {
      json: { email: person.email, password: 'mailed passphrase 5', token: code },
    });
    expect(reset.status).toBe(204);
  });
});
