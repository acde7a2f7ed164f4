// Area A part 2: the catch-all that forwards every unclaimed path upstream, and /admin/.
// Billed paths (model-using POSTs, see metering.ts) are priced, reserved, forwarded and settled
// from the upstream's usage; every other path is forwarded as a stream, free, to a valid key.
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { PaymentRequest } from '@cashu/cashu-ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import { nestedDeeperThan } from '../http/json-depth.js';
import type { ServiceContext } from '../services.js';
import { authenticateAccountId, forgetAccount } from './accounts.js';
import { limitTokenRedemption } from './redeem-limit.js';
import { isUnderPrefix, LOCAL_PREFIXES } from '../services.js';
import { registerAdminRoutes } from './admin.js';
import { Billing, type Reservation, type ReserveRequest } from './billing.js';
import {
  CallerConnection,
  callerResponseHeaders,
  COST_HEADERS,
  RESERVED_HEADER,
  Upstream,
  upstreamFailure,
  upstreamRequestHeaders,
} from './forward.js';
import {
  billedKind,
  billedUsage,
  costJson,
  estimateUsage,
  meterRequest,
  normalizePath,
  planReservation,
  readUsage,
  upstreamBody,
  type MeteredRequest,
  type ReportedUsage,
  type ReservationPlan,
  type Usage,
} from './metering.js';
import { SseMeter, withFields } from './metering-stream.js';
import { costOf, pricingFor, type Cost, type Model, type Price } from './pricing.js';
import { addNodeInfo, proxyState } from './state.js';
import { looksLikeToken } from './tokens.js';
import type { NodeWallet } from './wallet.js';

const FORWARD_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH'] as const;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How long, in all, a refused reservation waits for its account's requests in flight to finish. */
const RESERVATION_WAIT_MS = 2000;
/**
 * Paths that never go upstream: the platform's local prefixes and this node's own namespaces.
 * The router matched the catch-all on the raw URL, so check again after dot segments resolve.
 */
const NEVER_FORWARDED = [...LOCAL_PREFIXES, '/admin', '/v1/wallet'];

interface Deps {
  context: ServiceContext;
  upstream: Upstream;
  billing: Billing;
  wallet: NodeWallet;
}

export async function registerForwardRoutes(app: FastifyInstance, context: ServiceContext) {
  const config = context.config.proxy.forward;
  const deps: Deps = {
    context,
    upstream: new Upstream(config),
    billing: new Billing(context.db, config, app.log, context.metrics),
    wallet: proxyState(context, app.log).wallet,
  };
  const pricing = pricingFor(context.config, app.log);
  // GET / (wallet-routes.ts) shows each model with its prices in USD and in sats.
  addNodeInfo(context, () => pricing.infoModels());
  deps.billing.start();
  app.addHook('onClose', async () => {
    await deps.billing.close();
    await deps.upstream.close();
  });

  await app.register(async (scope) => {
    // Bodies are not parsed here: they stream upstream as they come (billed ones are read below).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.route({
      method: [...FORWARD_METHODS],
      url: '/*',
      exposeHeadRoute: false,
      schema: {
        summary: 'Forward to the upstream',
        description:
          'Every path no other route claims is forwarded 1:1 to the upstream (PROXY_UPSTREAM_URL). ' +
          'Model-using POSTs (…/chat/completions, …/completions, …/embeddings, …/responses) are billed from the ' +
          "upstream's usage: `Authorization: Bearer sk-…` (or a Cashu token as bearer), or a Cashu token in `X-Cashu` " +
          '(change returned in the X-Cashu response header). Cost headers: x-cashu-cost-msat, x-cost-input-msat, ' +
          'x-cost-output-msat. Other paths are forwarded free to a valid key. See docs/proxy-billing.md.',
        response: {
          200: { description: 'The upstream answer (JSON, or an SSE stream when `stream` is true)' },
          402: { description: 'No credential, or the balance cannot cover the request (OpenAI error shape)' },
          422: { description: 'Validation error (FastAPI shape)' },
          502: { description: 'The upstream could not be reached' },
          503: { description: "No BTC/USD rate, or the operator's limit of requests in flight reached (Retry-After)" },
          504: { description: 'The upstream did not answer in time' },
        },
      },
      handler: (request, reply) => forward(deps, request, reply),
    });
  });
  await registerAdminRoutes(app, context, deps.wallet);
}

