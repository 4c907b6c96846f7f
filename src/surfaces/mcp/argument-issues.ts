import type { z } from 'zod';

/** One line naming what is wrong with the arguments; hostile names are cut, never echoed whole. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const short = (s: string) => JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
  const parts = issues.slice(0, 5).map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.slice(0, 5).map(short).join(', ');
      return `unknown argument${issue.keys.length > 1 ? 's' : ''} ${keys}${issue.keys.length > 5 ? ', …' : ''}`;
    }
    const path = issue.path.map((p) => short(String(p))).join('.');
    return `${path === '' ? 'arguments' : path}: ${issue.message.slice(0, 200)}`;
  });
  return parts.join('; ');
}
