// An LNURL-pay service of the tests' own on loopback, for `alice`: its invoices are the dev mint's
// fake Lightning node's ("another node"), so a melt at the mint pays them and the preimage proves it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DevMint } from '../../src/devmint/index.js';

export interface LnurlServer {
  /** alice@127.0.0.1:PORT (reached by plain http with PROXY_LNURL_ALLOW_HTTP_LOOPBACK=true). */
  address: string;
  /** Every invoice the callback gave, in order. */
  asked: { amountMsat: number; invoice: string }[];
  /** While true, every connection is dropped unanswered (the server is down). */
  down: boolean;
  close(): Promise<void>;
}

export async function startLnurlServer(mint: DevMint): Promise<LnurlServer> {
  const asked: LnurlServer['asked'] = [];
  const server: Server = createServer((request, response) => {
    if (lnurl.down) {
      request.socket.destroy();
      return;
    }
    const url = new URL(request.url!, 'http://127.0.0.1');
    const { port } = server.address() as AddressInfo;
    response.setHeader('content-type', 'application/json');
    if (url.pathname === '/.well-known/lnurlp/alice') {
      const callback = `http://127.0.0.1:${port}/callback/alice`;
      response.end(JSON.stringify({ tag: 'payRequest', callback, minSendable: 1000, maxSendable: 100_000_000 }));
    } else if (url.pathname === '/callback/alice') {
      const amountMsat = Number(url.searchParams.get('amount'));
      const invoice = mint.lightning.createInvoice(amountMsat / 1000);
      asked.push({ amountMsat, invoice });
      response.end(JSON.stringify({ pr: invoice, routes: [] }));
    } else {
      response.statusCode = 404;
      response.end(JSON.stringify({ status: 'ERROR', reason: 'no such user' }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const lnurl: LnurlServer = {
    address: `alice@127.0.0.1:${port}`,
    asked,
    down: false,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return lnurl;
}