async function forward(deps: Deps, request: FastifyRequest, reply: FastifyReply) {
  const { path, search } = normalizePath(request.url);
  if (isUnderPrefix(path, NEVER_FORWARDED)) {
    throw new HttpError(404, `No route ${request.method} ${path}`, { code: 'not_found' });
  }
  const kind = billedKind(request.method, path);
  const caller = new CallerConnection(reply.raw);
  if (!kind) return forwardFree(deps, request, reply, path + search, caller);
  return forwardBilled(deps, request, reply, path, path + search, kind, caller);
}

// -------------------------------------------------------------------------------------------
// Free paths: streamed both ways, no charge, a valid key required.

async function forwardFree(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  pathAndQuery: string,
  caller: CallerConnection,
) {
  const config = deps.context.config.proxy.forward;
  if (!SAFE_METHODS.has(request.method) && !config.forwardUnbilledWrites) {
    throw new HttpError(
      403,
      `${request.method} ${pathAndQuery.split('?')[0]} is not a billed path, and this node forwards only GET, HEAD and OPTIONS on unbilled paths (PROXY_FORWARD_UNBILLED_WRITES)`,
      { code: 'not_forwarded' },
    );
  }
  if (request.headers.authorization === undefined && typeof request.headers['x-cashu'] === 'string') {
    throw new HttpError(
      401,
      'This path is free but needs an API key: send Authorization: Bearer sk-… (X-Cashu pays for billed paths only)',
      { code: 'invalid_authorization' },
    );
  }
  await authenticateAccountId(deps.context, deps.wallet, request.headers.authorization);
  const raw = request.raw;
  const response = await deps.upstream.request({
    method: request.method,
    pathAndQuery,
    headers: upstreamRequestHeaders(raw.headers, config),
    body: hasBody(raw) ? raw : null,
    signal: caller.signal,
  });
  return reply.code(response.statusCode).headers(callerResponseHeaders(response.headers)).send(response.body);
}

function hasBody(raw: IncomingMessage): boolean {
  return (
    raw.headers['transfer-encoding'] !== undefined ||
    (raw.headers['content-length'] !== undefined && raw.headers['content-length'] !== '0')
  );
}

// -------------------------------------------------------------------------------------------
// Billed paths.

interface Payer {
  accountId: number;
  /** The hash of the account's key (its cache entry, see accounts.ts). */
  keyHash: string;
  payment: 'key' | 'x-cashu';
}

async function forwardBilled(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  pathAndQuery: string,
  kind: NonNullable<ReturnType<typeof billedKind>>,
  caller: CallerConnection,
) {
  const { context, billing } = deps;
  const config = context.config.proxy.forward;
  const metered = meterRequest(kind, await readBody(request.raw, config.maxBodyBytes));
  const pricing = pricingFor(context.config);
  const model = pricing.model(metered.model);
  if (!model) {
    throw new HttpError(
      400,
      `Unknown model "${metered.model}". This node prices: ${[...pricing.models.keys()].join(', ')} (see GET /)`,
      { code: 'model_not_found' },
    );
  }
  const price = await pricing.price(model);
  const limits = {
    maxOutputTokens: config.maxOutputTokens,
    minOutputTokens: config.minOutputTokens,
    modelMaxTokens: model.maxCompletionTokens,
  };
  // A node at its operator's limit says so before a token is swapped or a reservation made.
  deps.upstream.checkCapacity();

  const payer = await identifyPayer(deps, request, () => planReservation(metered, price, 0, limits));
  const roundToSat = payer.payment === 'x-cashu';

  // The plan (how much to hold, and the max_tokens that fits it) is made from the balance as the
  // billing transaction reads it under its lock, so no concurrent request can take it in between.
  let plan: ReservationPlan | null = null;
  const wanted: ReserveRequest = {
    accountId: payer.accountId,
    amountFor(available) {
      plan = planReservation(metered, price, available, limits).plan;
      if (plan && roundToSat) {
        plan = { ...plan, reserveMsat: Math.min(Math.ceil(plan.reserveMsat / 1000) * 1000, available) };
      }
      return plan ? plan.reserveMsat : null;
    },
    requestId: request.id,
    path,
    model: model.id,
    stream: metered.stream,
    payment: payer.payment,
  };
  let { reservation, availableMsat } = await billing.reserve(wanted);
  // Refused while this account's other requests here hold reservations: they usually settle
  // below what they held (a small balance is held whole by one lowered request at a time), so
  // wait for them and try again, as long as some are in flight, for up to RESERVATION_WAIT_MS.
  const deadline = Date.now() + RESERVATION_WAIT_MS;
  while (!reservation && availableMsat !== null && Date.now() < deadline) {
    if (!(await billing.freed(payer.accountId, deadline - Date.now()))) break;
    ({ reservation, availableMsat } = await billing.reserve(wanted));
  }
  if (availableMsat === null) {
    forgetAccount(context, payer.keyHash);
    throw new HttpError(401, 'Unknown account', { code: 'invalid_api_key' });
  }
  if (!reservation || !plan) {
    const planned = planReservation(metered, price, 0, limits);
    throw await withChange(
      { deps, payer, request },
      insufficientBalance(planned.minimumMsat, planned.fullMsat, availableMsat),
    );
  }

  const billed: Billed = { deps, request, reply, caller, metered, model, price, reservation, payer, roundToSat };
  return billing.hold(
    serveReserved(billed, pathAndQuery, plan).finally(() =>
      billing.abandon(reservation, 'the request failed before it was settled'),
    ),
  );
}

