/** The Bot API serves bots files of at most 20 MB (getFile). */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;
/** One file download, headers and body together, must finish within this (20 MB at ~350 KB/s). */
export const DOWNLOAD_DEADLINE_MS = 60_000;
/** Redirects followed within the API root's origin; one to anywhere else is refused. */
export const MAX_DOWNLOAD_REDIRECTS = 3;

/**
 * A file the bridge will not fetch or store: permanent for that file (trying again cannot help).
 * `message` is the line the sender gets; `reason` is the line for the log (never the URL, which
 * carries the bot token).
 */
export class FileRefused extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export function tooLarge(size: number): FileRefused {
  return new FileRefused(
    `That file is ${megabytes(size)}; a Telegram bot can fetch at most 20 MB. Nothing was sent — share a link or a smaller file.`,
    `file of ${megabytes(size)} is over the 20 MB a bot may fetch`,
  );
}

/** The line a sender gets for a file Telegram would not hand over. */
export const NOT_FETCHED = 'That file could not be fetched from Telegram. Nothing was sent — send it again.';

/**
 * Fetches a file from the Bot API's file endpoint. Redirects are followed only within `origin`
 * (the API root's): a Bot API root that redirects elsewhere (compromised, or self-hosted behind a
 * proxy) cannot make the bridge fetch an internal address and store the answer. The whole
 * download carries one deadline. Refusals (a redirect elsewhere, a 4xx, over 20 MB, past the
 * deadline) throw {@link FileRefused}; a network error or a 5xx throws a plain Error (retryable).
 */
export async function downloadFile(
  url: string,
  options: { origin: string; deadlineMs?: number; limit?: number },
): Promise<Uint8Array> {
  const deadlineMs = options.deadlineMs ?? DOWNLOAD_DEADLINE_MS;
  const limit = options.limit ?? TELEGRAM_DOWNLOAD_LIMIT;
  const signal = AbortSignal.timeout(deadlineMs);
  const pastDeadline = () =>
    new FileRefused(
      `That file could not be fetched from Telegram within ${Math.round(deadlineMs / 1000)} s. Nothing was sent — try again, or send a smaller file.`,
      `file download took longer than the ${deadlineMs} ms deadline`,
    );
  try {
    let target = new URL(url);
    for (let hops = 0; ; hops++) {
      const response = await fetch(target, { redirect: 'manual', signal });
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        const location = response.headers.get('location');
        const next = location === null ? undefined : new URL(location, target);
        if (next === undefined || next.origin !== options.origin) {
          throw new FileRefused(
            NOT_FETCHED,
            `file download redirected to ${next ? next.origin : 'nowhere'}, outside the API root; refused`,
          );
        }
        if (hops >= MAX_DOWNLOAD_REDIRECTS) {
          throw new FileRefused(
            NOT_FETCHED,
            `file download redirected more than ${MAX_DOWNLOAD_REDIRECTS} times`,
          );
        }
        target = next;
        continue;
      }
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        if (response.status >= 400 && response.status < 500) {
          throw new FileRefused(NOT_FETCHED, `file download refused with HTTP ${response.status}`);
        }
        throw new Error(`file download failed with HTTP ${response.status}`);
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        total += chunk.length;
        if (total > limit) throw tooLarge(total);
        chunks.push(chunk);
      }
      return Buffer.concat(chunks);
    }
  } catch (err) {
    if (err instanceof FileRefused) throw err;
    // Whatever the abort surfaced as (TimeoutError, AbortError, a failed fetch), it was the deadline.
    if (signal.aborted) throw pastDeadline();
    throw err;
  }
}
