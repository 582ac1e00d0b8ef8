import { useEffect, useState } from 'react';
import { api } from '../api.js';
import { DailyChart } from '../DailyChart';
import { formatDate, formatNumber } from '../format.js';
import type { DashboardUsage } from '../types.js';
import { usageLevel, usedPercent } from '../usage-level.js';

export function UsagePage() {
  const [usage, setUsage] = useState<DashboardUsage | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api.usage().then(setUsage, (err: Error) => setError(err.message));
  }, []);

  if (error)
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  if (!usage) return <p>Loading…</p>;
  const level = usageLevel(usage.used, usage.limit);
  const percent = usedPercent(usage.used, usage.limit);

  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      {level === 'exhausted' ? (
        <p className="banner danger" role="alert">
          You have used this month's allowance: new events are refused with 402 until {formatDate(usage.periodEnd)}.
        </p>
      ) : level === 'warn' ? (
        <p className="banner warn" role="alert">
          You have used {percent}% of this month's allowance.
        </p>
      ) : null}
      <dl className="figures">
        <div>
          <dt>Plan</dt>
          <dd>{usage.plan}</dd>
        </div>
        <div>
          <dt>Used</dt>
          <dd data-testid="used">{formatNumber(usage.used)}</dd>
        </div>
        <div>
          <dt>Limit</dt>
          <dd>{formatNumber(usage.limit)}</dd>
        </div>
        <div>
          <dt>Remaining</dt>
          <dd>{formatNumber(usage.remaining)}</dd>
        </div>
        <div>
          <dt>Resets</dt>
          <dd>{formatDate(usage.periodEnd)}</dd>
        </div>
      </dl>
      <div className="meter" role="meter" aria-label="Share of the monthly allowance used" aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent}>
        <div className={level === 'exhausted' ? 'fill danger' : level === 'warn' ? 'fill warn' : 'fill'} style={{ width: `${percent}%` }} />
      </div>
      <p className="hint">{percent}% used</p>
      <h2>Unique events per day, last 90 days (UTC)</h2>
      <DailyChart days={usage.daily} />
    </section>
  );
}
