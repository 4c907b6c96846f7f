// Attachments go up as raw bytes to `POST /media` (name in `X-Filename`) before `message.send`
// references them by id.

import type { AttachmentRef } from './wire.js';

export async function uploadMedia(file: File): Promise<AttachmentRef> {
  const response = await fetch('/media', {
    method: 'POST',
    credentials: 'same-origin',
    headers: {
      'content-type': 'application/octet-stream',
      // Headers are Latin-1: the host percent-decodes X-Filename, so any name survives.
      'x-filename': encodeURIComponent(file.name || 'pasted'),
    },
    body: file,
  });
  if (!response.ok) {
    let detail = `${response.status}`;
    try {
      const body = (await response.json()) as { error?: { message?: string } | string; message?: string };
      detail = (typeof body.error === 'string' ? body.error : body.error?.message) ?? body.message ?? detail;
    } catch {
      // keep the status
    }
    throw new Error(
      response.status === 413 ? `${file.name} is too large (${detail})` : `upload failed: ${detail}`,
    );
  }
  return (await response.json()) as AttachmentRef;
}

export function mediaUrl(attachmentId: string): string {
  return `/media/${encodeURIComponent(attachmentId)}`;
}

export function isImage(mime: string): boolean {
  return /^image\/(png|jpeg|gif|webp|avif|bmp)$/.test(mime);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
