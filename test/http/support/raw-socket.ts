import { connect, type Socket } from 'node:net';

/** A raw TCP client for requests no polite HTTP client sends: half-sent headers, stalled bodies. */
export interface RawConnection {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves once the server closed the connection (with what it had sent). */
  closed: Promise<string>;
  /** Resolves once the received text contains `text`. */
  waitFor(text: string): Promise<string>;
  write(text: string | Buffer): void;
  destroy(): void;
}

/** Opens a TCP connection to `url`'s host and port; resolves once connected. */
export function openRaw(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  let text = '';
  const waiters: { text: string; resolve: (all: string) => void }[] = [];
  socket.on('data', (chunk) => {
    text += chunk.toString('latin1');
    for (const w of waiters.splice(0)) {
      if (text.includes(w.text)) w.resolve(text);
      else waiters.push(w);
    }
  });
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () =>
      resolve({
        socket,
        received: () => text,
        closed,
        waitFor: (wanted) =>
          text.includes(wanted)
            ? Promise.resolve(text)
            : new Promise((res, rej) => {
                waiters.push({ text: wanted, resolve: res });
                void closed.then((all) => {
                  if (!all.includes(wanted))
                    rej(new Error(`closed before "${wanted}": ${all.slice(0, 200)}`));
                });
              }),
        write: (data) => socket.write(data),
        destroy: () => socket.destroy(),
      }),
    );
  });
}

/**
 * The request line and headers of a request whose body is declared but not (yet) sent, with the
 * Host header of the server at `url` (the host allow-list wants the port).
 */
export function headersOnly(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string | number> = {},
): string {
  const lines = [`${method} ${path} HTTP/1.1`, `host: ${new URL(url).host}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
