// What an upload's capture itself lacks (the `own` items of GET /api/analyses/{id}/capabilities): said with the
// upload's result, with the command that would add it (issue 33), not only once the analysis is opened.
import { useCapabilities } from './CaptureCapabilities';

export function UploadGaps({ analysisId }: { analysisId: string }) {
  const q = useCapabilities(analysisId);
  const own = q.data?.missing.filter((m) => m.own) ?? [];
  if (own.length === 0) return null;
  return (
    <div className="upload-gaps" data-testid="upload-gaps">
      <h3 style={{ fontSize: 13, margin: '8px 0 4px' }}>What this capture lacks, and how to capture it next time</h3>
      <ul>
        {own.map((m) => (
          <li key={m.what}>
            <b>{m.what}</b> <span className="muted">— {m.why}</span>
            <br />
            <code className="mono">{m.capture}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}
