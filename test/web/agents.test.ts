// The sidebar's agents (web/src/agents.ts): every page of `principal.list {managed: true}` is read,
// the two sources merge without duplicates, an `agent.managed` push adds or drops one name, and the
// filter box keeps the agents whose name contains its text.
import { describe, expect, it } from 'vitest';
import { filterAgents, loadManagedAgents, sidebarAgents, withAgent } from '../../web/src/agents.js';

describe('the sidebar agents', () => {
  it('walks every managed page, asking with managed: true and the last name', async () => {
    const asked: unknown[] = [];
    const pages = [
      { principals: [{ id: '1', name: 'alpha', kind: 'agent' }], nextAfter: 'alpha' },
      { principals: [{ id: '2', name: 'beta', kind: 'agent' }], nextAfter: null },
    ];
    const call = async <T>(method: string, params?: Record<string, unknown>): Promise<T> => {
      asked.push({ method, params });
      return pages.shift() as T;
    };
    expect(await loadManagedAgents(call)).toEqual(['alpha', 'beta']);
    expect(asked).toEqual([
      { method: 'principal.list', params: { managed: true } },
      { method: 'principal.list', params: { managed: true, after: 'alpha' } },
    ]);
  });

  it('merges managed and channel agents once each, in name order', () => {
    expect(sidebarAgents(['zed', 'helper'], ['helper', 'bot'])).toEqual(['bot', 'helper', 'zed']);
    expect(sidebarAgents([], [])).toEqual([]);
  });

  it('applies a push: added in order, dropped, and idempotent', () => {
    expect(withAgent(['a', 'c'], 'b', true)).toEqual(['a', 'b', 'c']);
    expect(withAgent(['a', 'b'], 'b', true)).toEqual(['a', 'b']);
    expect(withAgent(['a', 'b'], 'a', false)).toEqual(['b']);
    expect(withAgent(['a'], 'x', false)).toEqual(['a']);
  });

  it('filters by name, any case, adding the agents of the channels the host found', () => {
    expect(filterAgents(['b-bot', 'a-scout'], [], '')).toEqual(['b-bot', 'a-scout']);
    expect(filterAgents(['b-bot', 'a-scout'], [], '  ')).toEqual(['b-bot', 'a-scout']);
    expect(filterAgents(['b-bot', 'a-scout'], ['z-scout', 'b-bot'], ' SCOUT ')).toEqual([
      'a-scout',
      'z-scout',
    ]);
    expect(filterAgents(['b-bot'], ['helper'], 'nobody')).toEqual([]);
  });
});
