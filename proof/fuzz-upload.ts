import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import fc from 'fast-check';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { openFuzzHost } from './fuzz-rpc.js';
import { stateSnapshot } from './state-snapshot.js';

/** The upload cap the campaign runs with, so over-cap bodies stay cheap to send. */
export const FUZZ_UPLOAD_CAP = 1024 * 1024;

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1a5e40000000049454e44ae426082',
  'hex',
);
const ELF = Buffer.concat([Buffer.from('7f454c46020101000000000000000000', 'hex'), Buffer.alloc(64, 1)]);
const HTML = Buffer.from('<!doctype html><html><script>alert(document.cookie)</script></html>');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>');

/** Bytes with what they really are: the MIME a sniffer must find, whatever the upload claims. */
const payloads = fc.constantFrom(
  { what: 'png', bytes: PNG, mime: 'image/png' },
  { what: 'elf executable', bytes: ELF, mime: 'application/x-elf' },
  { what: 'html', bytes: HTML, mime: 'text/plain' },
  { what: 'svg', bytes: SVG, mime: 'text/plain' },
  { what: 'binary', bytes: Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0]), mime: 'application/octet-stream' },
);

/** Names as they go into `X-Filename` (percent-encoded UTF-8, or raw and malformed). */
const fileNames = fc.oneof(
  fc.constantFrom(
    '../../etc/passwd',
    '..%2F..%2Fetc%2Fpasswd',
    '..%252F..%252Fetc%252Fpasswd',
    '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '..\\..\\windows\\system32',
    '..',
    '.',
    '...',
    '/',
    '/etc/passwd',
    'evil%00.png',
    '%00',
    'a%0Ab%0Dc',
    '.htaccess',
    'CON',
    'x%E0%A4%A',
    '%',
    '%ZZ',
    'shot.png',
    'note.txt',
    'invoice%E2%80%AEgpj.exe',
    '%E2%81%A7photo%E2%81%A9.png',
    'zero%E2%80%8Bwidth%EF%BB%BF.txt',
    '',
  ),
  fc.nat({ max: 64 }).map((n) => `${'a'.repeat(5_000 + n)}.png`),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => {
    try {
      return encodeURIComponent(s);
    } catch {
      return encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''));
    }
  }),
);

const declaredTypes = fc.constantFrom(
  'text/html',
  'image/png',
  'text/plain',
  'application/x-msdownload',
  'image/svg+xml',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
);

type UploadInput =
  | { kind: 'lying'; payload: { what: string; bytes: Buffer; mime: string }; name: string; type: string }
  | { kind: 'empty'; name: string; type: string }
  | { kind: 'over-cap'; extra: number; declared: boolean; name: string; type: string };

const uploads: fc.Arbitrary<UploadInput> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('lying' as const),
      payload: payloads,
      name: fileNames,
      type: declaredTypes,
    }),
  },
  fc.record({ kind: fc.constant('empty' as const), name: fileNames, type: declaredTypes }),
  fc.record({
    kind: fc.constant('over-cap' as const),
    extra: fc.nat({ max: 65_536 }).map((n) => n + 1),
    declared: fc.boolean(),
    name: fileNames,
    type: declaredTypes,
  }),
);

/** Every file under `dir`, relative to it, with its size (to notice writes beside the store). */
function tree(dir: string, root = dir): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) for (const [k, v] of tree(path, root)) out.set(k, v);
    else out.set(relative(root, path), statSync(path).size);
  }
  return out;
}

/** Problems with a stored display name: it must be a plain name, never a path. */
export function nameProblems(name: unknown): string[] {
  if (typeof name !== 'string' || name === '') return ['name is missing'];
  const problems: string[] = [];
  if (/[/\\]/.test(name)) problems.push(`name has a path separator: ${name.slice(0, 80)}`);
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(name))
    problems.push('name has a control or invisible format character');
  if (name.startsWith('.')) problems.push(`name starts with a dot: ${name.slice(0, 80)}`);
  if (name.length > 200) problems.push(`name is ${name.length} characters`);
  return problems;
}

/**
 * Uploads through `POST /media` on a real server: lying Content-Types and names, traversal names,
 * empty and over-cap bodies. The stored MIME comes from the bytes, the name is sanitised, errors
 * are JSON with a code (413 `too_large` over the cap), the download is served as the sniffed type
 * with `nosniff`, and nothing is written in the sandbox outside the blob store and the database.
 */
