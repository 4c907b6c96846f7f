import { describe, expect, it } from 'vitest';
import { fuzzUpload, nameProblems } from '../../proof/fuzz-upload.js';

describe('upload bad-input fuzzing against a real server', () => {
  it('stores the sniffed MIME and a sanitised name for lying uploads, refuses empty and over-cap bodies with a JSON code, and writes nothing beside the blob store', {
    timeout: 120_000,
  }, async () => {
    const report = await fuzzUpload(150, 31);
    expect(report.inputs).toBe(150);
    expect(report.failures).toEqual([]);
  });
});

describe('the name checker the campaign relies on', () => {
  it('refuses paths, control and invisible format characters, dot names and overlong names', () => {
    expect(nameProblems('shot.png')).toEqual([]);
    for (const bad of [
      '../x',
      'a/b',
      'a\\b',
      '.htaccess',
      'a\u0000b',
      'a\u202Eb',
      'a\u200Bb',
      'x'.repeat(201),
      '',
      undefined,
    ]) {
      expect(nameProblems(bad), JSON.stringify(bad)).not.toEqual([]);
    }
  });
});
