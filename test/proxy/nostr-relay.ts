// A Nostr relay double on loopback, speaking NIP-01 as far as the node's announcement needs:
// REQ → the stored events that match, then EOSE; EVENT → OK. It keeps the newest event of each
// address (pubkey, kind, `d`), as relays do for addressable kinds, and can be told to refuse,
// drop the connection, or stay silent.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Event } from 'nostr-tools/pure';
import { WebSocketServer, type WebSocket } from 'ws';

export type Misbehaviour = 'refuse' | 'disconnect' | 'silent';

export interface RelayDouble {
  url: string;
  /** Every EVENT received, in order, as sent. */
  received: Event[];
  /** The EVENTs answered with OK true. */
  accepted: Event[];
  /** The REQ filters received. */
  queries: Record<string, unknown>[];
  /** Connections opened so far. */
  connections: number;
  /** The next `count` EVENTs (or connections, for `silent`) get `kind` instead of an OK. */
  misbehave(kind: Misbehaviour, count: number): void;
  /** Holds `event` as if it had been published, without any check (a forged one, too). */
  hold(event: Event): void;
  close(): Promise<void>;
}

const dTag = (event: Event) => event.tags.find((tag) => tag[0] === 'd')?.[1] ?? '';

function matches(event: Event, filter: Record<string, unknown>): boolean {
  const within = (values: unknown, value: unknown) => !Array.isArray(values) || values.includes(value);
  return within(filter.kinds, event.kind) && within(filter.authors, event.pubkey) && within(filter['#d'], dTag(event));
}

export async function startRelayDouble(): Promise<RelayDouble> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  const stored = new Map<string, Event>();
  const pending: { kind: Misbehaviour; count: number } = { kind: 'refuse', count: 0 };
  const relay: RelayDouble = {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: [],
    accepted: [],
    queries: [],
    connections: 0,
    misbehave(kind, count) {
      pending.kind = kind;
      pending.count = count;
    },
    hold(event) {
      stored.set(`${event.pubkey}:${event.kind}:${dTag(event)}`, event);
    },
    async close() {
      for (const client of server.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const send = (socket: WebSocket, message: unknown[]) => socket.send(JSON.stringify(message));

  server.on('connection', (socket) => {
    relay.connections++;
    if (pending.kind === 'silent' && pending.count > 0) {
      pending.count--;
      return; // never answers; the node's time limit must end the exchange
    }
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as unknown[];
      if (message[0] === 'REQ') {
        const subscription = message[1] as string;
        const filter = message[2] as Record<string, unknown>;
        relay.queries.push(filter);
        for (const event of stored.values()) if (matches(event, filter)) send(socket, ['EVENT', subscription, event]);
        send(socket, ['EOSE', subscription]);
      } else if (message[0] === 'EVENT') {
        const event = message[1] as Event;
        relay.received.push(event);
        if (pending.count > 0 && pending.kind !== 'silent') {
          pending.count--;
          if (pending.kind === 'disconnect') return socket.terminate();
          return send(socket, ['OK', event.id, false, 'blocked: the relay double refuses this one']);
        }
        const held = stored.get(`${event.pubkey}:${event.kind}:${dTag(event)}`);
        if (!held || held.created_at < event.created_at) relay.hold(event);
        relay.accepted.push(event);
        send(socket, ['OK', event.id, true, '']);
      }
    });
  });
  return relay;
}
