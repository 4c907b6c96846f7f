import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import {
  type AgentDriverRow,
  deleteAgentDriver,
  findAgentDriver,
  insertAgentDriver,
  renewAgentDriver,
  replaceAgentDriver,
} from '../../store/ops/agent-drivers.js';
import { announceCommit, type HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { thisMachine } from './agent-runs.js';

// One agent, one driver (docs/drivers.md). Two drivers of one agent would each take the inbox's
// turns: a message goes to both sessions, and each new driver abandons the other's open turn, so
// the survivor's turn never settles. Every `sluice drive` (by hand or under `sluice serve`, on any
// home or machine sharing the store) first takes the agent's row in agent_drivers, keeps it while
// it runs, and gives it back when it stops. The row is a lease: a driver that dies stops renewing
// it, and one on this machine whose pid is gone is taken over at once.

/** How long a driver's hold lasts without renewal. */
export const DRIVER_LEASE_MS = 30_000;
/** How often a running driver renews its hold (three tries before it lapses). */
export const DRIVER_RENEW_MS = 10_000;
/**
 * A hold not renewed for this long missed a renewal: before its next turn the driver renews it
 * (and learns whether it lost the agent) rather than trust it. Well inside the lease, so a clock a
 * few seconds off between machines cannot let a lapsed hold pass as current.
 */
export const DRIVER_STALE_MS = 2 * DRIVER_RENEW_MS;

/** The driver asking for an agent: what the refusal of another driver will name. */
export interface DriverIdentity {
  client: 'claude' | 'codex';
  pid: number;
  /** Run by `sluice serve` (SLUICE_SUPERVISED): such a driver waits for a driver that is stopping. */
  supervised: boolean;
}

/** Whether a process of this machine still runs (`kill 0`: EPERM means it runs as someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Options of {@link claimDriver}; the defaults are the real clock and process table. */
export interface ClaimOptions {
  now?: Date | undefined;
  isAlive?: ((pid: number) => boolean) | undefined;
}

/** A holder that can no longer drive: its lease lapsed, or it ran on this machine and its pid is gone. */
function isGone(row: AgentDriverRow, now: Date, isAlive: (pid: number) => boolean): boolean {
  if (row.held_until <= now.toISOString()) return true;
  return row.machine === thisMachine() && !isAlive(row.pid);
}

/** The one-line refusal naming who drives `agent` and how to take it over. */
export function alreadyDriven(agent: string, row: AgentDriverRow): SluiceError {
  const where = `pid ${row.pid} on ${row.machine}, home ${row.home}`;
  const message =
    row.supervised === 1
      ? `agent ${agent} is already driven by sluice serve (sluice drive ${row.client}, ${where}); use sluice agent restart ${agent} or sluice agent stop ${agent}`
      : `agent ${agent} is already driven by sluice drive ${row.client} (${where}); stop that driver first`;
  return new SluiceError('conflict', message, { holderPid: row.pid, machine: row.machine, home: row.home });
}

/**
 * Takes `agent` for a new driver and returns its holder id, or refuses with `conflict` naming the
 * driver that holds it. A holder that is gone ({@link isGone}) is replaced; of two drivers racing
 * for the same row, exactly one wins (the writes are conditional on what was read).
 */
export async function claimDriver(
  ctx: HostContext,
  agent: Principal,
  me: DriverIdentity,
  options: ClaimOptions = {},
): Promise<string> {
  const now = options.now ?? ctx.now();
  const isAlive = options.isAlive ?? processAlive;
  const row: AgentDriverRow = {
    agent_id: agent.id,
    holder: `drv_${randomBytes(8).toString('hex')}`,
    client: me.client,
    pid: me.pid,
    machine: thisMachine(),
    home: ctx.home,
    supervised: me.supervised ? 1 : 0,
    started_at: now.toISOString(),
    held_until: new Date(now.getTime() + DRIVER_LEASE_MS).toISOString(),
  };
  // A write that loses a race reads again: the winner is then the holder the refusal names.
  for (let attempt = 0; attempt < 3; attempt++) {
    const held = await findAgentDriver(ctx.store.db, agent.id);
    if (held === undefined) {
      if (await insertAgentDriver(ctx.store.db, row)) return row.holder;
      continue;
    }
    if (!isGone(held, now, isAlive)) throw alreadyDriven(agent.name, held);
    if (await replaceAgentDriver(ctx.store.db, row, held.holder)) return row.holder;
  }
  const held = await findAgentDriver(ctx.store.db, agent.id);
  if (held !== undefined) throw alreadyDriven(agent.name, held);
  throw new SluiceError('unavailable', `could not take agent ${agent.name} for this driver; try again`);
}

/**
 * Gives the agent back; false when this holder did not hold it. Only the row goes (no event): a
 * driver that failed to start leaves the store as it found it, and one waiting for the agent
 * looks again on any commit it sees and at least every second.
 */
export async function releaseDriver(ctx: HostContext, agent: Principal, holder: string): Promise<boolean> {
  const released = await deleteAgentDriver(ctx.store.db, agent.id, holder);
  if (released) announceCommit(ctx);
  return released;
}

/**
 * Renews the hold: `held` while it is this driver's, `lost` (with the refusal naming the new
 * holder) once another driver has taken it.
 */
export async function renewDriver(
  ctx: HostContext,
  agent: Principal,
  holder: string,
  now: Date = ctx.now(),
): Promise<{ held: true } | { held: false; lost: SluiceError }> {
  const until = new Date(now.getTime() + DRIVER_LEASE_MS).toISOString();
  if (await renewAgentDriver(ctx.store.db, agent.id, holder, until)) return { held: true };
  const row = await findAgentDriver(ctx.store.db, agent.id);
  // No row: another driver took the agent over and has already let it go. Either way this one
  // was not the only driver meanwhile, so it stops too rather than guess what happened.
  if (row === undefined)
    return {
      held: false,
      lost: new SluiceError(
        'conflict',
        `agent ${agent.name} was taken over by another driver while this one could not renew its hold`,
      ),
    };
  return { held: false, lost: alreadyDriven(agent.name, row) };
}

/** A driver's hold on its agent while it runs. */
export interface HeldDriver {
  readonly holder: string;
  /** The refusal naming the driver that took the agent over, once this one lost it. */
  readonly lost: SluiceError | undefined;
  /**
   * Whether this driver still holds the agent, renewing first when no renewal succeeded for
   * {@link DRIVER_STALE_MS} (the store was unreachable: the lease may have lapsed and another
   * driver taken over). Call it before each turn. Rejects when the store cannot answer (the caller
   * waits that out). A loss is not reported through `onLost`: the caller stops by itself.
   */
  confirm(): Promise<boolean>;
  /**
   * Stops renewing and gives the agent back, waiting at most {@link RELEASE_WAIT_MS} for the
   * store; rejects when the store refuses at once (the hold then lapses by itself).
   */
  release(): Promise<void>;
}

export interface HoldOptions {
  /** Called once if another driver takes the agent (this one's lease lapsed): the driver must stop. */
  onLost: (error: SluiceError) => void;
  /** How long a supervised driver waits for the holder to stop before it is refused (default 40 s). */
  waitMs?: number | undefined;
  /** Called once when a supervised driver starts waiting, with the refusal naming the holder. */
  onWait?: ((holder: SluiceError) => void) | undefined;
}

/**
 * Takes `agent` for this driver process and renews the hold every {@link DRIVER_RENEW_MS} until
 * released. A driver by hand is refused at once when another holds the agent. A supervised one
 * waits up to `waitMs` (past a lease) for the holder to go: a spec moved to another home or
 * machine starts there while the old host's driver is still stopping (up to its 10 s grace).
 */
export async function holdDriver(
  ctx: HostContext,
  agent: Principal,
  me: DriverIdentity,
  options: HoldOptions,
): Promise<HeldDriver> {
  const holder = me.supervised
    ? await claimWhenFree(ctx, agent, me, options.waitMs ?? DRIVER_LEASE_MS + DRIVER_RENEW_MS, options.onWait)
    : await claimDriver(ctx, agent, me);
  let lost: SluiceError | undefined;
  // When the last renewal that succeeded began (its lease counts from then, or later).
  let renewedAt = ctx.now().getTime();
  /** Renews once: true while held; rejects when the store cannot answer. */
  const renew = async (): Promise<boolean> => {
    if (lost !== undefined) return false;
    const began = ctx.now();
    const renewed = await renewDriver(ctx, agent, holder, began);
    if (renewed.held) {
      renewedAt = Math.max(renewedAt, began.getTime());
      return true;
    }
    lost ??= renewed.lost;
    return false;
  };
  let renewing: Promise<void> = Promise.resolve();
  let released = false;
  const timer = setInterval(() => {
    renewing = renewing.then(async () => {
      if (lost !== undefined || released) return;
      try {
        // Once released, a renewal that finds the row gone is this driver's own release.
        if (!(await renew()) && lost !== undefined && !released) options.onLost(lost);
      } catch {
        // The store is unreachable (I10): the driver runs on; the next renewal tries again.
      }
    });
  }, DRIVER_RENEW_MS);
  timer.unref();
  return {
    holder,
    get lost() {
      return lost;
    },
    async confirm() {
      if (lost !== undefined) return false;
      if (ctx.now().getTime() - renewedAt < DRIVER_STALE_MS) return true;
      return renew();
    },
    async release() {
      clearInterval(timer);
      released = true;
      // Neither the renewal in flight nor the delete is waited out: during an outage each would
      // wait for the pool (5–30 s), and a stop ends the driver at once. A hold not given back
      // lapses by itself (at once for a driver on this machine, whose pid is about to be gone).
      if (lost === undefined) await withinMs(releaseDriver(ctx, agent, holder), RELEASE_WAIT_MS);
    },
  };
}

/** How long a stopping driver waits for the store to take its hold back before it goes anyway. */
export const RELEASE_WAIT_MS = 1_000;

/** Waits for `work` at most `ms`; what it does later (or how it fails) no longer matters. */
async function withinMs(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  try {
    await Promise.race([work.then(() => undefined), late]);
  } finally {
    clearTimeout(timer);
    work.catch(() => {});
  }
}

/** Claims the agent, waiting (on store changes, and for the holder's lease) up to `waitMs`. */
async function claimWhenFree(
  ctx: HostContext,
  agent: Principal,
  me: DriverIdentity,
  waitMs: number,
  onWait: ((holder: SluiceError) => void) | undefined,
): Promise<string> {
  const deadline = Date.now() + waitMs;
  let told = false;
  let changed: (() => void) | undefined;
  const notify = () => changed?.();
  const unwatch = ctx.store.watchChanges(notify);
  try {
    for (;;) {
      const next = new Promise<void>((resolve) => {
        changed = resolve;
      });
      try {
        return await claimDriver(ctx, agent, me);
      } catch (err) {
        if (!(err instanceof SluiceError) || err.code !== 'conflict') throw err;
        const left = deadline - Date.now();
        if (left <= 0) throw err;
        if (!told) onWait?.(err);
        told = true;
        // A stopping holder releases (a commit wakes this); a dead one's lease lapses: look again
        // each second at most, so a holder elsewhere that died is seen without a commit.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          next,
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, Math.min(left, 1_000));
          }),
        ]);
        clearTimeout(timer);
      }
    }
  } finally {
    unwatch();
  }
}
