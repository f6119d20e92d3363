import type { ReactNode } from 'react';

export function Loading({ what }: { what: string }) {
  return (
    <div className="status loading" role="status">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </div>
  );
}

export function ErrorBox({ title, error, children }: { title: string; error: unknown; children?: ReactNode }) {
  const msg = error instanceof Error ? error.message : String(error);
  return (
    <div className="status error" role="alert">
      <strong>{title}</strong> {msg}
      {children}
    </div>
  );
}
