import { connect, type Socket } from 'node:net';

/** What a raw connection received until the server closed it, and when. */
export interface RawExchange {
  /** Everything the server sent, as text. */
  text: string;
  /** Status code of the first response line, or undefined when none came. */
  status: number | undefined;
  /** Milliseconds from the last byte we sent to the server closing the connection. */
  closedAfterMs: number;
}

/**
 * A client that writes exactly what it is told over a plain TCP connection and then waits until
 * the server closes it: the tool for stalled headers and bodies, which no HTTP client library
 * sends on purpose. `send` may be called again (a trickle) before the server closes.
 */
export class RawClient {
  private readonly socket: Socket;
  private readonly chunks: Buffer[] = [];
  private lastSentAt = performance.now();
  readonly closed: Promise<RawExchange>;

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port });
    this.socket.on('data', (chunk: Buffer) => this.chunks.push(chunk));
    this.closed = new Promise((resolve) => {
      const done = () => {
        const text = Buffer.concat(this.chunks).toString('utf8');
        const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
        resolve({ text, status: status === undefined ? undefined : Number(status), closedAfterMs: performance.now() - this.lastSentAt });
      };
      this.socket.once('close', done);
      // A reset is a close as well (the server destroyed the socket).
      this.socket.on('error', () => undefined);
    });
  }

  async send(data: string | Buffer): Promise<void> {
    await new Promise<void>((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())));
    this.lastSentAt = performance.now();
  }

  get open(): boolean {
    return !this.socket.destroyed && this.socket.readyState === 'open';
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The JSON body of a raw HTTP/1.1 response (Content-Length framed, as the gateway sends errors). */
export function rawBody(text: string): unknown {
  const at = text.indexOf('\r\n\r\n');
  return JSON.parse(text.slice(at + 4));
}
