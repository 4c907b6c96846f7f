// What a person has typed in a channel's composer and not sent yet, kept per channel so switching
// channels and back loses nothing (docs/web.md, "Drafts are kept per channel"). Kept in memory for
// the page's life and mirrored to sessionStorage, so a reload of the tab keeps them too; closing
// the tab drops them, and logging out clears them. They are the signed-in person's: stored under
// their principal id, and a page load that finds someone else signed in (the session ended
// elsewhere, so this tab's Log out never ran) drops every other person's. A draft whose send was not confirmed keeps the
// idempotency key it was sent with, so Retry after switching away and back still dedups. No DOM
// types beyond the Storage interface: the Node tests import it.

import type { AttachmentRef } from '../wire.js';
import type { KeptKey } from './send-key.js';

/** An attachment already uploaded for the draft (its `attachment_id` is what a send references). */
export type DraftFile = AttachmentRef;

/** The message a draft answers (`reply_to`), as the composer shows it. */
export interface DraftReply {
  messageId: string;
  author: string;
  excerpt: string;
}

export interface Draft {
  text: string;
  files: DraftFile[];
  replyTo: DraftReply | null;
  /** The key kept for the request last sent from this draft (null when none was sent). */
  sendKey: KeptKey | null;
  /** The last send's answer was lost: the composer offers Retry. */
  unconfirmed: boolean;
}

const PREFIX = 'sluice.draft.';

/** The part of the DOM's Storage (sessionStorage) the drafts use. */
export interface DraftStorage {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** A draft with nothing in it and nothing to retry is not kept. */
export function isEmptyDraft(draft: Draft): boolean {
  return (
    draft.text === '' &&
    draft.files.length === 0 &&
    draft.replyTo === null &&
    draft.sendKey === null &&
    !draft.unconfirmed
  );
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** A stored draft read back, or null when it is not one (another page's format, a hand edit). */
export function parseDraft(text: string | null): Draft | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const d = value as Record<string, unknown>;
  const files = Array.isArray(d.files) ? d.files : null;
  const reply = d.replyTo as Record<string, unknown> | null | undefined;
  const key = d.sendKey as Record<string, unknown> | null | undefined;
  if (
    !isString(d.text) ||
    !files?.every(
      (f) =>
        f && isString(f.attachment_id) && isString(f.name) && isString(f.mime) && typeof f.size === 'number',
    ) ||
    !(
      reply === null ||
      (reply && isString(reply.messageId) && isString(reply.author) && isString(reply.excerpt))
    ) ||
    !(key === null || (key && isString(key.request) && isString(key.key))) ||
    typeof d.unconfirmed !== 'boolean'
  )
    return null;
  return value as Draft;
}

/**
 * The stored-key part naming a principal: `%` and `.` escaped, so it holds no `.` and the key
 * `sluice.draft.<owner>.<channelId>` names exactly one principal whatever the ids hold.
 */
function ownerPart(principalId: string): string {
  return principalId.replace(/[%.]/g, (c) => (c === '%' ? '%25' : '%2E'));
}

/** The drafts of one page, by channel id, for the signed-in person. */
export class Drafts {
  private readonly kept = new Map<string, Draft>();
  /** `sluice.draft.<owner>.` once `host.hello` named who is signed in; until then nothing is stored. */
  private ownerPrefix: string | null = null;

  /** `storage` is the tab's sessionStorage, or null where there is none (or it refuses). */
  constructor(private readonly storage: DraftStorage | null) {}

  /**
   * `host.hello` named who is signed in: drafts are theirs from now on, and every other person's
   * (in this page and in the tab's storage, and any stored without a person) is dropped, so the
   * next person in the tab never sees a previous one's unsent text, reply or attachments.
   */
  signIn(principalId: string): void {
    const ownerPrefix = `${PREFIX}${ownerPart(principalId)}.`;
    if (this.ownerPrefix !== ownerPrefix) this.kept.clear();
    this.ownerPrefix = ownerPrefix;
    this.removeStored((key) => !key.startsWith(ownerPrefix));
  }

  get(channelId: string): Draft | null {
    const inMemory = this.kept.get(channelId);
    if (inMemory) return inMemory;
    const key = this.storedKey(channelId);
    if (key === null) return null;
    const stored = parseDraft(this.attempt(() => this.storage?.getItem(key) ?? null, null));
    if (stored) this.kept.set(channelId, stored);
    return stored;
  }

  set(channelId: string, draft: Draft): void {
    if (isEmptyDraft(draft)) {
      this.delete(channelId);
      return;
    }
    this.kept.set(channelId, draft);
    const key = this.storedKey(channelId);
    if (key === null) return;
    this.attempt(() => this.storage?.setItem(key, JSON.stringify(draft)), undefined);
  }

  delete(channelId: string): void {
    this.kept.delete(channelId);
    const key = this.storedKey(channelId);
    if (key === null) return;
    this.attempt(() => this.storage?.removeItem(key), undefined);
  }

  /** Every draft of this tab, stored ones too (at log out: the next person in the tab sees none). */
  clear(): void {
    this.kept.clear();
    this.removeStored(() => true);
  }

  /** Where a channel's draft is stored; null before anyone is signed in (kept in memory only). */
  private storedKey(channelId: string): string | null {
    return this.ownerPrefix === null ? null : this.ownerPrefix + channelId;
  }

  /** Removes the stored drafts whose key `drop` picks. */
  private removeStored(drop: (key: string) => boolean): void {
    this.attempt(() => {
      const storage = this.storage;
      if (!storage) return;
      const keys: string[] = [];
      for (let i = 0; i < storage.length; i++) {
        const key = storage.key(i);
        if (key?.startsWith(PREFIX) && drop(key)) keys.push(key);
      }
      for (const key of keys) storage.removeItem(key);
    }, undefined);
  }

  // Storage may be full or disabled: the in-memory draft still serves this page's life.
  private attempt<T>(action: () => T, fallback: T): T {
    try {
      return action();
    } catch {
      return fallback;
    }
  }
}

function sessionStorageOrNull(): DraftStorage | null {
  try {
    // Reading it throws where storage is disabled.
    return (globalThis as { sessionStorage?: DraftStorage }).sessionStorage ?? null;
  } catch {
    return null;
  }
}

/** The page's drafts. */
export const pageDrafts = new Drafts(sessionStorageOrNull());
