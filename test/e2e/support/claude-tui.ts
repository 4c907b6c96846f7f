// The real Claude Code interactive TUI under tmux, for the wake proof: a config in which every
// start-up question is already answered (so no keystroke is ever typed), and waits on what can be
// observed — the pane's text, a process's kernel state — never on time.
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ClaudeHome } from './run-claude.js';

/** The tmux binary, or '' when it is not installed. */
export function findTmux(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v tmux'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

/** Polls `predicate` (50 ms) until it holds; throws naming `what` after `timeoutMs`. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Answers, in the config Claude Code 2.1.x reads at start, every question its TUI would otherwise
 * ask before the prompt: onboarding and theme (`hasCompletedOnboarding`, `theme`), the custom API
 * key (`customApiKeyResponses.approved` holds the key's last 20 characters), the bypass-permissions
 * warning (`bypassPermissionsModeAccepted`) and the folder trust (`projects[<dir>]
 * .hasTrustDialogAccepted`). This is the state a user's own config is in after answering them once.
 *
 * Trust is written for the working directory and every folder above it, under both the given and
 * the resolved spelling: Claude Code takes the nearest folder holding a `.git` entry as the
 * workspace and asks for *its* trust. Other tests on this machine leave an empty `/tmp/.git`
 * behind (with `.codex`, `.agents`, …), so a project under /tmp is then asked about as `/tmp` —
 * the dialog the CI run met, depending on which tests had run before. Both config files are
 * written: `$CLAUDE_CONFIG_DIR/.claude.json` is the one read when the variable is set.
 */
export function preacceptClaudeTui(home: ClaudeHome, apiKey: string, version: string): void {
  const dirs = new Set([...folderAndAbove(home.cwd), ...folderAndAbove(realpathSync(home.cwd))]);
  for (const file of [join(home.configDir, '.claude.json'), join(home.home, '.claude.json')]) {
    const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> & {
      projects?: Record<string, Record<string, unknown>>;
    };
    config.hasCompletedOnboarding = true;
    config.lastOnboardingVersion = version;
    config.lastReleaseNotesSeen = version;
    config.theme = 'dark';
    config.bypassPermissionsModeAccepted = true;
    config.customApiKeyResponses = { approved: [apiKey.slice(-20)], rejected: [] };
    config.projects ??= {};
    for (const dir of dirs) {
      config.projects[dir] = {
        ...config.projects[dir],
        hasTrustDialogAccepted: true,
        hasCompletedProjectOnboarding: true,
        allowedTools: config.projects[dir]?.allowedTools ?? [],
      };
    }
    writeFileSync(file, JSON.stringify(config, null, 2));
  }
}

/** `dir` and each folder above it, up to the root. */
function folderAndAbove(dir: string): string[] {
  const out = [dir];
  for (let d = dir; dirname(d) !== d; d = dirname(d)) out.push(dirname(d));
  return out;
}

/** Start-up dialogs that mean the config above was not honoured (the test never types an answer). */
const STARTUP_DIALOGS: readonly [RegExp, string][] = [
  [/Yes, I trust this folder|Do you trust the files in this folder/, 'the folder-trust dialog'],
  [/Choose the text style|Let's get started/, 'the onboarding (theme) dialog'],
  [/Do you want to use this API key/, 'the custom API key dialog'],
  [/Yes, I accept|Bypass Permissions mode/, 'the bypass-permissions warning'],
];

/** The TUI is at its prompt: the input box and the permission-mode line are drawn. */
const READY = /❯/;
const READY_STATUS = /bypass permissions on/;
/** A turn is running: Claude Code's spinner line offers the interrupt. */
const BUSY = /esc to interrupt/;

/** One tmux server (its own socket) running TUI sessions. */
export class TmuxTui {
  constructor(
    readonly tmuxPath: string,
    readonly socket: string,
  ) {}

  private tmux(...args: string[]): string {
    return execFileSync(this.tmuxPath, ['-S', this.socket, ...args], { encoding: 'utf8' });
  }

  /** Starts `script` (an executable that execs the client) in a detached 160×45 session. */
  start(name: string, script: string): void {
    this.tmux('new-session', '-d', '-s', name, '-x', '160', '-y', '45', script);
  }

  /** The pane's visible text ('' once the session is gone). */
  pane(name: string): string {
    try {
      return this.tmux('capture-pane', '-p', '-t', name);
    } catch {
      return '';
    }
  }

  /** The pid of the process the pane runs (the client itself: the script execs it). */
  panePid(name: string): number {
    return Number(this.tmux('display-message', '-p', '-t', name, '#{pane_pid}').trim());
  }

  /** Whether the TUI is drawn at its prompt with no turn running. */
  idleAtPrompt(name: string): boolean {
    const text = this.pane(name);
    return READY.test(text) && READY_STATUS.test(text) && !BUSY.test(text);
  }

  /** Whether the TUI shows a running turn. */
  busy(name: string): boolean {
    return BUSY.test(this.pane(name));
  }

  /**
   * Resolves once the TUI is at its prompt. A start-up dialog fails at once, naming it, with the
   * pane: the config should have answered it, and nothing here types an answer.
   */
  async waitReady(name: string, timeoutMs = 60_000): Promise<void> {
    await until(
      () => {
        const text = this.pane(name);
        for (const [pattern, what] of STARTUP_DIALOGS) {
          if (pattern.test(text)) {
            throw new Error(`Claude Code showed ${what} although the test config answers it:\n${text}`);
          }
        }
        return READY.test(text) && READY_STATUS.test(text);
      },
      `the TUI ${name} is at its prompt`,
      timeoutMs,
    ).catch((err: Error) => {
      if (/^timed out/.test(err.message)) err.message += `\n${this.pane(name)}`;
      throw err;
    });
  }

  /** Ends a session (SIGHUP to the client) and resolves once the client process has exited. */
  async kill(name: string): Promise<void> {
    const pid = this.panePid(name);
    this.tmux('kill-session', '-t', name);
    await until(() => !processAlive(pid), `the client of ${name} (pid ${pid}) has exited`, 30_000);
  }

  killServer(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a Node process's main thread sleeps in its event loop (`epoll_wait`): everything it was
 * doing synchronously — for a waiter, the first look at the inbox after it registered — is done.
 */
export function sleepsInEventLoop(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/wchan`, 'utf8').includes('epoll_wait');
  } catch {
    return false;
  }
}
