import { HOOK_EVENT_NAMES, type HookClient, type HookEventArg } from './adapters.js';
import { arrayAt, type JsonObject, objectAt, type SluiceLauncher, shellCommand } from './install-files.js';

/** The events `sluice hooks install` registers, in order. */
export const INSTALLED_EVENTS: readonly HookEventArg[] = ['session-start', 'user-prompt-submit'];

/** Where the store is, baked into commands: the client runs hooks with its own environment. */
export interface StoreLocation {
  home: string;
  db: string | undefined;
}

/** What the installed hooks deliver: bodies (the default) or only the short metadata notice. */
export interface HookDeliveryMode {
  metadata?: boolean | undefined;
}

/** `node /abs/bin/sluice.js hook <client> <event> --as AGENT --home DIR [--db URL]`, shell-quoted. */
export function hookCommand(
  launcher: SluiceLauncher,
  client: HookClient,
  event: HookEventArg,
  agent: string,
  store: StoreLocation,
  mode: HookDeliveryMode = {},
): string {
  const words = [launcher.node, launcher.bin, 'hook', client, event, '--as', agent, '--home', store.home];
  if (store.db !== undefined) words.push('--db', store.db);
  if (mode.metadata) words.push('--metadata');
  return shellCommand(words);
}

const SLUICE_HOOK = /sluice(\.js)?'?\s+hook\s+(claude|codex)\s+(session-start|user-prompt-submit)\b/;
const SLUICE_WAKE = /sluice(\.js)?'?\s+wait\s.*--hook\b/;

const commandMatches = (hook: unknown, pattern: RegExp): boolean =>
  hook !== null &&
  typeof hook === 'object' &&
  typeof (hook as JsonObject).command === 'string' &&
  pattern.test((hook as JsonObject).command as string);

function isSluiceHook(hook: unknown): boolean {
  return commandMatches(hook, SLUICE_HOOK);
}

/** The wake entry (`sluice wait … --hook`). */
export function isSluiceWake(hook: unknown): boolean {
  return commandMatches(hook, SLUICE_WAKE);
}

/** Every hook entry `sluice hooks install` writes: the delivery hooks and the wake. */
export function isSluiceEntry(hook: unknown): boolean {
  return isSluiceHook(hook) || isSluiceWake(hook);
}

/**
 * Claude Code kills a hook at its `timeout`; after that an idle session no longer wakes until its
 * next turn ends. One day keeps a session that is left open overnight reachable; the waiter ends
 * a minute earlier on its own, quietly, and at once when its Claude Code process is gone.
 */
export const WAKE_HOOK_TIMEOUT_S = 86_400;
const WAIT_TIMEOUT_S = WAKE_HOOK_TIMEOUT_S - 60;

/** The events the wake runs on: at session start, and after every turn (Stop). */
export const WAKE_EVENTS: readonly string[] = ['SessionStart', 'Stop'];

/** `node /abs/bin/sluice.js wait --as AGENT --for claude --hook --timeout S --home DIR [--db URL]`. */
export function wakeCommand(launcher: SluiceLauncher, agent: string, store: StoreLocation): string {
  const words = [launcher.node, launcher.bin, 'wait', '--as', agent, '--for', 'claude', '--hook'];
  words.push('--timeout', String(WAIT_TIMEOUT_S), '--home', store.home);
  if (store.db !== undefined) words.push('--db', store.db);
  return shellCommand(words);
}

/**
 * Claude Code's wake: an `asyncRewake` command hook on SessionStart and Stop running
 * `sluice wait --hook`. Claude Code runs it in the background in interactive sessions and wakes the
 * idle session when it exits with code 2, showing its stderr (the delivery) to the model.
 */
export function mergeSluiceWake(
  settings: JsonObject,
  launcher: SluiceLauncher,
  agent: string,
  store: StoreLocation,
  path: string,
): void {
  const hooks = objectAt(settings, 'hooks', path);
  const extra = { asyncRewake: true, timeout: WAKE_HOOK_TIMEOUT_S };
  for (const event of WAKE_EVENTS) {
    mergeHookEntry(hooks, event, wakeCommand(launcher, agent, store), extra, path, isSluiceWake);
  }
}

/**
 * Removes the hook entries `matches` selects from every event of `settings.hooks`, then the groups
 * and events this leaves empty (and `hooks` itself when nothing is left). Everything else stays.
 * Returns how many entries were removed.
 */
export function removeHookEntries(settings: JsonObject, matches: (hook: unknown) => boolean): number {
  const hooks = settings.hooks;
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) return 0;
  let removed = 0;
  for (const [event, groups] of Object.entries(hooks as JsonObject)) {
    if (!Array.isArray(groups)) continue;
    const removedBefore = removed;
    for (let i = groups.length - 1; i >= 0; i--) {
      const group = groups[i] as JsonObject;
      if (group === null || typeof group !== 'object' || !Array.isArray(group.hooks)) continue;
      const before = group.hooks as unknown[];
      const kept = before.filter((h) => !matches(h));
      if (kept.length === before.length) continue;
      removed += before.length - kept.length;
      if (kept.length === 0) groups.splice(i, 1);
      else group.hooks = kept;
    }
    // An event's list goes only when this emptied it: one the user left empty stays.
    if (groups.length === 0 && removed > removedBefore) delete (hooks as JsonObject)[event];
  }
  if (removed > 0 && Object.keys(hooks).length === 0) delete settings.hooks;
  return removed;
}

/**
 * Puts exactly one Sluice command hook under `hooks[eventName]` (Claude Code settings and Codex
 * hooks.json share this shape: `[{matcher?, hooks:[{type:"command", command}]}]`). Other hooks
 * are kept as they are; an earlier Sluice hook for the event (another agent or path) is replaced.
 * Leaves the object unchanged when the same command is already the only Sluice hook there.
 */
export function mergeHookEntry(
  hooks: JsonObject,
  eventName: string,
  command: string,
  extra: JsonObject,
  path: string,
  isOurs: (hook: unknown) => boolean = isSluiceHook,
): void {
  const groups = arrayAt(hooks, eventName, `${path} hooks`);
  const existing = groups.flatMap((g) =>
    g !== null && typeof g === 'object' && Array.isArray((g as JsonObject).hooks)
      ? ((g as JsonObject).hooks as unknown[]).filter(isOurs)
      : [],
  );
  if (existing.length === 1 && (existing[0] as JsonObject).command === command) return;
  for (let i = groups.length - 1; i >= 0; i--) {
    const group = groups[i] as JsonObject;
    if (group === null || typeof group !== 'object' || !Array.isArray(group.hooks)) continue;
    const kept = (group.hooks as unknown[]).filter((h) => !isOurs(h));
    if (kept.length === 0 && (group.hooks as unknown[]).length > 0) groups.splice(i, 1);
    else group.hooks = kept;
  }
  groups.push({ hooks: [{ type: 'command', command, ...extra }] });
}

/** Merges the SessionStart and UserPromptSubmit hooks for `client` into a settings object. */
export function mergeSluiceHooks(
  settings: JsonObject,
  launcher: SluiceLauncher,
  client: HookClient,
  agent: string,
  store: StoreLocation,
  path: string,
  extra: JsonObject = {},
  mode: HookDeliveryMode = {},
): void {
  const hooks = objectAt(settings, 'hooks', path);
  for (const event of INSTALLED_EVENTS) {
    mergeHookEntry(
      hooks,
      HOOK_EVENT_NAMES[event],
      hookCommand(launcher, client, event, agent, store, mode),
      extra,
      path,
    );
  }
}
