import { isSluiceError, SluiceError } from '../../core/errors.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import {
  CLAUDE_IMAGE_LIMITS,
  checkImage,
  fitImage,
  getReadableMedia,
  isInlineImage,
  type Media,
  materializeMedia,
} from '../../host/media/index.js';
import { relationsFor, senderLabelOf } from '../../host/messages/index.js';
import type { DeliveredMessage } from '../../host/turns/index.js';

/** Anthropic content blocks the Claude driver writes (base64 exists only in this message). */
export type ClaudeBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }
  | {
      type: 'document';
      source: { type: 'base64'; media_type: 'application/pdf'; data: string };
      title: string;
    };

/** Codex app-server `UserInput` items. */
export type CodexInputItem =
  | { type: 'text'; text: string; text_elements: [] }
  | { type: 'localImage'; path: string };

/** PDFs larger than this (base64) go as a path pointer: the request itself has a size cap. */
const MAX_INLINE_PDF_BASE64 = 20 * 1024 * 1024;

/** The message an attachment came with, and who sent it as the agent sees them (`alice (manager)`). */
interface AttachmentSource {
  messageId: string;
  by: string;
}

/** Each delivered message as an attachment source, with its sender's relation to the agent. */
async function sourcesOf(
  ctx: HostContext,
  agent: Principal,
  delivered: readonly DeliveredMessage[],
): Promise<AttachmentSource[]> {
  const relationOf = await relationsFor(ctx, agent);
  return delivered.map((m) => ({
    messageId: m.id,
    by: senderLabelOf(m.projection, relationOf),
  }));
}

/**
 * One line that names an attachment and who sent it (provenance, docs/security.md); the name is
 * JSON-quoted because a sender chose it.
 */
function attachmentLabel(media: Media, source: AttachmentSource): string {
  return `Attachment ${media.id} sent by ${source.by}: ${JSON.stringify(media.name)} (${media.mime}, ${media.size} bytes) from message ${source.messageId}`;
}

function pointer(media: Media, source: AttachmentSource, path: string): string {
  return `${attachmentLabel(media, source)} is saved at ${path}`;
}

async function bytesOf(ctx: HostContext, media: Media): Promise<Uint8Array> {
  const bytes = await ctx.store.blobs.get(media.sha256);
  if (!bytes) throw new SluiceError('not_found', `the bytes of attachment ${media.id} are missing`);
  return bytes;
}

/**
 * The one user message of a Claude turn: the envelope text, then each attachment of the
 * delivered messages — images inline (downscaled to the provider limits), PDFs as documents,
 * anything else as a pointer to its materialised copy.
 */
export async function claudeTurnContent(
  ctx: HostContext,
  agent: Principal,
  envelope: string,
  delivered: readonly DeliveredMessage[],
): Promise<ClaudeBlock[]> {
  const blocks: ClaudeBlock[] = [{ type: 'text', text: envelope }];
  const sources = await sourcesOf(ctx, agent, delivered);
  for (const [i, message] of delivered.entries()) {
    for (const ref of message.attachments) {
      blocks.push(...(await attachmentBlocks(ctx, agent, ref.attachment_id, sources[i] as AttachmentSource)));
    }
  }
  return blocks;
}

/**
 * One attachment for Claude. An attachment that cannot be attached (an image that does not decode
 * within the pixel and time limits, missing bytes, no longer accessible, a disk error: anything)
 * becomes a line saying so rather than failing the whole turn: the message itself was still
 * delivered whole, and a sender must not be able to stop the agent with one bad file.
 */
async function attachmentBlocks(
  ctx: HostContext,
  agent: Principal,
  attachmentId: string,
  source: AttachmentSource,
): Promise<ClaudeBlock[]> {
  let media: Media | undefined;
  try {
    media = await getReadableMedia(ctx, agent, attachmentId);
    if (isInlineImage(media.mime)) {
      const fitted = await fitImage(await bytesOf(ctx, media), media.mime, CLAUDE_IMAGE_LIMITS);
      const note = fitted.downscaled ? ' (downscaled to fit the model limits; the original is larger)' : '';
      const data = fitted.data.toString('base64');
      return [
        { type: 'text', text: `${attachmentLabel(media, source)}${note}:` },
        { type: 'image', source: { type: 'base64', media_type: fitted.mime, data } },
      ];
    }
    if (media.mime === 'application/pdf' && Math.ceil(media.size / 3) * 4 <= MAX_INLINE_PDF_BASE64) {
      const data = Buffer.from(await bytesOf(ctx, media)).toString('base64');
      return [
        { type: 'text', text: `${attachmentLabel(media, source)}:` },
        {
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data },
          title: media.name,
        },
      ];
    }
    return [{ type: 'text', text: pointer(media, source, await materializeMedia(ctx, media)) }];
  } catch (err) {
    return [{ type: 'text', text: unavailable(attachmentId, media, source, err) }];
  }
}

/** Why an attachment failed, in one short line a model can read. */
function failureReason(err: unknown): string {
  if (isSluiceError(err)) return err.message;
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n')[0] ?? '').slice(0, 200) || 'an unexpected error';
}

function unavailable(
  attachmentId: string,
  media: Media | undefined,
  source: AttachmentSource,
  err: unknown,
): string {
  const label = media
    ? attachmentLabel(media, source)
    : `Attachment ${attachmentId} sent by ${source.by} from message ${source.messageId}`;
  return `${label} could not be attached: ${failureReason(err)}`;
}

/**
 * The input items of a Codex turn: one text item (the lead text, then a pointer line per
 * non-image attachment), then a `localImage` item per image with its materialised path. Codex
 * reads that file itself, so each image is first decoded here within the same pixel and time
 * limits; one that fails (or any other failure) becomes a "could not be attached" line.
 */
export async function codexTurnInput(
  ctx: HostContext,
  agent: Principal,
  lead: string,
  delivered: readonly DeliveredMessage[],
): Promise<CodexInputItem[]> {
  const lines = [lead];
  const images: CodexInputItem[] = [];
  const sources = await sourcesOf(ctx, agent, delivered);
  for (const [i, message] of delivered.entries()) {
    const source = sources[i] as AttachmentSource;
    for (const ref of message.attachments) {
      let media: Media | undefined;
      try {
        media = await getReadableMedia(ctx, agent, ref.attachment_id);
        const path = await materializeMedia(ctx, media);
        if (isInlineImage(media.mime)) {
          await checkImage(await bytesOf(ctx, media));
          lines.push(`${attachmentLabel(media, source)} is attached below as an image (saved at ${path}).`);
          images.push({ type: 'localImage', path });
        } else {
          lines.push(pointer(media, source, path));
        }
      } catch (err) {
        lines.push(unavailable(ref.attachment_id, media, source, err));
      }
    }
  }
  return [{ type: 'text', text: lines.join('\n'), text_elements: [] }, ...images];
}
