import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The settings these deadlines read (all in `HttpLimits`). */
export interface SocketDeadlineSettings {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  minBodyBytesPerSecond: number;
  bodyRateWindowMs: number;
  maxUnauthenticatedPerAddress: number;
}

interface SocketState {
  socket: Socket;
  address: string;
  authenticated: boolean;
  /** Requests whose headers arrived and whose response has not ended. */
  inFlight: number;
  /** Set while the socket owes the headers of its next request. */
  headersTimer: NodeJS.Timeout | undefined;
  onAuthenticated: () => void;
}

/** Each socket this process serves, with its server's bookkeeping (so auth.ts can mark it). */
const states = new WeakMap<Socket, SocketState>();

/**
 * Marks the connection a request came on as carrying an authenticated request: it no longer counts
 * against its address's cap of unauthenticated connections.
 */
export function markSocketAuthenticated(socket: Socket): void {
  states.get(socket)?.onAuthenticated();
}

/**
 * Deadlines the server enforces itself, with a timer per socket (Node's own header and request
 * timeouts are checked by a periodic sweep that let slow sockets live on under keep-alive traffic):
 *
 * - the headers of a request are complete within `headersTimeoutMs` of the connection opening or of
 *   the previous response ending (a kept-alive connection owes its next headers just the same);
 * - a body arrives at `minBodyBytesPerSecond` or faster, judged over each `bodyRateWindowMs`, and
 *   completely within `requestTimeoutMs` of its headers;
 * - one address holds at most `maxUnauthenticatedPerAddress` connections that have not yet carried
 *   an authenticated request; one more is closed on accept.
 *
 * A socket past a deadline is destroyed: whoever sends that slowly is not reading an answer either.
 * A WebSocket leaves these deadlines once upgraded (it has its own idle rule).
 */
export function installSocketDeadlines(
  server: Server,
  settings: SocketDeadlineSettings,
  connectionEvent: 'connection' | 'secureConnection' = 'connection',
): void {
  const unauthenticated = new Map<string, number>();
  const release = (address: string) => {
    const left = (unauthenticated.get(address) ?? 1) - 1;
    if (left <= 0) unauthenticated.delete(address);
    else unauthenticated.set(address, left);
  };
  const armHeaders = (state: SocketState) => {
    clearTimeout(state.headersTimer);
    state.headersTimer = setTimeout(() => state.socket.destroy(), settings.headersTimeoutMs);
    state.headersTimer.unref();
  };

  server.on(connectionEvent, (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const held = unauthenticated.get(address) ?? 0;
    if (held >= settings.maxUnauthenticatedPerAddress) {
      socket.destroy();
      return;
    }
    unauthenticated.set(address, held + 1);
    const state: SocketState = {
      socket,
      address,
      authenticated: false,
      inFlight: 0,
      headersTimer: undefined,
      onAuthenticated: () => {
        if (state.authenticated) return;
        state.authenticated = true;
        release(address);
      },
    };
    states.set(socket, state);
    armHeaders(state);
    socket.once('close', () => {
      clearTimeout(state.headersTimer);
      if (!state.authenticated) release(address);
    });
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = states.get(req.socket as Socket);
    if (!state) return;
    clearTimeout(state.headersTimer);
    state.headersTimer = undefined;
    state.inFlight += 1;
    const stopBody = req.complete ? () => {} : watchBody(req, settings);
    res.once('close', () => {
      stopBody();
      state.inFlight -= 1;
      if (state.inFlight === 0 && !state.socket.destroyed) armHeaders(state);
    });
  });

  server.on('upgrade', (req: IncomingMessage) => {
    const state = states.get(req.socket as Socket);
    if (!state) return;
    clearTimeout(state.headersTimer);
    state.headersTimer = undefined;
  });
}

/**
 * Watches a request body until it is complete: too slow over a window, or not complete within the
 * request timeout, destroys the socket. Returns a function that stops watching.
 */
function watchBody(req: IncomingMessage, settings: SocketDeadlineSettings): () => void {
  const socket = req.socket;
  const minPerWindow = (settings.minBodyBytesPerSecond * settings.bodyRateWindowMs) / 1000;
  let readAtWindowStart = socket.bytesRead;
  const rate = setInterval(() => {
    if (req.complete) return stop();
    const read = socket.bytesRead;
    if (read - readAtWindowStart < minPerWindow) {
      stop();
      socket.destroy();
      return;
    }
    readAtWindowStart = read;
  }, settings.bodyRateWindowMs);
  const whole = setTimeout(() => {
    stop();
    if (!req.complete) socket.destroy();
  }, settings.requestTimeoutMs);
  rate.unref();
  whole.unref();
  function stop() {
    clearInterval(rate);
    clearTimeout(whole);
  }
  return stop;
}