/** Forwards a request whose reservation is held, and settles or releases it whatever happens. */
async function serveReserved(billed: Billed, pathAndQuery: string, plan: ReservationPlan) {
  const { deps, request, reply, metered, reservation } = billed;
  const { billing } = deps;
  const config = deps.context.config.proxy.forward;
  const body = upstreamBody(metered, plan);
  let response;
  try {
    response = await deps.upstream.request({
      method: 'POST',
      pathAndQuery,
      headers: upstreamRequestHeaders(request.raw.headers, config, { length: body.length }),
      body,
      // A caller gone by now (while its reservation waited, say) is never sent upstream.
      signal: billed.caller.signal,
    });
  } catch (error) {
    await billing.release(reservation, (error as Error).message);
    throw await withChange(billed, upstreamFailure(error));
  }
  reply.header(RESERVED_HEADER, String(reservation.reservedMsat));
  if (response.statusCode < 200 || response.statusCode >= 300) {
    // The upstream refused or failed: nothing is charged, its answer is passed on.
    await billing.release(reservation, `upstream answered ${response.statusCode}`, response.statusCode);
    setCostHeaders(reply, { inputMsat: 0, outputMsat: 0, requestMsat: 0, totalMsat: 0 }, 0);
    await setChangeHeader(billed);
    return reply.code(response.statusCode).headers(callerResponseHeaders(response.headers)).send(response.body);
  }
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('text/event-stream')) {
    return streamBilled(billed, response.statusCode, response.headers, response.body);
  }
  return jsonBilled(billed, response.statusCode, response.headers, response.body);
}

interface Billed {
  deps: Deps;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Its leaving before the answer's first byte cancels the upstream request (nothing billed). */
  caller: CallerConnection;
  metered: MeteredRequest;
  model: Model;
  price: Price;
  reservation: Reservation;
  payer: Payer;
  roundToSat: boolean;
}

/** The account paying: an API key (or token as bearer) in Authorization, or a Cashu token in X-Cashu. */
async function identifyPayer(
  deps: Deps,
  request: FastifyRequest,
  price: () => ReturnType<typeof planReservation>,
): Promise<Payer> {
  const xCashu = request.headers['x-cashu'];
  if (typeof xCashu === 'string' && xCashu.trim()) {
    const token = xCashu.trim();
    if (!looksLikeToken(token)) {
      throw new HttpError(400, 'The X-Cashu header must hold a Cashu token (cashuA… or cashuB…)', {
        code: 'invalid_token',
      });
    }
    // The token is redeemed once into the account it names ("sk-" + sha256 of the token), the
    // same as a token used as bearer: a repeated token finds that account and its remainder.
    await limitTokenRedemption(deps.context, deps.wallet, request.ip, token);
    return { ...(await authenticateAccountId(deps.context, deps.wallet, `Bearer ${token}`)), payment: 'x-cashu' };
  }
  if (request.headers.authorization === undefined) throw paymentRequired(deps, price());
  return { ...(await authenticateAccountId(deps.context, deps.wallet, request.headers.authorization)), payment: 'key' };
}

