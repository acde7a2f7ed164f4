// A billed SSE answer, passed on event by event (docs/proxy-billing.md). Billed from the usage
// event (the node's cost fields are added to it, before `[DONE]`); nothing is sent after
// `[DONE]`. An X-Cashu payment's change is not in the headers, which leave before the cost is
// known (the stream is never buffered): it waits with the token's account for POST
// /v1/balance/refund with the same X-Cashu (docs/proxy-billing.md explains why not half of it).
// If the caller leaves after its first event, the upstream is still read to its usage (before it:
// the upstream request is aborted, nothing is charged); if the upstream ends without usage, what
// was delivered is billed by estimate (nothing delivered: nothing charged).
import { Readable } from 'node:stream';
import { type BilledExchange, type Settled, settle } from './billed-exchange.js';
import { callerResponseHeaders, ROUTSTR_REQUEST_ID_HEADER } from './forward.js';
import { costJson, estimateUsage, withUsageCost } from './metering.js';
import { SseMeter, withFields } from './metering-stream.js';
import { availableMsat } from './store.js';

export async function sendBilledStream(
  billed: BilledExchange,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { deps, reply, request, reservation, caller } = billed;
  // What the caller receives: events are pushed as they come (no Writable side to go through);
  // `read` is called when the caller has taken what was pushed, and frees a waiting write.
  let taken: (() => void) | null = null;
  const out = new Readable({
    read() {
      taken?.();
    },
  });
  const xCashu = billed.payer.payment === 'x-cashu';
  reply
    .code(status)
    .headers(callerResponseHeaders(headers, { dropLength: true }))
    .header('cache-control', 'no-cache')
    // The cost is not known yet: Routstr's node buffers the stream to send it as headers; quartet
    // sends it in the usage chunk only (docs/proxy-billing.md, "Cost in answers").
    .header(ROUTSTR_REQUEST_ID_HEADER, request.id)
    .send(out);

  const write = async (bytes: Buffer | string) => {
    if (caller.gone || out.destroyed) return;
    caller.answering();
    if (!out.push(bytes)) await takenOrClosed();
  };
  /** Waits for the caller to take more, or to be gone. */
  const takenOrClosed = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        taken = null;
        out.off('close', done);
        reply.raw.off('close', done);
        resolve();
      };
      taken = done;
      out.on('close', done);
      reply.raw.on('close', done);
    });

  const meter = new SseMeter(billed.metered.kind);
  const estimate = () => estimateUsage(billed.metered.raw.length, meter.contentBytes);
  let settled: Settled | null = null;
  let failure: unknown = null;
  const handle = async (events: ReturnType<SseMeter['push']>) => {
    for (const event of events) {
      if (caller.cancelled) return true; // left before its first event: events still buffered are not billed
      if (settled === null && event.usage) {
        settled = await settle(billed, event.usage, estimate, status);
        const cost = costJson(settled);
        const refundable = xCashu
          ? { refundable_msat: (await availableMsat(deps.db.kysely, billed.payer.accountId)) ?? 0 }
          : {};
        await write(
          event.json
            ? withFields(event, { cost: { ...cost, ...refundable }, ...withUsageCost(event.json, cost) })
            : event.bytes,
        );
      } else {
        await write(event.bytes);
      }
      if (event.done) return true;
    }
    return false;
  };
  try {
    let finished = false;
    for await (const chunk of body) {
      if (finished) continue; // nothing after [DONE]; the rest is read only to free the connection
      finished = await handle(meter.push(chunk as Buffer));
    }
    if (!finished) await handle(meter.end());
  } catch (error) {
    failure = error;
  }
  if (settled === null) {
    if (meter.contentBytes > 0 && !caller.cancelled) {
      settled = await settle(billed, null, estimate, status);
    } else {
      const reason = caller.cancelled
        ? 'the caller left before the answer began'
        : failure
          ? `stream failed: ${(failure as Error).message}`
          : 'stream ended without content or usage';
      await deps.billing.release(reservation, reason, status);
    }
  }
  if (failure && !caller.gone) {
    // The upstream broke the stream: break ours too, so the caller sees it was cut short.
    request.log.warn({ err: failure }, 'upstream stream failed');
    out.destroy(failure as Error);
    return reply;
  }
  out.push(null);
  return reply;
}
