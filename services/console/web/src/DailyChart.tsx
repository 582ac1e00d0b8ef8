import { formatNumber } from './format.js';

/** A plain SVG bar chart; the table below it carries the same numbers for screen readers. */
export function DailyChart({ days }: { days: { day: string; events: number }[] }) {
  const width = 900;
  const height = 200;
  const max = Math.max(1, ...days.map((d) => d.events));
  const barWidth = width / Math.max(1, days.length);
  const total = days.reduce((sum, d) => sum + d.events, 0);
  if (total === 0) return <p className="hint">No events in the last {days.length} days yet.</p>;
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height + 20}`} role="img" aria-label={`Daily unique events, ${formatNumber(total)} in the last ${days.length} days`}>
        <line x1="0" y1={height} x2={width} y2={height} className="axis" />
        {days.map((d, i) => {
          const h = Math.round((d.events / max) * (height - 10));
          return (
            <rect key={d.day} x={i * barWidth + 1} y={height - h} width={Math.max(1, barWidth - 2)} height={h} className="bar">
              <title>{`${d.day}: ${formatNumber(d.events)}`}</title>
            </rect>
          );
        })}
        <text x="0" y={height + 16} className="label">
          {days[0]?.day}
        </text>
        <text x={width} y={height + 16} textAnchor="end" className="label">
          {days[days.length - 1]?.day}
        </text>
        <text x="4" y="12" className="label">
          max {formatNumber(max)}
        </text>
      </svg>
      <figcaption>
        <details>
          <summary>Days with events</summary>
          <ul>
            {days
              .filter((d) => d.events > 0)
              .map((d) => (
                <li key={d.day}>
                  {d.day}: {formatNumber(d.events)}
                </li>
              ))}
          </ul>
        </details>
      </figcaption>
    </figure>
  );
}
