// Hostile images any sender can attach: small files whose PNG header is valid and whose pixels are
// not. Built byte by byte (signature, IHDR, IDAT, IEND with correct CRCs) so every decoder gets
// past the header and fails (or would spend gigabytes) only on the pixels.
import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed) >>> 0);
  return Buffer.concat([length, typed, crc]);
}

/** An 8-bit RGB PNG of the claimed size whose IDAT holds `idat` as is. */
export function pngWithPixels(width: number, height: number, idat: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A truncated PNG: a valid header for 9000 × 6000 (over the 8000 px side, so a driver must decode
 * it to downscale) and a pixel stream that stops after a few bytes. 70-odd bytes in all.
 */
export function truncatedPng(): Buffer {
  const rows = deflateSync(Buffer.alloc(9000 * 3 + 1));
  return pngWithPixels(9000, 6000, rows.subarray(0, 12));
}

/**
 * A pixel bomb: the header claims 100,000 × 100,000 (10 gigapixels, 30 GB of RGB) and the IDAT is
 * a valid deflate stream of zero rows that simply ends early. Decoded without a pixel limit it
 * would be read row by row into memory; under the limit it is refused from the header alone.
 */
export function pixelBombPng(): Buffer {
  return pngWithPixels(100_000, 100_000, deflateSync(Buffer.alloc(4096)));
}
