import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import { formatBytes, isImage, mediaUrl } from '../media.js';
import { MembersButton } from '../members/members-dialog.js';
import { describeError, type RpcClient } from '../rpc.js';
import { shownText } from '../shown-text.js';
import { RelativeTime } from '../time.js';
import type {
  ChannelSummary,
  HistoryPage,
  MessageStatus,
  PrincipalRef,
  ReplyExcerpt,
  TimelineEntry,
  TimelineMessage,
} from '../wire.js';
import { Composer, filesFrom } from './composer.js';
import { isMessageStub, mergeMessages, mergeStub, plainExcerpt } from './history.js';
import { MessageBody } from './message-body.js';
import { MessageStubItem } from './message-stub.js';
import { StatusLine } from './status-line.js';
import { StatusReads } from './status-reads.js';
import { useWholeMessage } from './whole-message.js';

interface TimelineProps {
  client: RpcClient;
  channel: ChannelSummary;
  /** The person signed in: their own messages show where each agent's copy stands. */
  me: PrincipalRef;
  title: string;
  /** The person left this channel (it is gone from their list). */
  onLeft: () => void;
}

/** How close to the top (px) the reader must scroll before the next older page is fetched. */
const LOAD_OLDER_THRESHOLD = 240;
/** Older pages read while looking for a replied-to message before giving up. */
const MAX_SEEK_PAGES = 20;

/** The message's element in the timeline, if it is loaded. */
function messageElement(root: HTMLElement | null, messageId: string): HTMLElement | null {
  return root?.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(messageId)}"]`) ?? null;
}