function paymentRequired(deps: Deps, planned: ReturnType<typeof planReservation>): HttpError {
  const sats = Math.ceil(planned.fullMsat / 1000);
  const mints = deps.wallet.mints;
  // NUT-18 payment request (as NUT-24 uses it): amount in sat, the mints this node trusts.
  const requestText = new PaymentRequest(
    undefined,
    undefined,
    sats,
    'sat',
    mints,
    'quartet proxy request',
    true,
  ).toEncodedRequest();
  return new HttpError(
    402,
    `Payment required: this request costs at most ${planned.fullMsat} msat (${sats} sat) and at least ${planned.minimumMsat} msat; ` +
      `send Authorization: Bearer sk-… (an API key of this node, see /v1/wallet/topup) or a Cashu token of ${mints.join(', ')} in the X-Cashu header (change is returned in the X-Cashu response header)`,
    {
      code: 'payment_required',
      type: 'insufficient_quota',
      headers: { 'x-cashu': requestText },
      extra: { price_msat: planned.fullMsat, minimum_msat: planned.minimumMsat },
    },
  );
}

function insufficientBalance(minimumMsat: number, fullMsat: number, availableMsat: number): HttpError {
  return new HttpError(
    402,
    `Insufficient balance: this request needs at least ${minimumMsat} msat (${fullMsat} msat for its full max_tokens) and ${Math.max(0, availableMsat)} msat are available`,
    {
      code: 'insufficient_balance',
      type: 'insufficient_quota',
      extra: { price_msat: fullMsat, minimum_msat: minimumMsat, available_msat: Math.max(0, availableMsat) },
    },
  );
}