export async function fuzzUpload(runs: number, seed: number): Promise<FuzzReport> {
  const host = await openFuzzHost({ limits: { maxUploadBytes: FUZZ_UPLOAD_CAP } });
  const token = await host.token('alice');
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  const blobPrefix = `home${sep}blobs${sep}`;
  const dbFile = /^home[/\\][^/\\]*\.(db|sqlite)(-wal|-shm|-journal)?$|^home[/\\]sluice\.db/;
  try {
    await fc.assert(
      fc.asyncProperty(uploads, async (input) => {
        inputs++;
        const label = `${input.kind} ${'payload' in input ? input.payload.what : ''} as ${input.type}, X-Filename ${JSON.stringify(input.name.slice(0, 120))}`;
        const before = await stateSnapshot(host.ctx);
        const filesBefore = tree(host.sandbox);
        const body =
          input.kind === 'lying'
            ? input.payload.bytes
            : input.kind === 'empty'
              ? Buffer.alloc(0)
              : Buffer.alloc(FUZZ_UPLOAD_CAP + input.extra, 0x61);
        const headers: Record<string, string> = {
          authorization: `Bearer ${token}`,
          'content-type': input.type,
          'x-filename': input.name,
        };
        let res: Response;
        try {
          if (input.kind === 'over-cap' && !input.declared) {
            // Streamed without a Content-Length: the cap must hold while reading.
            const stream = new ReadableStream<Uint8Array>({
              start(controller) {
                for (let at = 0; at < body.length; at += 65_536)
                  controller.enqueue(body.subarray(at, at + 65_536));
                controller.close();
              },
            });
            res = await fetch(`${host.server.url}/media`, {
              method: 'POST',
              headers,
              body: stream,
              duplex: 'half',
              signal: AbortSignal.timeout(15_000),
            } as RequestInit);
          } else {
            res = await fetch(`${host.server.url}/media`, {
              method: 'POST',
              headers,
              body,
              signal: AbortSignal.timeout(15_000),
            });
          }
        } catch (err) {
          // The server may close an over-cap upload while the client is still sending.
          if (input.kind === 'over-cap' && (await stateSnapshot(host.ctx)) === before) return;
          failures.push({ input: label, problem: `request failed: ${(err as Error).message}` });
          return;
        }
        const text = await res.text();
        let json: Record<string, unknown> | undefined;
        try {
          json = JSON.parse(text);
        } catch {
          failures.push({
            input: label,
            problem: `HTTP ${res.status} body is not JSON: ${text.slice(0, 100)}`,
          });
        }
        if (input.kind === 'lying') {
          if (res.status !== 201) {
            failures.push({ input: label, problem: `HTTP ${res.status}: ${text.slice(0, 200)}` });
            return;
          }
          if (json?.mime !== input.payload.mime)
            failures.push({
              input: label,
              problem: `stored as ${String(json?.mime)}, bytes are ${input.payload.mime}`,
            });
          for (const problem of nameProblems(json?.name)) failures.push({ input: label, problem });
          const get = await fetch(`${host.server.url}/media/${json?.attachment_id}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          const served = Buffer.from(await get.arrayBuffer());
          if (get.status !== 200 || !served.equals(input.payload.bytes))
            failures.push({ input: label, problem: `download is HTTP ${get.status}, not the same bytes` });
          const type = get.headers.get('content-type') ?? '';
          if (!type.startsWith(input.payload.mime))
            failures.push({ input: label, problem: `served as ${type}, not ${input.payload.mime}` });
          if (get.headers.get('x-content-type-options') !== 'nosniff')
            failures.push({ input: label, problem: 'download without nosniff' });
        } else {
          const expected = input.kind === 'empty' ? [400, 'invalid_params'] : [413, 'too_large'];
          const code = (json?.error as { code?: unknown } | undefined)?.code;
          if (res.status !== expected[0] || code !== expected[1])
            failures.push({
              input: label,
              problem: `HTTP ${res.status} ${String(code)}, not ${expected.join(' ')}`,
            });
          if ((await stateSnapshot(host.ctx)) !== before)
            failures.push({ input: label, problem: 'state changed on a rejected upload' });
        }
        for (const [path, size] of tree(host.sandbox)) {
          if (path.startsWith(blobPrefix) || dbFile.test(path)) continue;
          if (filesBefore.get(path) !== size)
            failures.push({ input: label, problem: `wrote ${path} outside the blob store` });
        }
      }),
      { numRuns: runs, seed },
    );
  } finally {
    await host.close();
  }
  return { surface: 'uploads', inputs, failures };
}
