// Drafts kept per channel (web/src/channels/drafts.ts): what is stored comes back as it was, what
// is not a draft is ignored, an empty draft is not kept, and storage that refuses is survived.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Draft, Drafts, parseDraft } from '../../web/src/channels/drafts.js';

/** An in-memory Storage. */
function memoryStorage(refuse = false) {
  const items = new Map<string, string>();
  return {
    items,
    get length() {
      return items.size;
    },
    key: (i: number) => [...items.keys()][i] ?? null,
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => {
      if (refuse) throw new Error('QuotaExceededError');
      items.set(k, v);
    },
    removeItem: (k: string) => void items.delete(k),
  };
}

const draft: fc.Arbitrary<Draft> = fc.record({
  text: fc.string(),
  files: fc.array(
    fc.record({ attachment_id: fc.string(), name: fc.string(), mime: fc.string(), size: fc.nat() }),
    { maxLength: 3 },
  ),
  replyTo: fc.option(fc.record({ messageId: fc.string(), author: fc.string(), excerpt: fc.string() }), {
    nil: null,
  }),
  sendKey: fc.option(fc.record({ request: fc.string(), key: fc.string() }), { nil: null }),
  unconfirmed: fc.boolean(),
});

const empty: Draft = { text: '', files: [], replyTo: null, sendKey: null, unconfirmed: false };

describe('drafts per channel', () => {
  it('come back as they were, from memory and from storage (a reload)', () => {
    fc.assert(
      fc.property(draft, (d) => {
        const storage = memoryStorage();
        new Drafts(storage).set('c1', d);
        expect(new Drafts(storage).get('c1')).toEqual(
          d.text === '' && d.files.length === 0 && !d.replyTo && !d.sendKey && !d.unconfirmed ? null : d,
        );
      }),
    );
  });

  it('ignore what is not a draft', () => {
    // Any text at all: a draft or null, never a throw.
    fc.assert(fc.property(fc.string(), (text) => void parseDraft(text)));
    for (const bad of ['{', 'null', '[]', '{"text":1}', JSON.stringify({ ...empty, files: [{}] })])
      expect(parseDraft(bad)).toBeNull();
    expect(parseDraft(JSON.stringify({ ...empty, text: 'x' }))).toEqual({ ...empty, text: 'x' });
  });

  it('keep no empty draft, survive storage that refuses, and are all cleared at log out', () => {
    const storage = memoryStorage();
    const drafts = new Drafts(storage);
    drafts.set('c1', { ...empty, text: 'hi' });
    drafts.set('c2', { ...empty, text: 'there' });
    storage.items.set('other', 'kept');
    drafts.set('c1', empty);
    expect(storage.items.has('sluice.draft.c1')).toBe(false);
    drafts.clear();
    expect([...storage.items.keys()]).toEqual(['other']);
    const refusing = new Drafts(memoryStorage(true));
    refusing.set('c1', { ...empty, text: 'in memory' });
    expect(refusing.get('c1')?.text).toBe('in memory');
    expect(new Drafts(null).get('c1')).toBeNull();
  });
});
