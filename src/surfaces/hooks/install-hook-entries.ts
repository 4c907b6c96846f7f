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

function isSluiceHook(hook: unknown): boolean {
  return (
    hook !== null &&
    typeof hook === 'object' &&
    typeof (hook as JsonObject).command === 'string' &&
    SLUICE_HOOK.test((hook as JsonObject).command as string)
  );
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
): void {
  const groups = arrayAt(hooks, eventName, `${path} hooks`);
  const existing = groups.flatMap((g) =>
    g !== null && typeof g === 'object' && Array.isArray((g as JsonObject).hooks)
      ? ((g as JsonObject).hooks as unknown[]).filter(isSluiceHook)
      : [],
  );
  if (existing.length === 1 && (existing[0] as JsonObject).command === command) return;
  for (let i = groups.length - 1; i >= 0; i--) {
    const group = groups[i] as JsonObject;
    if (group === null || typeof group !== 'object' || !Array.isArray(group.hooks)) continue;
    const kept = (group.hooks as unknown[]).filter((h) => !isSluiceHook(h));
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
