// The network edge: what happens to a connection around an answer given before the request was
// read (lingering close), and the server's timeouts. README.md, "Configuration", documents both.
import type { Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Lingering close (nginx's name): after an answer given before the request body was read (413, 401,
 * 404, 405, 415, a refused preflight, a parser error), the rest of the body is read and thrown away
 * before the connection closes. Closing with bytes unread makes the kernel reset the connection, and
 * a client still sending its body (Node's fetch) then loses the answer it was sent. The discarding
 * stops after LINGER_MAX_BYTES or LINGER_MS, whichever comes first: a client that never stops
 * sending does not hold the socket.
 */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;
export const LINGER_MS = 5_000;

/** Sockets that carry a finished answer and are only read until the request's bytes stop: bytesRead at the start. */
const lingering = new WeakMap<Duplex, number>();

function bytesRead(socket: Duplex): number {
  return (socket as Duplex & { bytesRead?: number }).bytesRead ?? 0;
}

/**
 * Marks `socket` as lingering and closes it at LINGER_MS or when the client ends; the byte bound
 * is checked wherever a chunk's arrival is seen (overBound). Returns the clean-up, which
 * `finished` follows; it runs by itself when the socket closes.
 */
function linger(socket: Duplex, finished: () => void): () => void {
  lingering.set(socket, bytesRead(socket));
  const stop = () => socket.destroy();
  const timer = setTimeout(stop, LINGER_MS).unref();
  const cleanUp = () => {
    clearTimeout(timer);
    lingering.delete(socket);
    socket.off('end', stop);
    socket.off('close', cleanUp);
    finished();
  };
  socket.once('end', stop);
  socket.once('close', cleanUp);
  return cleanUp;
}

/** A socket that read more than the bound since its answer is closed. */
function overBound(socket: Duplex): boolean {
  const start = lingering.get(socket);
  return start !== undefined && bytesRead(socket) - start > LINGER_MAX_BYTES;
}

/**
 * For the `clientError` handler: a socket that has had its answer is closed on a timeout or once
 * the bound is reached, and else left to linger (the parser refuses each further chunk: that is
 * the expected end of a body it cannot frame). True when the error is the lingering's own.
 */
export function lingeringError(socket: Duplex, code: string | undefined): boolean {
  if (!lingering.has(socket)) return false;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || overBound(socket) || socket.readableEnded) socket.destroy();
  return true;
}

/**
 * Ends `socket` with `answer` (a whole HTTP response written by hand, no request object exists)
 * and closes it once the client stops sending, or at the lingering bounds.
 */
export function endAndLinger(socket: Duplex, answer: string): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(answer);
  // Where the HTTP parser still reads the socket, it refuses each chunk (lingeringError checks the
  // bound); a socket handed over by Node (CONNECT) is read here.
  const count = () => {
    if (overBound(socket)) socket.destroy();
  };
  linger(socket, () => socket.off('data', count));
  socket.on('data', count);
  socket.resume();
}

/** Node's server, after each answer ('finish'): a request not fully read lingers. */
function lingerIfUnread(this: ServerResponse) {
  const request = this.req;
  const socket = request.socket;
  if (request.complete || socket.destroyed) return;
  // Node closes the socket as soon as an answer with `Connection: close` (Fastify's after a body
  // error) is written (destroySoon: end, then destroy on 'finish'), which resets it with the body
  // unread. The write side stays ended (the client sees the close); the destroy waits for the body.
  const closing = socket.writableEnded;
  if (closing) socket.removeListener('finish', socket.destroy);
  const count = () => {
    if (overBound(socket)) socket.destroy();
  };
  const done = linger(socket, () => {
    request.off('data', count);
    request.off('end', onEnd);
  });
  const onEnd = () => {
    done();
    if (closing) socket.destroy();
  };
  request.on('data', count);
  request.once('end', onEnd);
  request.resume();
}

/** Installs lingering on the server: every answer given before its request was read. */
export function readEarlyAnswers(server: Server): void {
  server.on('request', (_request, response: ServerResponse) => response.on('finish', lingerIfUnread));
}
