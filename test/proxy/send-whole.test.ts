// A whole answer written with one writeHead past Fastify's reply.send (forward.ts, sendWhole): the
// headers the reply held and the route's own, one value per name, the body's own length, the
// onResponse hooks run.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { callerResponseHeaderList, callerResponseHeaders, sendWhole } from '../../src/proxy/forward/forward.js';

describe('a whole answer written past reply.send', () => {
  it("sends the reply's headers and the route's, the route's value winning, with the body's length", async () => {
    const app = Fastify();
    const seen: string[] = [];
    app.addHook('onRequest', (_request, reply, done) => {
      reply.header('vary', 'Origin').header('access-control-allow-origin', 'https://app.example');
      done();
    });
    app.addHook('onSend', (_request, _reply, payload, done) => {
      seen.push('onSend');
      done(null, payload);
    });
    app.addHook('onResponse', (_request, reply, done) => {
      seen.push(`onResponse ${reply.statusCode}`);
      done();
    });
    app.post('/', async (_request, reply) => {
      reply.header('x-cashu-reserved-msat', 16);
      const upstream = {
        'access-control-allow-origin': '*',
        'content-type': 'application/json',
        'content-length': '999',
        'content-encoding': 'gzip',
        'set-cookie': ['a=1', 'b=2'],
        'x-upstream': ['one', 'two'],
        connection: 'keep-alive',
        date: 'Tue, 01 Jan 2019 00:00:00 GMT',
        server: 'uvicorn',
      };
      sendWhole(
        reply,
        201,
        ['x-cost', '7', ...callerResponseHeaderList(upstream, { dropLength: true })],
        Buffer.from('{}'),
      );
    });
    const response = await app.inject({ method: 'POST', url: '/' });
    // A Refund-LNURL address is kept by an onSend hook before the answer goes: such an answer goes through reply.send.
    const withAddress = await app.inject({ method: 'POST', url: '/', headers: { 'refund-lnurl': 'a@example.com' } });
    await app.close();
    expect(withAddress.headers).toMatchObject({
      'x-cost': '7',
      'content-length': '2',
      'access-control-allow-origin': '*',
    });
    expect(withAddress.body).toBe('{}');
    expect(response.statusCode).toBe(201);
    expect(response.body).toBe('{}');
    expect(response.headers).toMatchObject({
      vary: 'Origin',
      'access-control-allow-origin': '*',
      'x-cashu-reserved-msat': '16',
      'x-cost': '7',
      'content-type': 'application/json',
      'content-length': '2',
      'x-upstream': ['one', 'two'],
    });
    // Dropped: the upstream's length and encoding (the body was rewritten), its cookies (the node's
    // own header), hop-by-hop headers.
    expect(response.headers['content-encoding']).toBeUndefined();
    expect(response.headers['set-cookie']).toBeUndefined();
    // As nginx: the node's own Date, no Server naming the provider's software.
    expect(response.headers.date).toMatch(/ GMT$/);
    expect(response.headers.date).not.toBe('Tue, 01 Jan 2019 00:00:00 GMT');
    expect(response.headers.server).toBeUndefined();
    // One value: the upstream's (a second Access-Control-Allow-Origin would make browsers refuse the answer).
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(seen).toEqual(['onResponse 201', 'onSend', 'onResponse 201']);
  });

  it('keeps the list and the object of caller headers alike', () => {
    const upstream = { 'content-type': 'text/plain', etag: '"1"', te: 'trailers', 'x-a': 'b', 'x-cashu': 'cashuB' };
    expect(callerResponseHeaderList(upstream)).toEqual(['content-type', 'text/plain', 'etag', '"1"', 'x-a', 'b']);
    expect({ ...callerResponseHeaders(upstream) }).toEqual({ 'content-type': 'text/plain', etag: '"1"', 'x-a': 'b' });
    expect(callerResponseHeaderList(upstream, { dropLength: true })).toEqual([
      'content-type',
      'text/plain',
      'x-a',
      'b',
    ]);
  });
});
