import { describe, expect, it } from 'vitest';
import { ChannelListLoads } from '../../web/src/channels/list-loads.js';
import type { ChannelSummary } from '../../web/src/wire.js';

const channel = (name: string): ChannelSummary => ({
  id: `c-${name}`,
  name,
  kind: 'group',
  members: [],
  memberCount: 1,
});
/** As the page's upsert does, without its JSX module (the root tsconfig has no JSX). */
const upsertChannel = (list: ChannelSummary[], c: ChannelSummary) =>
  [...list.filter((x) => x.id !== c.id), c].sort((a, b) => (a.name < b.name ? -1 : 1));
const names = (list: ChannelSummary[] | null) => list?.map((c) => c.name) ?? null;

describe('changes that arrive while the channel list loads', () => {
  it('are applied to the loaded pages in the order they came', () => {
    const loads = new ChannelListLoads();
    const load = loads.begin();
    loads.record((list) => upsertChannel(list, channel('aaa-late')));
    loads.record((list) => list.filter((c) => c.name !== 'b'));
    expect(names(loads.finish(load, [channel('b'), channel('c')]))).toEqual(['aaa-late', 'c']);
  });

  it('a change from before the load began is not applied again', () => {
    const loads = new ChannelListLoads();
    loads.record((list) => upsertChannel(list, channel('gone-since')));
    const load = loads.begin();
    expect(names(loads.finish(load, [channel('b')]))).toEqual(['b']);
  });

  it('only the newest load is shown, with every change since it began', () => {
    const loads = new ChannelListLoads();
    const older = loads.begin();
    loads.record((list) => upsertChannel(list, channel('x')));
    const newer = loads.begin();
    loads.record((list) => upsertChannel(list, channel('y')));
    expect(loads.finish(newer, [channel('a')])?.map((c) => c.name)).toEqual(['a', 'y']);
    expect(loads.finish(older, [channel('stale')])).toBeNull();
  });

  it("an older load's failure is not worth showing; the newest one's is", () => {
    const loads = new ChannelListLoads();
    const older = loads.begin();
    const newer = loads.begin();
    expect(loads.fail(older)).toBe(false);
    expect(loads.fail(newer)).toBe(true);
  });
});
