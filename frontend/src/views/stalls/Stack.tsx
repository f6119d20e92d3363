/** A call stack, root first, as an indented list; `empty` says why there is none (default: not in the trace). */
export function Stack({ title, frames, testid, empty }: { title: string; frames: string[]; testid?: string; empty?: string }) {
  return (
    <div className="stack" data-testid={testid}>
      <h3>{title}</h3>
      {frames.length === 0 ? (
        <p className="muted">{empty ?? 'No stack in the trace.'}</p>
      ) : (
        <ol className="stack-list mono">
          {frames.map((f, i) => (
            <li key={i} style={{ paddingLeft: Math.min(i, 16) * 10 }}>
              {i > 0 && <span className="stack-arrow">↳ </span>}
              {f}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
