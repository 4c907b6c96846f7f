// The Telegram bridge's tables (migrations 009, 018, 019): pairing, where a chat's messages go,
// what was sent, and the reactions and approval cards it keeps up to date.

/** A one-time code that pairs a Telegram user with a person (only its hash is kept). */
export interface TelegramPairCodesTable {
  code_hash: string;
  person_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** A Telegram user paired with a person; `agent_id` is where their messages go (null: not chosen). */
export interface TelegramLinksTable {
  telegram_user_id: string;
  chat_id: string;
  person_id: string;
  agent_id: string | null;
  paired_at: string;
}

/** A person's message sent from Telegram, and the status its reaction last showed (migration 018). */
export interface TelegramReactionsTable {
  message_id: string;
  channel_id: string;
  chat_id: string;
  telegram_message_id: number;
  person_id: string;
  /** The `message.status` state the chat was last shown; null before the first. */
  state: string | null;
  created_at: string;
  updated_at: string;
}

/** The Allow / Deny card sent to a decider's chat for an approval request (migration 019). */
export interface TelegramApprovalsTable {
  approval_id: string;
  chat_id: string;
  /** The card's message; null when Telegram refused to send it (never tried again). */
  telegram_message_id: number | null;
  /** What the card shows: `pending` (with buttons) or the outcome it was edited to. */
  shown: string;
  created_at: string;
  updated_at: string;
}

/** One part of a message the bridge sent to a chat (text parts first, then attachments). */
export interface TelegramSentTable {
  message_id: string;
  chat_id: string;
  part: number;
  sent_at: string;
}
