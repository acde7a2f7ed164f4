// The node's upstream providers as one (docs/proxy-billing.md, "Providers"): a request goes to a
// provider serving its path and model, chosen by weight; one that fails before its answer's headers
// (connect error, timeout, 5xx) is retried on the next, each provider behind its own circuit breaker
// and its own connection limit. Once an answer is handed back nothing is retried: the caller may
// already be reading it. The caller's reservation is the caller's business: it is held across the
// attempts and released when all of them fail (billed-forward.ts).
import { randomInt } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { HttpError } from '../../http/errors.js';
import type { MetricsRegistry } from '../../http/metrics.js';
import type { ForwardConfig } from '../common/forward-config.js';
import { headerIndex } from '../common/header-list.js';
import { discardBody, type ProviderRoute, Upstream, type UpstreamRequest, upstreamFailure } from './forward.js';
import { type BreakerState, CircuitBreaker } from './provider-breaker.js';
import type { ProviderCatalog } from './provider-models.js';
import { type ProviderConfig, servesPath, withProviderKey } from '../common/providers.js';

export interface Provider {
  config: ProviderConfig;
  upstream: Upstream;
  breaker: CircuitBreaker;
}

export interface RoutedRequest extends UpstreamRequest {
  route: ProviderRoute;
  /** The body for a provider that names the model otherwise (the caller's body for the same id). */
  bodyFor?: (upstreamModelId: string) => Buffer;
}

export type ProviderResponse = Dispatcher.ResponseData & { provider: string };

export interface ProviderBreakerState {
  name: string;
  baseUrl: string;
  state: BreakerState;
  /** When an open breaker lets a probe through (ms since the epoch); 0 when closed. */
  retryAt: number;
}

interface Logger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export class Upstreams {
  providers: Provider[];

  constructor(
    private readonly config: ForwardConfig,
    private catalog: ProviderCatalog,
    private readonly log: Logger,
    private readonly metrics?: MetricsRegistry,
    private readonly now?: () => number,
  ) {
    this.providers = config.providers.map((provider) => this.build(provider));
    const sum = (read: (p: Provider) => number) => () => this.providers.reduce((n, p) => n + read(p), 0);
    metrics?.gauge(
      'quartet_proxy_upstream_in_flight',
      'Requests in flight to the upstream providers',
      sum((p) => p.upstream.slots.inFlightCount),
    );
    metrics?.gauge(
      'quartet_proxy_upstream_queued',
      'Requests waiting for a place under a provider connection limit',
      sum((p) => p.upstream.slots.queuedCount),
    );
    metrics?.gauge(
      'quartet_proxy_providers_open',
      'Providers whose circuit breaker is open (skipped while another can serve)',
      sum((p) => (p.breaker.state === 'closed' ? 0 : 1)),
    );
  }

  /** Each provider's breaker, read-only (the operator's provider health). */
  breakerStates(): ProviderBreakerState[] {
    return this.providers.map(({ config, breaker }) => ({
      name: config.name,
      baseUrl: config.baseUrl,
      state: breaker.state,
      retryAt: breaker.retryAt,
    }));
  }

  private build(provider: ProviderConfig): Provider {
    const { config } = this;
    return {
      config: provider,
      upstream: new Upstream(
        {
          ...config,
          upstreamUrl: provider.baseUrl,
          upstreamConnections: provider.connections ?? config.upstreamConnections,
          // A queue needs a limit to wait behind (../common/forward-config.ts).
          upstreamQueue: (provider.connections ?? config.upstreamConnections) > 0 ? config.upstreamQueue : 0,
        },
        this.metrics,
      ),
      breaker: new CircuitBreaker(config.breakerFailures, config.breakerCooldownMs, this.now),
    };
  }

  /**
   * Swaps in the providers and catalog of a reloaded configuration (../settings/): one reference
   * each, so a request sees the old set or the new one, never a mix. A provider whose name, URL and
   * connection limit stay keeps its pool and breaker; the pools of the others close once the
   * requests in flight on them are done (those keep the provider they were sent to).
   */
  async replace(providers: ProviderConfig[], catalog: ProviderCatalog): Promise<void> {
    const kept = new Map(this.providers.map((p) => [p.config.name, p]));
    const next = providers.map((config) => {
      const old = kept.get(config.name);
      if (old && old.config.baseUrl === config.baseUrl && old.config.connections === config.connections) {
        kept.delete(config.name);
        return { ...old, config };
      }
      return this.build(config);
    });
    this.providers = next;
    this.catalog = catalog;
    await Promise.all([...kept.values()].map((p) => p.upstream.close()));
  }

  /**
   * The providers that may serve `route`, in the order they are tried: those whose breaker lets
   * requests through in a weighted random order, then those whose breaker is open, soonest to reopen
   * first (tried only when every other one failed: a node with one provider keeps trying it).
   */
  candidates(route: ProviderRoute): Provider[] {
    const serving = this.serving(route);
    // One provider (the node without PROXY_PROVIDERS_FILE): no order to draw.
    if (serving.length <= 1) return serving;
    const open = serving
      .filter((p) => p.breaker.state === 'open')
      .sort((a, b) => a.breaker.retryAt - b.breaker.retryAt);
    return [...weightedOrder(serving.filter((p) => p.breaker.state !== 'open')), ...open];
  }

