import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ConnectPanel } from '../agents/connect-panel.js';
import { RunPanel } from '../agents/run-panel.js';
import { useOnReconnect } from '../hooks.js';
import { describeError, errorCode, isTransient, RETRY_AFTER_MS, type RpcClient } from '../rpc.js';
import { shownText } from '../shown-text.js';
import type { AgentPresence, MessageSource, QueueSummary } from '../wire.js';
import { ApprovalCards } from './approval-cards.js';
import { CardList } from './card-list.js';
import { CardReader } from './card-reader.js';
import { queueEmptyText } from './empty-state.js';
import { PresenceLine } from './presence.js';

interface QueuePanelProps {
  client: RpcClient;
  agent: string;
  /** The signed-in person's name: approval cards they decided themselves go at once. */
  me: string;
  /** Opens "New message" addressed to this agent (the next step when its queue is not yours to see). */
  onMessage: (agent: string) => void;
  /** Labels of the person's channels by id, for the cards' "in #team". */
  channelLabels: ReadonlyMap<string, string>;
}

/** Most cards one "Resume all" click resumes (a runaway guard; the host keeps the rest returned). */
const MAX_RESUME_ALL = 500;

type Unavailable = { kind: 'denied' | 'not_found' | 'failed'; detail: string };

/** One agent's queue: the live summary, the blocking-card banner, paged cards and the card reader. */
export function QueuePanel({ client, agent, me, onMessage, channelLabels }: QueuePanelProps) {
  const [summary, setSummary] = useState<QueueSummary | null>(null);
  // From queue.summary replies only (pushes do not carry it): whether the reader may pause/resume.
  const [canPause, setCanPause] = useState(false);
  // Presence comes with queue.summary replies and queue.changed pushes alike.
  const [presence, setPresence] = useState<AgentPresence | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The summary could not be read at all: the panel shows one message and a next step instead.
  const [unavailable, setUnavailable] = useState<Unavailable | null>(null);
  const [busy, setBusy] = useState(false);
  const [source, setSource] = useState<MessageSource | ''>('');
  const [openCard, setOpenCard] = useState<{ messageId: string; title: string; returned: boolean } | null>(
    null,
  );

  // Returns a cleanup (it is also the mount effect): a retry pending when the panel goes is dropped.
  const loadSummary = useCallback(() => {
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const attempt = () => {
      client
        .call<QueueSummary>('queue.summary', { agent })
        .then((s) => {
          if (stopped) return;
          setSummary(s);
          setCanPause(s.canPause !== false);
          if (s.presence) setPresence(s.presence);
          setError(null);
          setUnavailable(null);
        })
        .catch((err) => {
          if (stopped) return;
          // A slow reply or a dropped socket: say so and ask again, never a dead end.
          if (isTransient(err)) {
            setError(`could not read the queue: ${describeError(err)}; trying again`);
            retry = setTimeout(attempt, RETRY_AFTER_MS);
            return;
          }
          const code = errorCode(err);
          setUnavailable({
            kind: code === 'denied' || code === 'not_found' ? code : 'failed',
            detail: describeError(err),
          });
        });
    };
    attempt();
    return () => {
      stopped = true;
      clearTimeout(retry);
    };
  }, [client, agent]);

  // One load at a time: a new one (reconnect, an action, "Try again") cancels the previous one's
  // pending retry, and leaving the panel cancels the last.
  const currentLoad = useRef<(() => void) | null>(null);
  const reloadSummary = useCallback(() => {
    currentLoad.current?.();
    currentLoad.current = loadSummary();
  }, [loadSummary]);
  useEffect(() => {
    reloadSummary();
    return () => currentLoad.current?.();
  }, [reloadSummary]);
  useOnReconnect(client, reloadSummary);
  useEffect(() => {
    if (unavailable) return;
    const dispose = client.subscribe({ queues: [agent] });
    // Pushes carry the presence too: a turn that starts or ends is pushed like a queue change.
    const off = client.on('queue.changed', ({ summary: next }) => {
      if (next.agent !== agent) return;
      setSummary(next);
      setPresence(next.presence);
    });
    const offEnded = client.on('subscription.ended', (ended) => {
      if ('queue' in ended && ended.queue === agent) setError(`you can no longer watch ${agent}'s queue`);
    });
    return () => {
      off();
      offEnded();
      dispose();
    };
  }, [client, agent, unavailable]);

  const [resumedCount, setResumedCount] = useState<number | null>(null);
  /**
   * "Resume all": resumes the blocking returned card, reads the summary, and repeats while another
   * returned card blocks, so a failed turn that returned ten messages takes one click. Stops if
   * the host names the same card twice (it did not resume) or after MAX_RESUME_ALL cards.
   */
  const resumeAll = async () => {
    setBusy(true);
    setError(null);
    let resumed = 0;
    try {
      let next = summary?.blockingReturnedMessageId ?? null;
      const seen = new Set<string>();
      while (next !== null && !seen.has(next) && resumed < MAX_RESUME_ALL) {
        seen.add(next);
        await client.call('queue.resume', { agent, messageId: next });
        resumed++;
        const fresh = await client.call<QueueSummary>('queue.summary', { agent });
        setSummary(fresh);
        next = fresh.blockingReturnedMessageId;
      }
      setResumedCount(resumed);
    } catch (err) {
      setError(`resumed ${resumed}, then failed: ${describeError(err)}`);
    } finally {
      setBusy(false);
    }
  };

  const act = async (method: string, params: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await client.call(method, { agent, ...params });
      reloadSummary();
      return true;
    } catch (err) {
      setError(`${method.replace('queue.', '')} failed: ${describeError(err)}`);
      return false;
    } finally {
      setBusy(false);
    }
  };

  const blocking = summary?.blockingReturnedMessageId ?? null;
  // "Connect" opens by itself while the agent never had a turn (nothing attached it yet).
  const [connectAsked, setConnectAsked] = useState<boolean | null>(null);
  const neverRan = presence !== null && presence.lastActivityAt === null;
  const showConnect = connectAsked ?? neverRan;

  if (unavailable)
    return (
      <section class="queue state-message" aria-labelledby="queue-title">
        <h1 id="queue-title">{agent}'s queue</h1>
        {unavailable.kind === 'denied' ? (
          <>
            <p role="alert">
              You can't see {agent}'s queue: only {agent} itself, its managers (the owner too) and people who
              share a channel with it can.
            </p>
            <p class="muted">Write to {agent} to start a direct conversation; its queue then opens here.</p>
            <button type="button" class="button primary" onClick={() => onMessage(agent)}>
              Message {agent}
            </button>
          </>
        ) : unavailable.kind === 'not_found' ? (
          <>
            <p role="alert">There is no agent called {agent} on this host.</p>
            <a class="button" href="#/">
              Back to the list
            </a>
          </>
        ) : (
          <>
            <p role="alert">
              Could not read {agent}'s queue: {unavailable.detail}
            </p>
            <button type="button" class="button primary" onClick={reloadSummary}>
              Try again
            </button>
          </>
        )}
      </section>
    );

  return (
    <section class="queue" aria-labelledby="queue-title">
      <header class="pane-header queue-header">
        <div>
          <h1 id="queue-title">{agent}'s queue</h1>
          <p class="muted small" aria-live="polite" data-testid="queue-summary">
            {summary ? (
              <>
                <strong data-testid="queue-total">{summary.total}</strong> pending · {summary.counts.person}{' '}
                from people · {summary.counts.agent} from agents
                {summary.counts.unknown > 0 && ` · ${summary.counts.unknown} unknown`}
                {summary.paused && <span class="badge">paused</span>}
              </>
            ) : (
              'Loading…'
            )}
          </p>
          {presence && <PresenceLine presence={presence} />}
        </div>
        <div class="queue-actions">
          <label class="visually-hidden" for="queue-source">
            Show cards from
          </label>
          <select
            id="queue-source"
            value={source}
            onChange={(event) => setSource(event.currentTarget.value as MessageSource | '')}
          >
            <option value="">Everyone</option>
            <option value="person">People</option>
            <option value="agent">Agents</option>
            <option value="unknown">Unknown</option>
          </select>
          {canPause && (
            <button
              type="button"
              class="button"
              aria-expanded={showConnect}
              onClick={() => setConnectAsked(!showConnect)}
            >
              Connect
            </button>
          )}
          {!canPause ? null : summary?.paused ? (
            <button type="button" class="button" disabled={busy} onClick={() => void act('queue.resume', {})}>
              Resume queue
            </button>
          ) : (
            <button
              type="button"
              class="button"
              disabled={busy || !summary}
              onClick={() => void act('queue.pause', {})}
            >
              Pause queue
            </button>
          )}
        </div>
      </header>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {/* The run state and Connect share at most a quarter of the queue's height with the cards
          (scrolling, and focusable so the keyboard can scroll it); only those who may control the
          agent see them (the panels ask the host, and render nothing when refused). */}
      <section
        class="agent-panels"
        tabIndex={canPause ? 0 : undefined}
        aria-label={`Running and connecting ${agent}`}
      >
        <RunPanel client={client} agent={agent} />
        {showConnect && <ConnectPanel client={client} agent={agent} />}
      </section>
      <ApprovalCards client={client} agent={agent} me={me} />
      {blocking && (
        <div class="banner" role="alert" data-testid="blocking-banner">
          <p>
            A returned message is blocking delivery to {agent}: nothing after it is delivered until you resume
            or withdraw it.
          </p>
          <div class="banner-actions">
            <button
              type="button"
              class="button"
              onClick={() => setOpenCard({ messageId: blocking, title: 'Returned message', returned: true })}
            >
              Open
            </button>
            <button
              type="button"
              class="button primary"
              disabled={busy}
              onClick={() => void act('queue.resume', { messageId: blocking })}
            >
              Resume
            </button>
            <button type="button" class="button" disabled={busy} onClick={() => void resumeAll()}>
              Resume all
            </button>
          </div>
        </div>
      )}
      {resumedCount !== null && !blocking && (
        <p class="muted pad" aria-live="polite" data-testid="resumed-count">
          Resumed {resumedCount} returned {resumedCount === 1 ? 'message' : 'messages'}.
        </p>
      )}
      {summary === null && <p class="muted pad">Reading {agent}'s queue…</p>}
      {summary !== null && (
        <CardList
          channelLabels={channelLabels}
          emptyText={queueEmptyText(agent, summary, source || undefined)}
          client={client}
          agent={agent}
          source={source || undefined}
          revision={summary?.revision ?? null}
          generation={summary?.generation ?? null}
          onOpen={(row) =>
            setOpenCard({
              messageId: row.messageId,
              title: `From ${shownText(row.senderLabels.join(', ')) || 'unknown sender'}`,
              returned: row.state === 'returned',
            })
          }
        />
      )}
      {openCard && (
        <CardReader
          client={client}
          agent={agent}
          messageId={openCard.messageId}
          title={openCard.title}
          returned={openCard.returned}
          onClose={() => setOpenCard(null)}
          onAction={(method, params) => act(method, params)}
        />
      )}
    </section>
  );
}
