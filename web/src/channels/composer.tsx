import { type MutableRef, useEffect, useRef, useState } from 'preact/hooks';
import { formatBytes, isImage, uploadMedia } from '../media.js';
import { describeError, type RpcClient, RpcError } from '../rpc.js';
import type { AttachmentRef, SentReply } from '../wire.js';
import { type Draft, pageDrafts } from './drafts.js';
import { DraftKeys, newSendKey, type SendRequest } from './send-key.js';

interface ComposerProps {
  client: RpcClient;
  channelId: string;
  channelTitle: string;
  onSent: (reply: SentReply) => void;
  /** Set to this composer's "attach these files" so drops and pastes anywhere on the timeline land here. */
  attach: MutableRef<((files: File[]) => void) | null>;
  /** The message the next send answers (`reply_to`), shown above the text; null for a plain message. */
  replyTo?: { messageId: string; author: string; excerpt: string } | null;
  onCancelReply?: () => void;
}

interface PendingFile {
  key: number;
  name: string;
  size: number;
  previewUrl: string | null;
  state: 'uploading' | 'ready' | 'failed';
  ref?: AttachmentRef;
  error?: string;
}

let nextKey = 1;

const NOT_CONFIRMED = 'It may be stored already; Retry sends it again without storing it twice.';

/** Files from a paste or a drop; a pasted screenshot often arrives only as an item, not in `files`. */
export function filesFrom(data: DataTransfer | null): File[] {
  if (!data) return [];
  if (data.files.length > 0) return [...data.files];
  const files: File[] = [];
  for (const item of data.items) {
    const file = item.kind === 'file' ? item.getAsFile() : null;
    if (file) files.push(file);
  }
  return files;
}