  private serving(route: ProviderRoute): Provider[] {
    return this.providers.filter((p) => this.serves(p, route));
  }

  private serves(provider: Provider, route: ProviderRoute): boolean {
    return (
      servesPath(provider.config, route.path) &&
      (route.model === null || this.catalog.upstreamId(provider.config.name, route.model) !== null)
    );
  }

  /** 404 when no provider serves the route; 503 when every one that does is at its limit and queue. */
  checkCapacity(route: ProviderRoute): void {
    // In no particular order: whether any has room is all that matters here.
    const serving = this.serving(route);
    if (serving.length === 0) throw noProvider(route);
    if (!serving.some((p) => p.upstream.slots.hasCapacity())) serving[0].upstream.checkCapacity();
  }

  /**
   * Sends a request to the first provider that answers (see above). A body that streams from the
   * caller can be sent once only, so it goes to one provider. The last provider's 5xx is passed on;
   * when none answered, the last failure is thrown (502/504), or 503 when all were at their limit.
   */
  async request(request: RoutedRequest): Promise<ProviderResponse> {
    const { route } = request;
    // The catalog of the request's start, should a reload swap it meanwhile.
    const catalog = this.catalog;
    let candidates = this.candidates(route);
    if (candidates.length === 0) throw noProvider(route);
    if (isStream(request.body)) candidates = candidates.slice(0, 1);
    let failure: HttpError | null = null;
    for (const [index, provider] of candidates.entries()) {
      const last = index === candidates.length - 1;
      const name = provider.config.name;
      // A provider at its limit is passed over while another has room (it has not failed).
      if (!last && !provider.upstream.slots.hasCapacity()) continue;
      const upstreamId = route.model === null ? null : catalog.upstreamId(name, route.model);
      const body = upstreamId !== null && request.bodyFor ? request.bodyFor(upstreamId) : request.body;
      const headers = withProviderKey(provider.config, request.headers, route.keyInXApiKey);
      const length = headerIndex(headers, 'content-length');
      if (Buffer.isBuffer(body) && length >= 0) headers[length + 1] = String(body.length);
      const { probe } = provider.breaker.attempt();
      let response: Dispatcher.ResponseData;
      try {
        const { method, pathAndQuery, signal } = request;
        response = await provider.upstream.request({ method, pathAndQuery, headers, body, signal });
      } catch (error) {
        const mapped = upstreamFailure(error);
        if (mapped.status === 499) {
          provider.breaker.abandoned(probe);
          throw mapped;
        }
        if (mapped.options.code === 'node_busy') provider.breaker.abandoned(probe);
        else this.failed(provider, mapped.message);
        failure = mapped;
        continue;
      }
      if (response.statusCode >= 500 && response.statusCode <= 599) {
        this.failed(provider, `answered ${response.statusCode}`);
        if (!last) {
          // Its answer is dropped unread (closing it gives the connection's place back): the next one answers.
          discardBody(response.body);
          continue;
        }
      } else {
        if (provider.breaker.state !== 'closed' || probe) this.log.info({ provider: name }, 'provider answers again');
        provider.breaker.succeeded();
      }
      return Object.assign(response, { provider: name });
    }
    throw failure ?? noProvider(route);
  }

  private failed(provider: Provider, reason: string) {
    const wasClosed = provider.breaker.state === 'closed';
    provider.breaker.failed();
    const opened = wasClosed && provider.breaker.state !== 'closed';
    this.log.warn(
      { provider: provider.config.name, reason, breaker: provider.breaker.state },
      opened ? 'provider failed; its breaker opens' : 'provider failed',
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.providers.map((p) => p.upstream.close()));
  }
}

/** The route of a request without a model (free reads, flat-priced writes). */
export function routeOf(request: FastifyRequest, pathAndQuery: string, model: string | null = null): ProviderRoute {
  const query = pathAndQuery.indexOf('?');
  const path = query === -1 ? pathAndQuery : pathAndQuery.slice(0, query);
  return { path, model, keyInXApiKey: request.headers['x-api-key'] !== undefined };
}

function isStream(body: RoutedRequest['body']): body is Readable {
  return body !== null && body !== undefined && !Buffer.isBuffer(body);
}

/** A weighted random order: each next provider drawn with probability proportional to its weight. */
export function weightedOrder<P extends { config: { weight: number } }>(providers: P[]): P[] {
  const left = providers.slice();
  const order: P[] = [];
  let total = left.reduce((sum, p) => sum + p.config.weight, 0);
  while (left.length > 1) {
    let draw = randomInt(total);
    let index = 0;
    while ((draw -= left[index].config.weight) >= 0) index++;
    const [drawn] = left.splice(index, 1);
    order.push(drawn);
    total -= drawn.config.weight;
  }
  order.push(...left); // the last one, if any
  return order;
}

function noProvider(route: ProviderRoute): HttpError {
  const what = route.model === null ? `the path ${route.path}` : `the model "${route.model}" at ${route.path}`;
  return new HttpError(404, `No upstream provider of this node serves ${what}`, {
    code: 'no_provider',
    type: 'invalid_request_error',
  });
}
