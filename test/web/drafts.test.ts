// Drafts kept per channel (web/src/channels/drafts.ts): what is stored comes back as it was, what
// is not a draft is ignored, an empty draft is not kept, storage that refuses is survived, and
// one person's drafts never reach another person signed in later in the same tab.
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

/** The page's drafts after `host.hello` named `principal` (a page load). */
function signedIn(storage: ReturnType<typeof memoryStorage>, principal: string): Drafts {
  const drafts = new Drafts(storage);
  drafts.signIn(principal);
  return drafts;
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
        signedIn(storage, 'p_alice').set('c1', d);
        expect(signedIn(storage, 'p_alice').get('c1')).toEqual(
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
    const drafts = signedIn(storage, 'p_alice');
    drafts.set('c1', { ...empty, text: 'hi' });
    drafts.set('c2', { ...empty, text: 'there' });
    storage.items.set('other', 'kept');
    drafts.set('c1', empty);
    expect(storage.items.has('sluice.draft.p_alice.c1')).toBe(false);
    drafts.clear();
    expect([...storage.items.keys()]).toEqual(['other']);
    const refusing = signedIn(memoryStorage(true), 'p_alice');
    refusing.set('c1', { ...empty, text: 'in memory' });
    expect(refusing.get('c1')?.text).toBe('in memory');
    expect(new Drafts(null).get('c1')).toBeNull();
  });
});

describe('drafts per person', () => {
  const unsent: Draft = {
    text: 'salary figures, do not share',
    files: [{ attachment_id: 'att_1', name: 'pay.xlsx', mime: 'application/x', size: 9 }],
    replyTo: { messageId: 'm_1', author: 'carol', excerpt: 'numbers?' },
    sendKey: { request: 'r', key: 'k' },
    unconfirmed: true,
  };

  it('are not shown to the next person signed in in the tab, and are dropped for good', () => {
    // Alice's session ended elsewhere (cookie expiry, "log out everywhere"), so her Log out never
    // ran here; Bob signs in in the same tab and opens the channel they share.
    const storage = memoryStorage();
    signedIn(storage, 'p_alice').set('shared', unsent);
    const bob = signedIn(storage, 'p_bob');
    expect(bob.get('shared')).toBeNull();
    expect([...storage.items.keys()]).toEqual([]);
    expect(signedIn(storage, 'p_alice').get('shared')).toBeNull();
  });

  it('are dropped from the page too when another person is named signed in', () => {
    const drafts = signedIn(memoryStorage(), 'p_alice');
    drafts.set('shared', unsent);
    drafts.signIn('p_bob');
    expect(drafts.get('shared')).toBeNull();
  });

  it('stay with the same person across a reload, and a draft stored without a person is dropped', () => {
    const storage = memoryStorage();
    storage.items.set('sluice.draft.shared', JSON.stringify(unsent));
    signedIn(storage, 'p_alice').set('c1', unsent);
    const again = signedIn(storage, 'p_alice');
    expect(again.get('c1')).toEqual(unsent);
    expect(again.get('shared')).toBeNull();
    expect(storage.items.has('sluice.draft.shared')).toBe(false);
  });

  it('never cross between any two people, whatever their ids and channel ids', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: 'binary' }),
        fc.string(),
        fc.string(),
        (a, b, ca, cb) => {
          fc.pre(a !== b);
          const storage = memoryStorage();
          signedIn(storage, a).set(ca, unsent);
          expect(signedIn(storage, b).get(cb)).toBeNull();
          expect(storage.items.size).toBe(0);
        },
      ),
    );
    // Ids holding the separator: "a" and "a.b" stay apart in both directions.
    const storage = memoryStorage();
    signedIn(storage, 'a.b').set('c', unsent);
    expect(signedIn(storage, 'a').get('b.c')).toBeNull();
    signedIn(storage, 'a').set('b.c', unsent);
    expect(signedIn(storage, 'a.b').get('c')).toBeNull();
  });

  it('are not stored before anyone is named signed in', () => {
    const storage = memoryStorage();
    const drafts = new Drafts(storage);
    drafts.set('c1', unsent);
    expect(drafts.get('c1')).toEqual(unsent);
    expect(storage.items.size).toBe(0);
  });
});
