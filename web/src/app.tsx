import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { filterAgents, loadManagedAgents, sidebarAgents, withAgent } from './agents.js';
import { Invitations } from './channels/invitations.js';
import { SidebarChannels, SidebarFilter, useChannelFilter } from './channels/sidebar-channels.js';
import { Timeline } from './channels/timeline.js';
import { useSidebarChannels } from './channels/use-sidebar-channels.js';
import { routeHref, useConnectionStatus, useOnReconnect, useRoute } from './hooks.js';
import { usePendingApprovalCounts } from './queue/pending-approvals.js';
import { QueuePanel } from './queue/queue-panel.js';
import type { ConnectionStatus, RpcClient } from './rpc.js';
import { logOut } from './session.js';
import { NewChannelDialog, NewMessageDialog } from './start/start-dialogs.js';
import type { ChannelSummary, Hello, PrincipalRef } from './wire.js';

export interface AppProps {
  client: RpcClient;
  hello: Hello;
}

/** `dm:alice,helper` shows as the other member's name; groups as `#name`. */
export function channelLabel(channel: ChannelSummary, me: PrincipalRef): string {
  if (channel.kind !== 'dm') return `#${channel.name}`;
  const others = channel.members.filter((m) => m.id !== me.id);
  return `@${(others.length ? others : channel.members).map((m) => m.name).join(', ')}`;
}

/** "3", or "99+" from 100 on (the host counts up to 100). */
export function unreadLabel(unread: number): string {
  return unread > 99 ? '99+' : String(unread);
}

/**
 * The top bar's word for the connection: "live" only while the host answers; a host that stopped
 * answering over an open socket reads as "reconnecting…" like a dropped one.
 */
export function statusLabel(status: ConnectionStatus): string {
  if (status === 'open') return 'live';
  if (status === 'closed') return 'offline';
  if (status === 'stalled') return 'reconnecting…';
  return `${status}…`;
}

function agentsOf(channels: readonly ChannelSummary[], me: PrincipalRef): string[] {
  const names = new Set<string>();
  if (me.kind === 'agent') names.add(me.name);
  for (const channel of channels) for (const m of channel.members) if (m.kind === 'agent') names.add(m.name);
  return [...names].sort();
}

