import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { formatPrefixedId, formatSortableId } from '../../core/ids.js';
import { setMetaIfAbsent } from '../../store/ops/meta.js';
import type { Store } from '../../store/store.js';

/** Named limits; each is a setting with the DESIGN.md default. */
export interface HostLimits {
  /** Largest accepted message body, in UTF-8 bytes. */
  maxBodyBytes: number;
  /** Largest accepted upload, in bytes. */
  maxUploadBytes: number;
  /** MCP tool result budget, UTF-16 units. */
  toolOutputUnits: number;
  /**
   * MCP tool result ceiling in UTF-8 bytes (0: none). Codex cuts tool results at about 12,000
   * bytes including its own header (docs/e2e-clients.md), so a result within 12,000 UTF-16 units
   * can still arrive cut there; every result also stays within this many bytes.
   */
  toolOutputBytes: number;
  /** Unanswered invitations one inviter may hold for one person (docs/security.md, "Consent"). */
  maxInvitationsPerInvitee: number;
  /** Unanswered invitations one inviter may hold in all, whoever they invite. */
  maxPendingInvitationsPerInviter: number;
}

export const DEFAULT_LIMITS: HostLimits = {
  maxBodyBytes: 8 * 1024 * 1024,
  maxUploadBytes: 64 * 1024 * 1024,
  toolOutputUnits: 12_000,
  toolOutputBytes: 11_900,
  // Enough to work (a new team, a few groups a day), too few to flood anyone's list.
  maxInvitationsPerInvitee: 20,
  maxPendingInvitationsPerInviter: 100,
};

/** Everything a host service needs: the store, the clock, randomness and local change listeners. */
export interface HostContext {
  readonly store: Store;
  readonly home: string;
  readonly limits: HostLimits;
  readonly cursorSecret: Uint8Array;
  /** Identifies this process as a turn owner: `host:pid`. */
  readonly ownerTag: string;
  now(): Date;
  random(bytes: number): Uint8Array;
  /** Listeners called after this process commits (other processes are seen through the store). */
  readonly localCommitListeners: Set<() => void>;
}

export interface CreateHostOptions {
  store: Store;
  home: string;
  limits?: Partial<HostLimits>;
  now?: () => Date;
  random?: (bytes: number) => Uint8Array;
  ownerTag?: string;
}

/** Loads (creating on first use) the per-home cursor secret and builds the host context. */
export async function createHostContext(options: CreateHostOptions): Promise<HostContext> {
  const random = options.random ?? ((n: number) => new Uint8Array(randomBytes(n)));
  const secretHex = await setMetaIfAbsent(
    options.store.db,
    'cursor_secret',
    Buffer.from(random(32)).toString('hex'),
  );
  return {
    store: options.store,
    home: options.home,
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    cursorSecret: new Uint8Array(Buffer.from(secretHex, 'hex')),
    ownerTag: options.ownerTag ?? `${hostname()}:${process.pid}`,
    now: options.now ?? (() => new Date()),
    random,
    localCommitListeners: new Set(),
  };
}

export function nowIso(ctx: HostContext): string {
  return ctx.now().toISOString();
}

export function newMessageId(ctx: HostContext): string {
  return formatSortableId(ctx.now().getTime(), ctx.random(10));
}

export function newId(ctx: HostContext, prefix: string): string {
  return formatPrefixedId(prefix, ctx.random(16));
}

/** Tells same-process listeners that a commit happened. */
export function announceCommit(ctx: HostContext): void {
  for (const listener of ctx.localCommitListeners) listener();
}
