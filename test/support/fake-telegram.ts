// A fake Telegram Bot API server for offline tests: getMe, deleteWebhook, getUpdates (long polling
// with offsets), getFile and file download, sendMessage (with its inline keyboard), sendPhoto, sendDocument,
// setMessageReaction, callback_query updates, answerCallbackQuery, editMessageText, injected 429s and
// refusals, Telegram's 4,096-character text limit, and file downloads that redirect or stall.
// It keeps what the bot sent so tests can check it, and wakes waiters on every change (no sleeps).
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_BOT_TOKEN = '123456789:AAFakeTokenForSluiceTests_0123456789';
export const FAKE_BOT_ID = 123456789;

export interface SentItem {
  method: 'sendMessage' | 'sendPhoto' | 'sendDocument';
  chatId: string;
  text?: string;
  caption?: string;
  fileName?: string;
  bytes?: Buffer;
  /** The message id the fake gave it. */
  messageId?: number;
  /** The inline keyboard sent with it (`reply_markup.inline_keyboard`), if any. */
  keyboard?: { text: string; callback_data?: string }[][];
}

/** An `editMessageText` the fake accepted; `keyboard` is the new one (undefined: buttons removed). */
export interface EditItem {
  chatId: string;
  messageId: number;
  text: string;
  keyboard?: { text: string; callback_data?: string }[][];
}

/** An `answerCallbackQuery` the fake accepted. */
export interface CallbackAnswer {
  callbackQueryId: string;
  text?: string;
}

interface StoredFile {
  bytes: Buffer;
  size: number;
  path: string;
  serve: FileServing;
}

/** How the file endpoint answers a download: normally, with a redirect, or stalling mid-body. */
export interface FileServing {
  /** Answer 302 with this Location instead of the bytes. */
  redirectTo?: string;
  /** Send the headers and this many bytes, then nothing more until the client gives up. */
  stallAfter?: number;
}

/** A refusal the fake answers instead of serving a call (as Telegram does for a blocked bot). */
export interface Refusal {
  method?: string;
  /** Only calls for this chat (sendMessage, sendPhoto, sendDocument). */
  chatId?: number;
  /** Only sendMessage calls with exactly this text. */
  text?: string;
  code: number;
  description: string;
  /** Close the connection without an answer instead (a network failure, not a refusal). */
  hangUp?: boolean;
}

/** A call the fake refused, for tests to count. */
export interface RefusedCall {
  method: string;
  chatId: string | undefined;
  code: number;
  description: string;
  text?: string;
}

/** Telegram's cap on one text message (after entity parsing), in UTF-16 units. */
export const FAKE_TEXT_LIMIT = 4096;

type Json = Record<string, unknown>;

interface Upload {
  name: string;
  bytes: Buffer;
}

/** A reaction the bot set on a message (`setMessageReaction`); an empty list takes it away. */
export interface ReactionItem {
  chatId: string;
  messageId: number;
  emoji: string[];
}