export function App({ client, hello }: AppProps) {
  const route = useRoute();
  const status = useConnectionStatus(client);
  const me = hello.principal;
  // The sidebar's channels: one page at load, more as the person asks (channels/*).
  const sidebar = useSidebarChannels(client);
  const { channels, error } = sidebar;
  // Requests waiting on this person's decision, per agent (live; none for who may not decide).
  const approvalCounts = usePendingApprovalCounts(client);
  const loadChannels = sidebar.reload;
  // The agents this person manages: listed even when they share no channel with them.
  const [managed, setManaged] = useState<string[] | null>(null);
  const loadManaged = useCallback(() => {
    loadManagedAgents((method, params) => client.call(method, params))
      .then(setManaged)
      // An older host without the filter, or a failed read: the channels' agents are still listed.
      .catch(() => setManaged((list) => list ?? []));
  }, [client]);
  useOnReconnect(client, loadManaged);
  const [starting, setStarting] = useState<'message' | 'channel' | null>(null);
  const [messageTo, setMessageTo] = useState('');
  const startMessage = (to: string) => {
    setMessageTo(to);
    setStarting('message');
  };
  /** After a DM or channel was made (or left): show the fresh list, then go there. */
  const goTo = async (channelId: string | null) => {
    setStarting(null);
    loadManaged();
    await loadChannels();
    window.location.hash = channelId === null ? '#/' : routeHref({ kind: 'channel', channelId });
  };
  // An agent was added (from the CLI too) or its managers changed: is it this person's now? (The
  // channel-list subscription above brings these.)
  useEffect(
    () =>
      client.on('agent.managed', ({ agent, managed: mine }) =>
        setManaged((list) => list && withAgent(list, agent.name, mine)),
      ),
    [client],
  );
  // After the subscription above, so an agent added meanwhile is pushed or read, never missed.
  useEffect(loadManaged, [loadManaged]);

  const channelLabels = useMemo(
    () => new Map((channels ?? []).map((c) => [c.id, channelLabel(c, me)] as const)),
    [channels, me],
  );
  const agents = useMemo(
    () => sidebarAgents(managed ?? [], agentsOf(channels ?? [], me)),
    [managed, channels, me],
  );
  // The sidebar's filter box: the host filters the channels, the page the agents by name.
  const [filterText, setFilterText] = useState('');
  const channelFilter = useChannelFilter(client, filterText);
  const filtering = filterText.trim() !== '';
  const shownAgents = useMemo(
    () => filterAgents(agents, agentsOf(channelFilter.result?.channels ?? [], me), filterText),
    [agents, channelFilter.result, me, filterText],
  );
  const mainPane = useRef<HTMLElement>(null);
  // Closing a start dialog may follow "New agent…": read the managed agents again.
  const closeDialog = () => {
    setStarting(null);
    loadManaged();
  };
  const selectedChannel =
    route.kind === 'channel' ? (channels ?? []).find((c) => c.id === route.channelId) : undefined;
  // A link to a channel no page has reached yet: ask for that one row.
  const { find } = sidebar;
  const missing = route.kind === 'channel' && channels !== null && !selectedChannel ? route.channelId : null;
  useEffect(() => {
    if (missing !== null) void find(missing);
  }, [missing, find]);

  return (
    <div class={`shell ${route.kind === 'home' ? 'at-home' : 'at-detail'}`}>
      {/* First stop for the keyboard. A button, not a `#main-content` link: the page routes by the
          hash, so following a fragment would change the route. */}
      <button type="button" class="skip-link" onClick={() => mainPane.current?.focus()}>
        Skip to main content
      </button>
      <header class="topbar">
        {route.kind !== 'home' && (
          <a class="back button ghost" href="#/" aria-label="Back to the list">
            ‹ Back
          </a>
        )}
        <h1 class="brand">Sluice</h1>
        <span
          class={`status status-${status}`}
          role="status"
          aria-live="polite"
          title={status === 'stalled' ? 'The host has not answered for a few seconds' : undefined}
        >
          {statusLabel(status)}
        </span>
        <span class="me" title={`signed in as ${me.name}`}>
          {me.name}
        </span>
        <button type="button" class="button ghost" onClick={() => void logOut()}>
          Log out
        </button>
      </header>
      <nav class="sidebar" aria-label="Channels and agents">
        {error && (
          <div class="error" role="alert">
            <p>{error}</p>
            <button type="button" class="button" onClick={() => void loadChannels()}>
              Try again
            </button>
          </div>
        )}
        <div class="start-buttons">
          <button type="button" class="button" onClick={() => startMessage('')}>
            New message
          </button>
          <button type="button" class="button" onClick={() => setStarting('channel')}>
            New channel
          </button>
        </div>
        <Invitations client={client} onJoined={(id) => void goTo(id)} />
        <SidebarFilter text={filterText} onText={setFilterText} />
        <h2 id="channels-heading">Channels</h2>
        <SidebarChannels
          list={sidebar}
          text={filterText}
          filter={channelFilter}
          route={route}
          label={(channel) => channelLabel(channel, me)}
          unreadLabel={unreadLabel}
        />
        <h2 id="agents-heading">Agent queues</h2>
        {filtering && shownAgents.length === 0 ? (
          <p class="muted">No agent matches "{filterText.trim()}".</p>
        ) : shownAgents.length === 0 ? (
          <p class="muted">
            {channels === null || managed === null
              ? 'Loading agents…'
              : `You have no agents yet. Press New message to write to one${hello.canAddAgent ? ', or to add one with New agent…' : ''}.`}
          </p>
        ) : (
          <ul class="nav-list" aria-labelledby="agents-heading">
            {shownAgents.map((agent) => {
              const waiting = approvalCounts.get(agent) ?? 0;
              return (
                <li key={agent}>
                  <a
                    class="nav-item"
                    href={routeHref({ kind: 'queue', agent })}
                    aria-current={route.kind === 'queue' && route.agent === agent ? 'page' : undefined}
                    data-agent={agent}
                    aria-describedby={waiting > 0 ? `approvals-${agent}` : undefined}
                  >
                    <span class="nav-label">{agent}</span>
                    {waiting > 0 && (
                      <span class="approval-badge" aria-hidden="true" title="waiting for your decision">
                        {unreadLabel(waiting)}
                      </span>
                    )}
                  </a>
                  {waiting > 0 && (
                    <span id={`approvals-${agent}`} hidden>
                      {waiting} waiting for your decision
                    </span>
                  )}
                </li>
              );
            })}
          </ul>
        )}
      </nav>
      <main class="pane" id="main-content" tabIndex={-1} ref={mainPane}>
        {route.kind === 'home' && (
          <section class="empty-pane">
            <p class="muted">Pick a channel to read and write, or an agent to watch its queue.</p>
          </section>
        )}
        {route.kind === 'channel' &&
          (selectedChannel ? (
            <Timeline
              key={selectedChannel.id}
              client={client}
              channel={selectedChannel}
              me={me}
              title={channelLabel(selectedChannel, me)}
              onLeft={() => void goTo(null)}
            />
          ) : (
            <p class="muted pad">
              {channels === null
                ? error
                  ? 'The channel list could not be read; press Try again in the list.'
                  : 'Loading channels…'
                : 'That channel is not one of yours (or you left it). Pick one from the list, or press New channel.'}
            </p>
          ))}
        {route.kind === 'queue' && (
          <QueuePanel
            key={route.agent}
            client={client}
            agent={route.agent}
            me={me.name}
            onMessage={startMessage}
            channelLabels={channelLabels}
          />
        )}
      </main>
      {starting === 'message' && (
        <NewMessageDialog
          client={client}
          me={me}
          initialTo={messageTo}
          canAddAgent={hello.canAddAgent === true}
          onClose={closeDialog}
          onDone={(id) => void goTo(id)}
        />
      )}
      {starting === 'channel' && (
        <NewChannelDialog
          client={client}
          me={me}
          onClose={() => setStarting(null)}
          onDone={(id) => void goTo(id)}
        />
      )}
    </div>
  );
}