export function Timeline({ client, channel, me, title, onLeft }: TimelineProps) {
  // Records, and stubs of messages pushed over the reply budget (message-stub.tsx).
  const [messages, setMessages] = useState<TimelineEntry[]>([]);
  const messagesRef = useRef(messages);
  messagesRef.current = messages;
  const [olderCursor, setOlderCursor] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const attach = useRef<((files: File[]) => void) | null>(null);
  const [dragging, setDragging] = useState(false);
  const [replyingTo, setReplyingTo] = useState<TimelineMessage | null>(null);
  // Where the person's own messages stand with each agent (message.status), by message id.
  const [statuses, setStatuses] = useState<ReadonlyMap<string, MessageStatus>>(new Map());
  const statusReads = useRef<StatusReads | null>(null);
  const asked = useRef(new Set<string>());
  /** Whether the person wrote this message to at least one agent: only those have a status line. */
  const tracked = (m: TimelineEntry) => !isMessageStub(m) && m.author.id === me.id && m.receiptCount > 0;
  const takePastedFiles = (event: ClipboardEvent) => {
    const pasted = filesFrom(event.clipboardData);
    if (pasted.length === 0) return;
    event.preventDefault();
    attach.current?.(pasted);
  };
  // Set before a state change that should keep the view pinned to the bottom, or to the same message.
  const scrollIntent = useRef<{ kind: 'bottom' } | { kind: 'keep'; fromBottom: number } | null>(null);

  const nearBottom = () => {
    const el = scroller.current;
    return !el || el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };
  // Whether the view follows the newest message: from the first load (and a send) until the reader
  // scrolls up, and again once they are back at the bottom. Thumbnails arrive after the scroll was
  // set and grow the timeline below the view; while pinned, each one that loads scrolls to the
  // bottom again, so the newest message stays in view (the store keeps no image sizes to reserve).
  const pinned = useRef(true);
  const lastScrollTop = useRef(0);
  const pinIfFollowing = useCallback(() => {
    const el = scroller.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, []);

  /** The newest page, merged in (first load, after a send, after a reconnect). */
  const loadNewest = useCallback(
    (first: boolean) => {
      client
        .call<HistoryPage>('channel.history', { channelId: channel.id })
        .then((page) => {
          if (first || pinned.current || nearBottom()) scrollIntent.current = { kind: 'bottom' };
          setMessages((current) => mergeMessages(current, page.messages));
          if (first) setOlderCursor(page.nextCursor);
          setLoaded(true);
          setError(null);
        })
        .catch((err) =>
          setError(`Could not load messages: ${describeError(err)}. Pick the channel again to retry.`),
        );
    },
    [client, channel.id],
  );

  useEffect(() => loadNewest(true), [loadNewest]);
  useOnReconnect(client, () => {
    loadNewest(false);
    // Pushes were missed while the socket was down: every shown status is read again.
    for (const id of asked.current) statusReads.current?.request(id);
  });

  useEffect(() => {
    const reads = new StatusReads(
      (messageId) => client.call<MessageStatus>('message.status', { message_id: messageId }),
      (status) => setStatuses((current) => new Map(current).set(status.messageId, status)),
    );
    statusReads.current = reads;
    asked.current = new Set();
    setStatuses(new Map());
    return () => reads.close();
  }, [client, channel.id]);

  // Each own message gets its status read once when it first shows; pushes re-read it after.
  useEffect(() => {
    for (const m of messages) {
      if (!tracked(m) || asked.current.has(m.messageId)) continue;
      asked.current.add(m.messageId);
      statusReads.current?.request(m.messageId);
    }
  });

  useEffect(() => {
    const dispose = client.subscribe({ channels: [channel.id] });
    const offMessage = client.on('channel.message', ({ channelId, kind, message }) => {
      if (channelId !== channel.id) return;
      if (pinned.current || nearBottom()) scrollIntent.current = { kind: 'bottom' };
      // A stub: the record did not fit this connection's reply budget even compact, and neither
      // would a history page holding it; its row reads the text in parts when asked.
      if (isMessageStub(message)) {
        setMessages((current) => mergeStub(current, message, kind === 'message.edited'));
        return;
      }
      setMessages((current) => mergeMessages<TimelineEntry>(current, [message]));
      // An agent's reply to one of the person's messages makes that one answered.
      const parent = message.replyTo;
      if (parent && asked.current.has(parent)) statusReads.current?.request(parent);
    });
    // Events overflowed while this socket was backed up: the host sends one resync notice instead.
    const offResync = client.on('channel.resync', ({ channelId }) => {
      if (channelId === channel.id) loadNewest(false);
    });
    const offEnded = client.on('subscription.ended', (ended) => {
      if ('channel' in ended && ended.channel === channel.id)
        setError('you are no longer a member of this channel');
    });
    // An agent's copy of a message moved (offered, received, handled, archived, returned…).
    const offReceipts = client.on('channel.receipts', (event) => {
      if (event.channelId !== channel.id) return;
      // Sent when an inbox entry moves and when a model was offered or received the message.
      if (asked.current.has(event.messageId)) statusReads.current?.request(event.messageId);
      setMessages((current) =>
        current.map((m) =>
          m.messageId === event.messageId && !isMessageStub(m)
            ? { ...m, receipts: event.receipts, receiptCount: event.receiptCount }
            : m,
        ),
      );
    });
    const off = () => {
      offMessage();
      offResync();
      offEnded();
      offReceipts();
    };
    return () => {
      off();
      dispose();
    };
  }, [client, channel.id, loadNewest]);

  const loadOlder = useCallback(() => {
    if (!olderCursor || loadingOlder) return;
    setLoadingOlder(true);
    client
      .call<HistoryPage>('channel.history', { channelId: channel.id, cursor: olderCursor })
      .then((page) => {
        const el = scroller.current;
        if (el) scrollIntent.current = { kind: 'keep', fromBottom: el.scrollHeight - el.scrollTop };
        setMessages((current) => mergeMessages(current, page.messages));
        setOlderCursor(page.nextCursor);
      })
      .catch((err) => setError(`could not load older messages: ${describeError(err)}`))
      .finally(() => setLoadingOlder(false));
  }, [client, channel.id, olderCursor, loadingOlder]);

  // After the DOM grew: stick to the bottom for new messages, or keep the same message in view
  // when older ones were inserted above it.
  useLayoutEffect(() => {
    const el = scroller.current;
    const intent = scrollIntent.current;
    scrollIntent.current = null;
    if (!el || !intent) return;
    el.scrollTop = intent.kind === 'bottom' ? el.scrollHeight : el.scrollHeight - intent.fromBottom;
  }, [messages]);

  // Reading the newest message at the bottom of a visible page marks the channel read for the
  // people watching it (presentation only: it never touches an agent's inbox).
  const markedSeq = useRef(0);
  const markNewestRead = useCallback(() => {
    const newest = messagesRef.current[messagesRef.current.length - 1];
    if (!newest || newest.seq <= markedSeq.current || document.visibilityState !== 'visible' || !nearBottom())
      return;
    markedSeq.current = newest.seq;
    client.call('message.markRead', { messageId: newest.messageId }).catch(() => {
      markedSeq.current = 0;
    });
  }, [client]);
  useEffect(markNewestRead, [messages, markNewestRead]);

  // "Jump to the replied-to message": scroll to it when loaded, else read older pages until it is.
  const [seeking, setSeeking] = useState<{ messageId: string; pages: number } | null>(null);
  const [seekNote, setSeekNote] = useState<string | null>(null);
  const showMessage = useCallback((messageId: string) => {
    const el = messageElement(scroller.current, messageId);
    if (!el) return false;
    el.scrollIntoView({ block: 'center' });
    el.focus({ preventScroll: true });
    el.classList.add('flash');
    setTimeout(() => el.classList.remove('flash'), 1600);
    return true;
  }, []);
  const jumpTo = (messageId: string) => {
    setSeekNote(null);
    if (!showMessage(messageId)) setSeeking({ messageId, pages: 0 });
  };
  useEffect(() => {
    if (!seeking || loadingOlder) return;
    if (showMessage(seeking.messageId)) {
      setSeeking(null);
    } else if (!olderCursor || seeking.pages >= MAX_SEEK_PAGES) {
      setSeeking(null);
      setSeekNote(
        olderCursor
          ? 'The replied-to message is further back: scroll up to find it.'
          : 'The replied-to message is not in this channel any more.',
      );
    } else {
      setSeeking({ ...seeking, pages: seeking.pages + 1 });
      loadOlder();
    }
  }, [seeking, messages, olderCursor, loadingOlder, loadOlder, showMessage]);

  // A short first page may not fill the screen, so no scroll event would ever ask for more.
  useEffect(() => {
    const el = scroller.current;
    if (el && loaded && olderCursor && el.scrollHeight <= el.clientHeight + LOAD_OLDER_THRESHOLD) loadOlder();
  }, [loaded, olderCursor, loadOlder]);

  // `load` does not bubble: caught on the way down, for every image in the timeline.
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const onLoad = (event: Event) => {
      if (event.target instanceof HTMLImageElement) pinIfFollowing();
    };
    el.addEventListener('load', onLoad, true);
    return () => el.removeEventListener('load', onLoad, true);
  }, [pinIfFollowing]);

  // A screenshot pasted while nothing in particular has focus still goes to this channel's composer.
  useEffect(() => {
    const onPaste = (event: ClipboardEvent) => {
      if (event.defaultPrevented) return;
      const target = event.target as HTMLElement | null;
      if (target?.closest('input, textarea, [contenteditable="true"], dialog')) return;
      takePastedFiles(event);
    };
    document.addEventListener('paste', onPaste);
    return () => document.removeEventListener('paste', onPaste);
  }, []);

  const onScroll = () => {
    const el = scroller.current;
    if (el) {
      // Growth below the view never moves scrollTop up, so moving up is the reader's doing.
      if (el.scrollTop < lastScrollTop.current - 1) pinned.current = false;
      else if (nearBottom()) pinned.current = true;
      lastScrollTop.current = el.scrollTop;
      if (el.scrollTop < LOAD_OLDER_THRESHOLD) loadOlder();
    }
    markNewestRead();
  };

  return (
    <section
      class={`timeline${dragging ? ' dragging' : ''}`}
      aria-labelledby="timeline-title"
      onDragOver={(event) => {
        if (!event.dataTransfer?.types.includes('Files')) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={(event) => {
        if (event.relatedTarget === null || !event.currentTarget.contains(event.relatedTarget as Node))
          setDragging(false);
      }}
      onDrop={(event) => {
        setDragging(false);
        const dropped = filesFrom(event.dataTransfer);
        if (dropped.length === 0) return;
        event.preventDefault();
        attach.current?.(dropped);
      }}
      onPaste={(event) => takePastedFiles(event)}
    >
      <header class="pane-header">
        <h1 id="timeline-title">{title}</h1>
        <span class="muted small members">
          {channel.members.map((m) => m.name).join(', ')}
          {channel.memberCount > channel.members.length &&
            ` +${channel.memberCount - channel.members.length}`}
        </span>
        {channel.kind === 'group' && <MembersButton client={client} channel={channel} me={me} />}
        {channel.kind === 'group' && <LeaveButton client={client} channel={channel} onLeft={onLeft} />}
      </header>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {seekNote && (
        <p class="muted small pad" role="status">
          {seekNote}
        </p>
      )}
      <div class="messages" ref={scroller} onScroll={onScroll} role="log" aria-label={`Messages in ${title}`}>
        {olderCursor ? (
          <button type="button" class="button ghost load-older" onClick={loadOlder} disabled={loadingOlder}>
            {loadingOlder ? 'Loading older messages…' : 'Load older messages'}
          </button>
        ) : (
          loaded && <p class="muted small center">Beginning of {title}</p>
        )}
        {!loaded && !error && <p class="muted pad">Loading…</p>}
        {loaded && messages.length === 0 && (
          <p class="muted pad">No messages yet. Write the first one below.</p>
        )}
        {messages.map((message) =>
          isMessageStub(message) ? (
            <MessageStubItem key={message.messageId} client={client} stub={message} />
          ) : (
            <MessageItem
              key={message.messageId}
              message={message}
              client={client}
              mine={message.author.id === me.id}
              status={statuses.get(message.messageId)}
              onJump={jumpTo}
              onReply={() => setReplyingTo(message)}
            />
          ),
        )}
      </div>
      <Composer
        client={client}
        channelId={channel.id}
        channelTitle={title}
        onSent={() => {
          // The person's own message (a picture too) is shown whole at the bottom.
          pinned.current = true;
          loadNewest(false);
        }}
        attach={attach}
        replyTo={
          replyingTo && {
            messageId: replyingTo.messageId,
            author: shownText(replyingTo.author.name),
            excerpt: shownText(plainExcerpt(firstLine(replyingTo.body))),
          }
        }
        onCancelReply={() => setReplyingTo(null)}
      />
    </section>
  );
}

/** A body's first non-empty line, at most 80 characters, for the composer's "Replying to". */
function firstLine(body: string): string {
  const line =
    body
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  return line.length > 80 ? `${line.slice(0, 80)}…` : line;
}

/** A reply's quote of its parent: author and first line; pressing it shows the parent. */
function ReplyQuote({ reply, onJump }: { reply: ReplyExcerpt | null; onJump: () => void }) {
  if (reply === null)
    return <p class="reply-quote reply-gone muted small">Replying to a message that is gone</p>;
  const excerpt = reply.deleted ? 'a deleted message' : shownText(plainExcerpt(reply.excerpt));
  // The name starts with what the quote shows ("A: line"), so speech and sight agree (axe).
  return (
    <button
      type="button"
      class="reply-quote"
      onClick={onJump}
      title="Show the message this replies to"
      aria-label={`Replying to ${shownText(reply.author.name)}: ${excerpt}`}
    >
      <span class={`reply-author kind-${reply.author.kind}`}>{shownText(reply.author.name)}:</span>
      <span class="reply-excerpt">{excerpt}</span>
    </button>
  );
}

function MessageItem({
  message,
  client,
  mine,
  status,
  onJump,
  onReply,
}: {
  message: TimelineMessage;
  client: RpcClient;
  mine: boolean;
  /** The message's `message.status`, once read (own messages only). */
  status: MessageStatus | undefined;
  onJump: (messageId: string) => void;
  onReply: () => void;
}) {
  const { whole, reading: expanding, error, read: expand } = useWholeMessage(client, message.messageId);
  const body = whole ?? message.body;
  return (
    <article class={`message${mine ? ' mine' : ''}`} data-message-id={message.messageId} tabIndex={-1}>
      <header>
        <span class={`author kind-${message.author.kind}`}>{shownText(message.author.name)}</span>
        <RelativeTime iso={message.createdAt} />
        {message.editedAt && <span class="muted small">(edited)</span>}
        <button
          type="button"
          class="button ghost reply-button"
          onClick={onReply}
          aria-label={`Reply to ${shownText(message.author.name)}`}
        >
          Reply
        </button>
      </header>
      {message.replyTo && (
        <ReplyQuote
          reply={message.replyExcerpt ?? null}
          onJump={() => message.replyTo && onJump(message.replyTo)}
        />
      )}
      {message.subject && <p class="subject">{shownText(message.subject)}</p>}
      {body && <MessageBody body={body} bytes={message.bodyBytes} />}
      {message.truncated && whole === null && (
        <button type="button" class="button ghost" onClick={expand} disabled={expanding}>
          {expanding ? 'Reading…' : `Show the whole message (${formatBytes(message.bodyBytes)})`}
        </button>
      )}
      {error && <p class="error">{error}</p>}
      {message.attachments.length > 0 && (
        <ul class="attachments">
          {message.attachments.map((a) => (
            <li key={a.attachment_id}>
              {isImage(a.mime) ? (
                <a href={mediaUrl(a.attachment_id)} target="_blank" rel="noopener">
                  <img src={mediaUrl(a.attachment_id)} alt={a.name} loading="lazy" />
                </a>
              ) : (
                <a class="file" href={mediaUrl(a.attachment_id)} download={a.name}>
                  {a.name} <span class="muted small">{formatBytes(a.size)}</span>
                </a>
              )}
            </li>
          ))}
        </ul>
      )}
      {mine && message.receiptCount > 0 && <StatusLine message={message} status={status} />}
    </article>
  );
}

/** "Leave", then a confirmation: the person stops receiving the channel; a DM cannot be left. */
function LeaveButton({
  client,
  channel,
  onLeft,
}: {
  client: RpcClient;
  channel: ChannelSummary;
  onLeft: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [leaving, setLeaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const leave = () => {
    setLeaving(true);
    setError(null);
    client
      .call('channel.leave', { channel_id: channel.id })
      .then(onLeft)
      .catch((err) => {
        setError(`could not leave: ${describeError(err)}`);
        setLeaving(false);
      });
  };
  if (!confirming)
    return (
      <button type="button" class="button ghost" onClick={() => setConfirming(true)}>
        Leave
      </button>
    );
  return (
    <fieldset class="leave-confirm" aria-label={`Leave #${channel.name}?`}>
      <span>Leave #{channel.name}? You can be added back by a member.</span>
      <button type="button" class="button danger" onClick={leave} disabled={leaving}>
        {leaving ? 'Leaving…' : 'Yes, leave'}
      </button>
      <button type="button" class="button ghost" onClick={() => setConfirming(false)} disabled={leaving}>
        Cancel
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </fieldset>
  );
}
