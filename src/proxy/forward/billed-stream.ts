// A billed SSE answer, passed on event by event (docs/proxy-billing.md). Billed from the usage
// event (the node's cost fields are added to it, before `[DONE]`); nothing is sent after
// `[DONE]`. An X-Cashu payment streams live only when asked (`X-Cashu-Stream: live`; by default
// billed-sse-whole.ts answers it whole): its change is not in the headers, which leave before the
// cost is known: it waits with the token's account for POST /v1/balance/refund with the same
// X-Cashu (docs/proxy-billing.md explains why not half of it).
// If the caller leaves after its first event, the upstream is still read to its usage (before it:
// the upstream request is aborted, nothing is charged); if the upstream ends without usage, what
// was delivered is billed by estimate (nothing delivered: nothing charged).
import type { OutgoingHttpHeaders } from 'node:http';
import { finished, type Readable } from 'node:stream';
import { type BilledExchange, errorWithChange, settleDelivered } from './billed-exchange.js';
import { callerResponseHeaders, ROUTSTR_REQUEST_ID_HEADER, upstreamFailure } from './forward.js';
import { costJson, estimateUsage, withUsageCost } from '../billing/metering.js';
import { SseMeter, withFields, type SseEvent } from '../billing/metering-stream.js';
import { availableMsat } from '../wallet/store.js';

export async function sendBilledStream(
  billed: BilledExchange,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { deps, reply, request, reservation, caller } = billed;
  const res = reply.raw;
  const xCashu = billed.payer.payment === 'x-cashu';
  // Written straight to the caller's socket, as a bare `pipeline` would: a Readable handed to
  // reply.send() between the two cost a stream hop, its ticks and reads, on every event
  // (bench/README.md, "Issue 18"). Fastify's onResponse hooks (log, metrics) still run on 'finish'.
  let started = false;
  const start = () => {
    started = true;
    reply.hijack();
    if (res.destroyed) return;
    reply
      .headers(callerResponseHeaders(headers, { dropLength: true }))
      .header('cache-control', 'no-cache')
      // The cost is not known yet: Routstr's node buffers the stream to send it as headers; quartet
      // sends it in the usage chunk only (docs/proxy-billing.md, "Cost in answers").
      .header(ROUTSTR_REQUEST_ID_HEADER, request.id);
    res.writeHead(status, reply.getHeaders() as OutgoingHttpHeaders);
  };

  /** Passes bytes on; false when the caller has enough for now (wait for drainedOrClosed). */
  const pass = (bytes: Buffer | string): boolean => {
    if (caller.gone || res.destroyed) return true;
    if (!started) start();
    caller.answering();
    return res.write(bytes);
  };
  /** Waits for the caller to take more, or to be gone. */
  const drainedOrClosed = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });

  const meter = new SseMeter(billed.metered.kind);
  const estimate = () => estimateUsage(billed.metered.raw.length, meter.contentBytes);
  /** Whether settling has begun: settled, or waiting for the database to come back (settleDelivered). */
  let billedYet = false;
  let failure: unknown = null;
  /** The usage event, billed and passed on with the node's cost fields. */
  const settleAndPass = async (event: SseEvent) => {
    billedYet = true;
    const settled = await settleDelivered(billed, event.usage, estimate, status);
    if (!settled) {
      // Charged once the database is back; the caller gets the event without the node's cost fields.
      if (!pass(event.bytes)) await drainedOrClosed();
      return;
    }
    const cost = costJson(settled);
    const refundable = xCashu
      ? { refundable_msat: (await availableMsat(deps.db.kysely, billed.payer.accountId)) ?? 0 }
      : {};
    const fields = { cost: { ...cost, ...refundable } };
    if (!pass(event.json ? withFields(event, { ...fields, ...withUsageCost(event.json, cost) }) : event.bytes)) {
      await drainedOrClosed();
    }
  };
  /**
   * Passes events on from `from`; true once nothing more may be (`[DONE]`, or a caller who left
   * before its first event: events still buffered are not billed). Synchronous unless an event has
   * to wait (the usage event's settling, a caller slow to take them): then a promise of the same.
   */
  const handle = (events: SseEvent[], from = 0): boolean | Promise<boolean> => {
    for (let i = from; i < events.length; i++) {
      const event = events[i];
      if (caller.cancelled) return true;
      const waiting = !billedYet && event.usage ? settleAndPass(event) : pass(event.bytes) ? null : drainedOrClosed();
      if (waiting) return waiting.then(() => event.done || handle(events, i + 1));
      if (event.done) return true;
    }
    return false;
  };
  /** A chunk that is one usual event (SseMeter.takeUsual), passed on without being split into events. */
  const handleUsual = (chunk: Buffer): boolean | Promise<boolean> => {
    if (caller.cancelled) return true;
    return pass(chunk) ? false : drainedOrClosed().then(() => false);
  };
  try {
    const onChunk = (chunk: Buffer) => (meter.takeUsual(chunk) ? handleUsual(chunk) : handle(meter.push(chunk)));
    if (!(await passChunks(body, onChunk))) await handle(meter.end());
  } catch (error) {
    failure = error;
  }
  if (!billedYet) {
    try {
      if (meter.contentBytes > 0 && !caller.cancelled) await settleDelivered(billed, null, estimate, status);
      else {
        const reason = caller.cancelled
          ? 'the caller left before the answer began'
          : failure
            ? `stream failed: ${(failure as Error).message}`
            : 'stream ended without content or usage';
        await deps.billing.release(reservation, reason, status);
      }
    } catch (error) {
      // Nothing sent yet: an error answer. Once the stream began, nobody would end it: cut it
      // (the reservation is released, now or once the database is back: billed-forward's abandon).
      if (!started) throw error;
      request.log.error({ err: error }, 'a stream could not be settled; cut');
      res.destroy(error as Error);
      return reply;
    }
  }
  if (failure && !caller.gone) {
    // Nothing sent yet: an error answer (502/504) instead of a stream.
    if (!started) throw await errorWithChange(billed, upstreamFailure(failure));
    // The upstream broke the stream: break ours too, so the caller sees it was cut short.
    request.log.warn({ err: failure }, 'upstream stream failed');
    res.destroy(failure as Error);
    return reply;
  }
  if (!started) start();
  if (!res.destroyed) res.end();
  return reply;
}

/**
 * Reads the upstream's chunks as they come ('data': no promise a chunk) into `onChunk`, the body
 * paused while a chunk's promise is pending; once `onChunk` says the end passed, the rest is only
 * read to free the connection. Resolves with whether it did; rejects when the body fails.
 */
function passChunks(body: Readable, onChunk: (chunk: Buffer) => boolean | Promise<boolean>): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let ended = false;
    /** A chunk's work under way: the body may fail meanwhile, but the outcome waits for it (no double settling). */
    let pending: Promise<void> | null = null;
    const fail = (error: unknown) => {
      body.destroy(error as Error);
    };
    body.on('data', (chunk: Buffer) => {
      if (ended) return;
      try {
        const result = onChunk(chunk);
        if (typeof result === 'boolean') ended = result;
        else {
          body.pause();
          pending = result.then((done) => {
            ended = done;
            pending = null;
            body.resume();
          }, fail);
        }
      } catch (error) {
        fail(error);
      }
    });
    finished(body, (error) => {
      void (pending ?? Promise.resolve()).then(() => (error ? reject(error) : resolve(ended)));
    });
  });
}