/** A non-streaming answer: read whole (its usage is in it), settled, cost added, sent. */
async function jsonBilled(
  billed: Billed,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { deps, reply, reservation } = billed;
  let raw: Buffer;
  try {
    raw = await readBody(body, deps.context.config.proxy.forward.maxResponseBytes);
  } catch (error) {
    await deps.billing.release(reservation, `reading the upstream answer failed: ${(error as Error).message}`, status);
    throw await withChange(
      billed,
      error instanceof HttpError && error.status === 413
        ? new HttpError(502, 'The upstream answer is too large to meter', {
            code: 'upstream_too_large',
            type: 'upstream_error',
          })
        : upstreamFailure(error),
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    json = undefined;
  }
  const reported = readUsage(json, billed.metered.kind);
  const estimate = () => estimateUsage(billed.metered.raw.length, raw.length);
  const { cost, charged } = await settle(billed, reported, estimate, status);
  setCostHeaders(reply, cost, charged);
  const change = await setChangeHeader(billed);
  if (!json || typeof json !== 'object' || Array.isArray(json) || nestedDeeperThan(json)) {
    // Not a JSON object (an upstream ignoring accept-encoding: identity, say), or too deep to
    // re-serialize safely: passed on unchanged (the cost is in the headers).
    return reply.code(status).headers(callerResponseHeaders(headers)).send(raw);
  }
  const out = Buffer.from(JSON.stringify({ ...json, cost: { ...costJson(cost, charged), ...change } }));
  return reply
    .code(status)
    .headers(callerResponseHeaders(headers, { dropLength: true }))
    .header('content-length', String(out.length))
    .send(out);
}

/**
 * An SSE answer, passed on event by event. Billed from the usage event (the node's cost fields are
 * added to it, before `[DONE]`); nothing is sent after `[DONE]`. If the caller leaves after its
 * first event, the upstream is still read to its usage (before it: the upstream request is
 * aborted, nothing is charged); if the upstream ends without usage, what was delivered is billed
 * by estimate (nothing delivered: nothing charged).
 */
async function streamBilled(
  billed: Billed,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { deps, reply, request, reservation, caller } = billed;
  const out = new PassThrough();
  reply
    .code(status)
    .headers(callerResponseHeaders(headers, { dropLength: true }))
    .header('cache-control', 'no-cache')
    .send(out);

  const write = async (text: string) => {
    if (caller.gone || out.destroyed) return;
    caller.answering();
    if (!out.write(text)) await drainedOrClosed(out, reply.raw);
  };

  const meter = new SseMeter(billed.metered.kind);
  const estimate = () => estimateUsage(billed.metered.raw.length, meter.contentBytes);
  let settled: { cost: Cost; charged: number } | null = null;
  let failure: unknown = null;
  const handle = async (events: ReturnType<SseMeter['push']>) => {
    for (const event of events) {
      if (caller.cancelled) return true; // left before its first event: events still buffered are not billed
      if (settled === null && event.usage) {
        settled = await settle(billed, event.usage, estimate, status);
        const change = await changeFields(billed);
        await write(
          event.json
            ? withFields(event, { cost: { ...costJson(settled.cost, settled.charged), ...change } })
            : event.text,
        );
      } else {
        await write(event.text);
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
  out.end();
  return reply;
}

/** Waits for the caller to take more, or to be gone. */
function drainedOrClosed(out: PassThrough, response: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      response.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
    response.on('close', done);
  });
}

/** Settles from the upstream's usage, its missing or unreadable counts estimated (see billedUsage). */
async function settle(
  billed: Billed,
  reported: ReportedUsage | null,
  estimate: () => Usage,
  upstreamStatus: number,
): Promise<{ cost: Cost; charged: number }> {
  const { usage, source: usageSource } = billedUsage(reported, estimate);
  if (reported && usageSource === 'estimate') {
    billed.request.log.warn({ reported }, 'the upstream reported unreadable usage; the missing counts are estimated');
  }
  const cost = costOf(billed.price, usage.promptTokens, usage.completionTokens);
  const charged = await billed.deps.billing.settle(billed.reservation, {
    cost,
    usage,
    usageSource,
    upstreamStatus,
    roundToSat: billed.roundToSat,
  });
  return { cost, charged };
}

function costHeaderValues(cost: Cost, charged: number): Record<string, string> {
  return {
    [COST_HEADERS.total]: String(charged),
    [COST_HEADERS.input]: String(cost.inputMsat),
    [COST_HEADERS.output]: String(cost.outputMsat),
    [COST_HEADERS.request]: String(cost.requestMsat),
  };
}

function setCostHeaders(reply: FastifyReply, cost: Cost, charged: number) {
  reply.headers(costHeaderValues(cost, charged));
}

/**
 * X-Cashu payments: the account's whole available balance back as a token (the change). If the
 * mint cannot make it now, the balance stays with the account the token names, refundable later
 * with `Authorization: Bearer <the same token>` at POST /v1/wallet/refund.
 */
async function changeFields({ deps, payer, request }: Pick<Billed, 'deps' | 'payer' | 'request'>): Promise<{
  change?: string;
  change_msat?: number;
  change_error?: string;
}> {
  if (payer.payment !== 'x-cashu') return {};
  const row = await deps.context.db.kysely
    .selectFrom('proxy_accounts')
    .select(['balance_msat', 'reserved_msat'])
    .where('id', '=', payer.accountId)
    .executeTakeFirst();
  if (!row || Number(row.balance_msat) - Number(row.reserved_msat) < 1000) return {};
  try {
    const refund = await deps.wallet.refund(payer.accountId);
    return { change: refund.token, change_msat: refund.msats };
  } catch (error) {
    request.log.warn({ err: error }, "X-Cashu change could not be issued; it stays with the token's account");
    return {
      change_error: `${(error as Error).message}. The change stays with this token's account: refund it with Authorization: Bearer <the same token> at POST /v1/wallet/refund`,
    };
  }
}

async function setChangeHeader(billed: Billed): Promise<{ change_msat?: number; change_error?: string }> {
  const { change, ...rest } = await changeFields(billed);
  if (change) billed.reply.header('x-cashu', change);
  if (rest.change_error) billed.reply.header('x-cashu-change-error', rest.change_error.replace(/[^\x20-\x7e]/g, ' '));
  return rest;
}

/** An error answer for an X-Cashu payment still returns the change (here: the whole payment). */
async function withChange(billed: Pick<Billed, 'deps' | 'payer' | 'request'>, error: HttpError): Promise<HttpError> {
  const fields = await changeFields(billed);
  if (!fields.change) return error;
  return new HttpError(error.status, error.message, {
    ...error.options,
    headers: { ...error.options.headers, 'x-cashu': fields.change },
  });
}

/** Reads a body up to `limit` bytes; 413 beyond (the rest is drained so the answer can be sent). */
async function readBody(stream: Readable, limit: number): Promise<Buffer> {
  const declared = Number((stream as IncomingMessage).headers?.['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    stream.resume();
    throw new HttpError(413, `The body is larger than ${limit} bytes`, { code: 'body_too_large' });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      stream.resume();
      throw new HttpError(413, `The body is larger than ${limit} bytes`, { code: 'body_too_large' });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