export interface FakeTelegram {
  url: string;
  sent: SentItem[];
  /** Every `setMessageReaction` the fake accepted, in order. */
  reactions: ReactionItem[];
  /** Every `editMessageText` the fake accepted, in order. */
  edits: EditItem[];
  /** Every `answerCallbackQuery` the fake accepted, in order. */
  callbackAnswers: CallbackAnswer[];
  /** Calls the fake refused (a refusal rule, an over-long text, an unknown file). */
  refused: RefusedCall[];
  /** File download requests served (any answer), in order, as paths without the token. */
  downloads: string[];
  /** The highest offset the bot confirmed (every update below it is acknowledged). */
  confirmedOffset(): number;
  /** Queues a private-chat message from a user; returns its update_id. */
  pushMessage(fromUserId: number, message: Json): number;
  /** Queues a button press (`callback_query`) by a user on a message the bot sent; returns its id. */
  pushCallback(fromUserId: number, data: string, message: { chatId: string; messageId: number }): string;
  /** Hands an update out again, as Telegram does when a bot never confirmed it. */
  redeliver(updateId: number): void;
  /** Registers a file the bot may fetch; `claimedSize` overrides the size Telegram reports. */
  addFile(
    bytes: Buffer,
    claimedSize?: number,
    serve?: FileServing,
  ): { file_id: string; file_unique_id: string; file_size: number };
  /** The next `count` calls of `method` answer 429 with retry_after seconds. */
  failNext(method: string, count: number, retryAfter?: number): void;
  /** Every later call matching the rule is refused with its code and description; returns a lift. */
  refuse(rule: Refusal): () => void;
  /** Resolves once `check` holds, re-checked on every request the fake serves. */
  until(check: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

/** The inline keyboard of a `reply_markup` field (JSON text in a form, an object in JSON). */
function keyboardOf(markup: unknown): { text: string; callback_data?: string }[][] | undefined {
  if (markup === undefined) return undefined;
  const parsed = (typeof markup === 'string' ? JSON.parse(markup) : markup) as {
    inline_keyboard?: { text: string; callback_data?: string }[][];
  };
  return parsed.inline_keyboard;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Parses JSON, urlencoded or multipart bodies the way the Bot API accepts them. */
async function params(req: IncomingMessage, url: URL): Promise<{ fields: Json; files: Map<string, Upload> }> {
  const fields: Json = Object.fromEntries(url.searchParams);
  const files = new Map<string, Upload>();
  const body = await readBody(req);
  const type = req.headers['content-type'] ?? '';
  if (body.length === 0) return { fields, files };
  if (type.includes('application/json'))
    return { fields: { ...fields, ...JSON.parse(body.toString('utf8')) }, files };
  const boundary = /boundary=(.+)$/.exec(type)?.[1];
  if (!boundary) return { fields, files };
  // grammY writes `filename=a.txt` unquoted, which undici's FormData parser refuses: parse by hand.
  const text = body.toString('latin1');
  for (const section of text.split(`--${boundary}`)) {
    const split = section.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const head = section.slice(0, split);
    const content = Buffer.from(section.slice(split + 4).replace(/\r\n$/, ''), 'latin1');
    const name = /name="([^"]*)"/.exec(head)?.[1];
    if (name === undefined) continue;
    const fileName = /filename="?([^";\r\n]*)"?/.exec(head)?.[1];
    if (fileName === undefined) fields[name] = content.toString('utf8');
    else files.set(name, { name: fileName, bytes: content });
  }
  return { fields, files };
}

