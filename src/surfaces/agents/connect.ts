import { shellWord } from '../../core/shell-word.js';
import type { ConnectCommand, ConnectInfo } from '../../core/wire/index.js';
import { sluiceCommandForHome, sluiceCommandHere } from '../cli/on-path.js';
import type { SluiceLauncher } from '../hooks/install-files.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { ConnectCommand, ConnectInfo };

// The page's "Connect" panel (docs/agents.md, docs/web.md): the exact commands that attach a client
// to one agent on this host, as a person types them in a shell on this machine.

export interface ConnectPlace {
  launcher: SluiceLauncher;
  home: string;
  dialect: 'sqlite' | 'postgres';
  env?: NodeJS.ProcessEnv;
  /** The home a shell gets without `--home` (default `~/.sluice`; `$SLUICE_HOME` is the server's, not the user's). */
  defaultHome?: string;
}

function commandsFor(client: 'claude' | 'codex', sluice: string, agent: string): ConnectCommand[] {
  const name = client === 'claude' ? 'Claude Code' : 'Codex';
  const as = shellWord(agent);
  return [
    {
      id: 'run',
      label: `Run it from the host with ${name}: in your project folder, run`,
      command: `${sluice} agent run ${as} --driver ${client} --cwd .`,
    },
    {
      id: 'hooks',
      // Where each installs by default (`sluice hooks install`): Claude a project's local
      // settings, Codex the user's settings, so every Codex session receives this agent's inbox.
      label:
        client === 'claude'
          ? `Or use ${name} yourself: install the hooks and MCP tools into a project (in its folder), then start ${client} there`
          : `Or use ${name} yourself: install the hooks and MCP tools into your Codex user settings (every codex you start then answers for this agent), then start ${client} in your project`,
      command: `${sluice} hooks install ${client} --as ${as}`,
    },
    {
      id: 'mcp',
      label: 'Any MCP client: the stdio server for this agent',
      command: `${sluice} mcp --as ${as}`,
    },
  ];
}

/** The Connect panel's commands for `agent` on this host. */
export function connectInfo(agent: string, place: ConnectPlace): ConnectInfo {
  const env = place.env ?? process.env;
  const here = sluiceCommandHere(place.launcher, env);
  const sluice = sluiceCommandForHome(place.launcher, place.home, {
    env,
    ...(place.defaultHome === undefined ? {} : { defaultHome: place.defaultHome }),
  });
  return {
    agent,
    sluice,
    pathStep:
      here === 'sluice'
        ? null
        : `mkdir -p ~/.local/bin && ln -sf ${shellWord(place.launcher.bin)} ~/.local/bin/sluice   # then sluice … works in new shells (with ~/.local/bin on PATH)`,
    needsDatabaseUrl: place.dialect === 'postgres',
    claude: commandsFor('claude', sluice, agent),
    codex: commandsFor('codex', sluice, agent),
  };
}
