import { isIP } from 'node:net';
import { SluiceError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/text.js';

export const DEFAULT_TELEGRAM_API_ROOT = 'https://api.telegram.org';

/** Whether a URL's host is this machine: `localhost`, 127.0.0.0/8 or ::1 (also IPv4-mapped). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^::ffff:7f/.test(host);
  return false;
}

/**
 * The Bot API root to use, without trailing slashes. Refuses (before any connection) anything but
 * `https:`, or `http:` to this machine (a local Bot API server): over plain HTTP across a network,
 * the bot token (in every URL) and every file would travel readable and alterable.
 */
export function checkedApiRoot(root: string | undefined): string {
  const text = (root ?? DEFAULT_TELEGRAM_API_ROOT).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SluiceError('invalid_params', `--api-root ${quoteInput(text)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new SluiceError('invalid_params', '--api-root must be an https:// URL');
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new SluiceError('invalid_params', '--api-root must be a plain URL (no user, query or fragment)');
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new SluiceError(
      'invalid_params',
      `--api-root ${url.origin} is plain http:// to another machine: the bot token and files would cross the network unencrypted; use https://, or http:// only to localhost`,
    );
  }
  return text;
}
