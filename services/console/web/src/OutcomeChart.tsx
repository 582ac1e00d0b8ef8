import { formatNumber } from './format.js';
import type { DashboardSyncHealth } from './types.js';

type Hour = DashboardSyncHealth['hours'][number];
const SERIES = [
  { key: 'synced', label: 'Synced' },
  { key: 'skipped', label: 'Skipped' },
  { key: 'failed', label: 'Failed' },
] as const;

/** Stacked hourly bars (synced, skipped, failed) in plain SVG; the list below carries the same numbers for screen readers. */
export function OutcomeChart({ hours }: { hours: Hour[] }) {
  const width = 900;
  const height = 200;
  const totalOf = (h: Hour) => h.synced + h.skipped + h.failed;
  const max = Math.max(1, ...hours.map(totalOf));
  const barWidth = width / Math.max(1, hours.length);
  const busy = hours.filter((h) => totalOf(h) > 0);
  if (busy.length === 0) return <p className="hint">No events reached the CRM sync in the last {hours.length / 24} days.</p>;
  const sum = (key: (typeof SERIES)[number]['key']) => hours.reduce((s, h) => s + h[key], 0);
  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${width} ${height + 20}`}
        role="img"
        aria-label={`Events per hour over the last ${hours.length / 24} days: ${SERIES.map((s) => `${formatNumber(sum(s.key))} ${s.label.toLowerCase()}`).join(', ')}`}
      >
        <line x1="0" y1={height} x2={width} y2={height} className="axis" />
        {hours.map((h, i) => {
          let y = height;
          return SERIES.map((s) => {
            const part = Math.round((h[s.key] / max) * (height - 10));
            y -= part;
            return part > 0 ? (
              <rect key={`${h.hour}-${s.key}`} x={i * barWidth} y={y} width={Math.max(1, barWidth - 1)} height={part} className={`bar ${s.key}`}>
                <title>{`${h.hour.slice(0, 13).replace('T', ' ')}:00 UTC: ${formatNumber(h[s.key])} ${s.label.toLowerCase()}`}</title>
              </rect>
            ) : null;
          });
        })}
        <text x="0" y={height + 16} className="label">
          {hours[0]?.hour.slice(0, 10)}
        </text>
        <text x={width} y={height + 16} textAnchor="end" className="label">
          now
        </text>
        <text x="4" y="12" className="label">
          max {formatNumber(max)} an hour
        </text>
      </svg>
      <figcaption>
        <ul className="legend" aria-hidden="true">
          {SERIES.map((s) => (
            <li key={s.key}>
              <span className={`swatch ${s.key}`} /> {s.label}
            </li>
          ))}
        </ul>
        <details>
          <summary>Hours with events</summary>
          <ul>
            {busy.map((h) => (
              <li key={h.hour}>
                {h.hour.slice(0, 13).replace('T', ' ')}:00 UTC: {SERIES.map((s) => `${formatNumber(h[s.key])} ${s.label.toLowerCase()}`).join(', ')}
              </li>
            ))}
          </ul>
        </details>
      </figcaption>
    </figure>
  );
}