export async function startFakeTelegram(options: { token?: string } = {}): Promise<FakeTelegram> {
  const token = options.token ?? FAKE_BOT_TOKEN;
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  const updates: Json[] = [];
  const history = new Map<number, Json>();
  const sent: SentItem[] = [];
  const reactions: ReactionItem[] = [];
  const edits: EditItem[] = [];
  const callbackAnswers: CallbackAnswer[] = [];
  const refused: RefusedCall[] = [];
  const downloads: string[] = [];
  const refusals: Refusal[] = [];
  const files = new Map<string, StoredFile>();
  const failures = new Map<string, { count: number; retryAfter: number }>();
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  let confirmed = 0;
  let closing = false;

  const changed = () => changes.emit('change');
  const answer = (res: ServerResponse, status: number, body: Json) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    changed();
  };
  const ok = (res: ServerResponse, result: unknown) => answer(res, 200, { ok: true, result });
  const refuseCall = (res: ServerResponse, call: RefusedCall) => {
    refused.push(call);
    answer(res, call.code, { ok: false, error_code: call.code, description: call.description });
  };

  const pendingFrom = (offset: number) => updates.filter((u) => (u.update_id as number) >= offset);

  async function getUpdates(fields: Json, res: ServerResponse) {
    const offset = Number(fields.offset ?? 0);
    if (offset > 0) {
      confirmed = Math.max(confirmed, offset);
      // Telegram forgets confirmed updates.
      for (let i = updates.length - 1; i >= 0; i--)
        if ((updates[i]?.update_id as number) < offset) updates.splice(i, 1);
      changed();
    }
    const limit = Number(fields.limit ?? 100);
    const timeoutMs = Math.min(Number(fields.timeout ?? 0), 30) * 1000;
    const ready = () => pendingFrom(offset).length > 0 || closing;
    if (!ready() && timeoutMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        function done() {
          clearTimeout(timer);
          changes.off('update', check);
          res.off('close', done);
          resolve();
        }
        function check() {
          if (ready()) done();
        }
        changes.on('update', check);
        res.on('close', done);
      });
    }
    if (!res.writableEnded && !res.destroyed) ok(res, pendingFrom(offset).slice(0, limit));
  }

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://fake');
      const filePrefix = `/file/bot${token}/`;
      if (url.pathname.startsWith(filePrefix)) {
        const path = decodeURIComponent(url.pathname.slice(filePrefix.length));
        downloads.push(path);
        const file = [...files.values()].find((f) => f.path === path);
        if (!file) return answer(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
        if (file.serve.redirectTo !== undefined) {
          res.writeHead(302, { location: file.serve.redirectTo });
          res.end();
          return changed();
        }
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': file.bytes.length,
        });
        if (file.serve.stallAfter !== undefined) {
          // Headers and a first piece, then silence: the socket stays open until the client leaves.
          res.write(file.bytes.subarray(0, file.serve.stallAfter));
          return changed();
        }
        res.end(file.bytes);
        return changed();
      }
      const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
      if (!match) return answer(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      if (match[1] !== token)
        return answer(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      const method = match[2] as string;
      const { fields, files: uploads } = await params(req, url);
      const failure = failures.get(method);
      if (failure && failure.count > 0) {
        failure.count--;
        return answer(res, 429, {
          ok: false,
          error_code: 429,
          description: `Too Many Requests: retry after ${failure.retryAfter}`,
          parameters: { retry_after: failure.retryAfter },
        });
      }
      const chatId = fields.chat_id === undefined ? undefined : String(fields.chat_id);
      const rule = refusals.find(
        (r) =>
          (r.method === undefined || r.method === method) &&
          (r.chatId === undefined || String(r.chatId) === chatId) &&
          (r.text === undefined || r.text === fields.text),
      );
      if (rule?.hangUp) {
        refused.push({
          method,
          chatId,
          code: 0,
          description: 'connection closed',
          text: fields.text as string | undefined,
        });
        res.socket?.destroy();
        return changed();
      }
      if (rule) {
        return refuseCall(res, {
          method,
          chatId,
          code: rule.code,
          description: rule.description,
          text: fields.text as string | undefined,
        });
      }
      switch (method) {
        case 'getMe':
          return ok(res, {
            id: FAKE_BOT_ID,
            is_bot: true,
            first_name: 'Sluice test',
            username: 'sluice_test_bot',
          });
        case 'deleteWebhook':
          return ok(res, true);
        case 'getUpdates':
          return await getUpdates(fields, res);
        case 'getFile': {
          const file = files.get(String(fields.file_id));
          if (!file) {
            return refuseCall(res, {
              method,
              chatId,
              code: 400,
              description: 'Bad Request: invalid file_id',
            });
          }
          if (file.size > 20 * 1024 * 1024) {
            return answer(res, 400, {
              ok: false,
              error_code: 400,
              description: 'Bad Request: file is too big',
            });
          }
          return ok(res, { file_id: fields.file_id, file_size: file.size, file_path: file.path });
        }
        case 'sendMessage':
        case 'sendPhoto':
        case 'sendDocument': {
          const text = fields.text as string | undefined;
          if (method === 'sendMessage' && (text ?? '').length > FAKE_TEXT_LIMIT) {
            return refuseCall(res, {
              method,
              chatId,
              code: 400,
              description: 'Bad Request: message is too long',
              text,
            });
          }
          // grammY sends the file as a part with a random name and `attach://name` in the field.
          const field = String(fields[method === 'sendPhoto' ? 'photo' : 'document'] ?? '');
          const attached = uploads.get(field.replace(/^attach:\/\//, '')) ?? [...uploads.values()][0];
          const messageId = nextMessageId++;
          sent.push({
            method,
            chatId: String(fields.chat_id),
            text: fields.text as string | undefined,
            caption: fields.caption as string | undefined,
            fileName: attached?.name,
            bytes: attached?.bytes,
            messageId,
            keyboard: keyboardOf(fields.reply_markup),
          });
          return ok(res, {
            message_id: messageId,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(fields.chat_id), type: 'private' },
          });
        }
        case 'setMessageReaction': {
          const list = (
            typeof fields.reaction === 'string' ? JSON.parse(fields.reaction) : fields.reaction
          ) as { type: string; emoji?: string }[] | undefined;
          reactions.push({
            chatId: String(fields.chat_id),
            messageId: Number(fields.message_id),
            emoji: (list ?? []).map((r) => r.emoji ?? r.type),
          });
          return ok(res, true);
        }
        case 'editMessageText': {
          const text = String(fields.text ?? '');
          if (text.length > FAKE_TEXT_LIMIT) {
            return refuseCall(res, {
              method,
              chatId,
              code: 400,
              description: 'Bad Request: MESSAGE_TOO_LONG',
              text,
            });
          }
          edits.push({
            chatId: String(fields.chat_id),
            messageId: Number(fields.message_id),
            text,
            keyboard: keyboardOf(fields.reply_markup),
          });
          return ok(res, {
            message_id: Number(fields.message_id),
            date: 0,
            chat: { id: Number(fields.chat_id) },
          });
        }
        case 'answerCallbackQuery':
          callbackAnswers.push({
            callbackQueryId: String(fields.callback_query_id),
            text: fields.text as string | undefined,
          });
          return ok(res, true);
        default:
          return answer(res, 404, { ok: false, error_code: 404, description: `Not Found: method ${method}` });
      }
    } catch (err) {
      answer(res, 500, { ok: false, error_code: 500, description: String(err) });
    }
  });
  const queue = (update: Json & { update_id: number }) => {
    history.set(update.update_id, update);
    updates.push(update);
    changes.emit('update');
    changed();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    reactions,
    edits,
    callbackAnswers,
    refused,
    downloads,
    confirmedOffset: () => confirmed,
    pushMessage(fromUserId, message) {
      const update_id = nextUpdateId++;
      const update = {
        update_id,
        message: {
          message_id: update_id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: fromUserId, type: 'private', first_name: `user${fromUserId}` },
          from: { id: fromUserId, is_bot: false, first_name: `user${fromUserId}` },
          ...message,
        },
      };
      history.set(update_id, update);
      updates.push(update);
      changes.emit('update');
      changed();
      return update_id;
    },
    pushCallback(fromUserId, data, message) {
      const update_id = nextUpdateId++;
      const id = `cb-${update_id}`;
      const user = { id: fromUserId, is_bot: false, first_name: `user${fromUserId}` };
      queue({
        update_id,
        callback_query: {
          id,
          from: user,
          chat_instance: `ci-${message.chatId}`,
          data,
          message: {
            message_id: message.messageId,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(message.chatId), type: 'private', first_name: 'chat' },
            text: '(the card)',
          },
        },
      });
      return id;
    },
    redeliver(updateId) {
      const update = history.get(updateId);
      if (!update) throw new Error(`no update ${updateId}`);
      confirmed = Math.min(confirmed, updateId);
      updates.push(update);
      updates.sort((a, b) => (a.update_id as number) - (b.update_id as number));
      changes.emit('update');
    },
    addFile(bytes, claimedSize, serve = {}) {
      const n = files.size + 1;
      const id = `file-${n}`;
      const size = claimedSize ?? bytes.length;
      files.set(id, { bytes, size, path: `documents/file_${n}`, serve });
      return { file_id: id, file_unique_id: `u${n}`, file_size: size };
    },
    failNext(method, count, retryAfter = 1) {
      failures.set(method, { count, retryAfter });
    },
    refuse(rule) {
      refusals.push(rule);
      return () => {
        const at = refusals.indexOf(rule);
        if (at >= 0) refusals.splice(at, 1);
      };
    },
    until(check, timeoutMs = 20_000, what = 'a condition') {
      if (check()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          changes.off('change', onChange);
          reject(new Error(`fake Telegram: timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        function onChange() {
          if (!check()) return;
          clearTimeout(timer);
          changes.off('change', onChange);
          resolve();
        }
        changes.on('change', onChange);
      });
    },
    async close() {
      closing = true;
      changes.emit('update');
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