export function Composer({
  client,
  channelId,
  channelTitle,
  onSent,
  attach,
  replyTo = null,
  onCancelReply,
}: ComposerProps) {
  // The draft left in this channel before (switching channels re-mounts the composer).
  const [saved] = useState(() => pageDrafts.get(channelId));
  const [text, setText] = useState(saved?.text ?? '');
  const [files, setFiles] = useState<PendingFile[]>(() =>
    (saved?.files ?? []).map((ref) => ({
      key: nextKey++,
      name: ref.name,
      size: ref.size,
      previewUrl: null,
      state: 'ready',
      ref,
    })),
  );
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(
    saved?.unconfirmed ? `Not confirmed: the host’s answer was lost. ${NOT_CONFIRMED}` : null,
  );
  // Set when the host's answer to a send was lost: it may be stored, so the page offers Retry.
  const [unconfirmed, setUnconfirmed] = useState(saved?.unconfirmed ?? false);
  // The kept key comes back with the draft: a Retry after switching channels still dedups.
  const draftKeys = useRef(new DraftKeys(newSendKey, saved?.sendKey ?? null)).current;
  // The reply the restored draft answered, until the timeline picks another or it is cancelled.
  const [restoredReply, setRestoredReply] = useState(saved?.replyTo ?? null);
  const answering = replyTo ?? restoredReply;
  const cancelReply = () => {
    setRestoredReply(null);
    onCancelReply?.();
  };
  const fileInput = useRef<HTMLInputElement>(null);
  const textArea = useRef<HTMLTextAreaElement>(null);
  const filesRef = useRef(files);
  filesRef.current = files;

  // Object URLs of previews are released when the composer goes away.
  useEffect(
    () => () => {
      for (const file of filesRef.current) if (file.previewUrl) URL.revokeObjectURL(file.previewUrl);
    },
    [],
  );

  const update = (key: number, change: Partial<PendingFile>) =>
    setFiles((current) => current.map((f) => (f.key === key ? { ...f, ...change } : f)));

  const addFiles = (picked: File[]) => {
    for (const file of picked) {
      const key = nextKey++;
      const name = file.name || `pasted-${new Date().toISOString().replace(/[:.]/g, '-')}.png`;
      const named = file.name ? file : new File([file], name, { type: file.type });
      setFiles((current) => [
        ...current,
        {
          key,
          name,
          size: file.size,
          previewUrl: isImage(file.type) ? URL.createObjectURL(file) : null,
          state: 'uploading',
        },
      ]);
      uploadMedia(named)
        .then((ref) => update(key, { state: 'ready', ref }))
        .catch((err) => update(key, { state: 'failed', error: describeError(err) }));
    }
  };

  attach.current = addFiles;

  // Choosing "Reply" on a message puts the cursor here, ready to write the answer.
  useEffect(() => {
    if (replyTo) textArea.current?.focus();
  }, [replyTo?.messageId]);

  const remove = (key: number) =>
    setFiles((current) => {
      const gone = current.find((f) => f.key === key);
      if (gone?.previewUrl) URL.revokeObjectURL(gone.previewUrl);
      return current.filter((f) => f.key !== key);
    });

  const uploading = files.some((f) => f.state === 'uploading');
  const ready = files.filter((f) => f.state === 'ready' && f.ref);

  const draftNow = (): Draft => ({
    text,
    files: ready.map((f) => f.ref!),
    replyTo: answering,
    sendKey: draftKeys.snapshot(),
    unconfirmed,
  });
  // Every change is kept for this channel (uploads still under way are not: they need this page).
  useEffect(() => {
    if (!sending) pageDrafts.set(channelId, draftNow());
  }, [channelId, text, files, answering?.messageId, unconfirmed, sending]);
  const canSend = !sending && !uploading && (text.trim() !== '' || ready.length > 0);

  const send = async () => {
    if (!canSend) return;
    setSending(true);
    setError(null);
    setUnconfirmed(false);
    try {
      const request: SendRequest = { to: channelId, body: text };
      if (ready.length > 0) request.attachments = ready.map((f) => f.ref!.attachment_id);
      if (answering) request.reply_to = answering.messageId;
      // The same draft sent again (Retry) carries the same key: the host stores it once.
      const reply = await client.call<SentReply>('message.send', {
        ...request,
        idempotency_key: draftKeys.keyFor(request),
      });
      draftKeys.sent();
      // Directly, not through the effect: the person may have switched channels meanwhile.
      pageDrafts.delete(channelId);
      for (const f of files) if (f.previewUrl) URL.revokeObjectURL(f.previewUrl);
      setText('');
      setFiles([]);
      cancelReply();
      onSent(reply);
      textArea.current?.focus();
    } catch (err) {
      // The host answered with a refusal: nothing was stored. Any other failure (no answer in
      // time, the connection dropped) leaves it unknown whether the host stored it.
      const refused = err instanceof RpcError && typeof err.code === 'number';
      setUnconfirmed(!refused);
      // Kept with its key at once: the composer may be gone (another channel) by now.
      pageDrafts.set(channelId, { ...draftNow(), sendKey: draftKeys.snapshot(), unconfirmed: !refused });
      setError(
        refused
          ? `not sent: ${describeError(err)}`
          : `Not confirmed: the host’s answer was lost (${describeError(err)}). ${NOT_CONFIRMED}`,
      );
    } finally {
      setSending(false);
    }
  };

  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        void send();
      }}
    >
      {answering && (
        <div class="replying-to">
          <span>
            Replying to <strong>{answering.author}</strong>: <span class="muted">{answering.excerpt}</span>
          </span>
          <button type="button" class="button ghost" onClick={cancelReply}>
            Cancel reply
          </button>
        </div>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
          {unconfirmed && (
            <>
              {' '}
              <button type="button" class="button" disabled={!canSend} onClick={() => void send()}>
                Retry
              </button>
            </>
          )}
        </p>
      )}
      {files.length > 0 && (
        <ul class="pending-files" aria-label="Attachments to send">
          {files.map((f) => (
            <li key={f.key} class={`pending-file state-${f.state}`}>
              {f.previewUrl ? (
                <img src={f.previewUrl} alt="" />
              ) : (
                <span class="file-icon" aria-hidden="true" />
              )}
              <span class="pending-name">
                {f.name}
                <span class="muted small">
                  {' '}
                  {f.state === 'uploading'
                    ? 'uploading…'
                    : f.state === 'failed'
                      ? f.error
                      : formatBytes(f.size)}
                </span>
              </span>
              <button
                type="button"
                class="button ghost icon"
                onClick={() => remove(f.key)}
                aria-label={`Remove ${f.name}`}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="composer-row">
        <button
          type="button"
          class="button ghost icon"
          onClick={() => fileInput.current?.click()}
          aria-label="Attach files"
          title="Attach files (or paste / drop them here)"
        >
          +
        </button>
        <input
          ref={fileInput}
          type="file"
          multiple
          hidden
          onChange={(event) => {
            const input = event.currentTarget;
            addFiles(input.files ? [...input.files] : []);
            input.value = '';
          }}
        />
        <label class="visually-hidden" for="composer-text">
          Message {channelTitle}
        </label>
        <textarea
          id="composer-text"
          ref={textArea}
          rows={1}
          placeholder={`Message ${channelTitle}`}
          value={text}
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            // Enter sends; Shift+Enter (and composition input) makes a new line.
            if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              void send();
            }
          }}
        />
        <button type="submit" class="button primary" disabled={!canSend}>
          {sending ? 'Sending…' : 'Send'}
        </button>
      </div>
    </form>
  );
}
