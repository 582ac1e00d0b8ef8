/** How close an account is to its allowance: the usage page's banner and bar colour. */
export type UsageLevel = 'ok' | 'warn' | 'exhausted';

export function usageLevel(used: number, limit: number): UsageLevel {
  if (limit <= 0 || used >= limit) return 'exhausted';
  return used / limit >= 0.8 ? 'warn' : 'ok';
}

/** Whole percent for display, never above 100. */
export function usedPercent(used: number, limit: number): number {
  return limit > 0 ? Math.min(100, Math.floor((used / limit) * 100)) : 100;
}
