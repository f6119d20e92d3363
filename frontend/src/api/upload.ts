// The upload uses XMLHttpRequest (not fetch) to get upload progress; the server's parse progress
// comes from polling /api/progress/{token}.
import { api } from './client';
import { tokenHeaders } from './access';
import type { AnalysisCreated, ApiErrorBody, Progress } from './types';
import { errorMessage } from './client';
import { uploadForm } from './uploadForm';

export type UploadProgress = { sent: number; total: number };

export class UploadError extends Error {
  readonly status: number;
  readonly files: { filename: string | null; error: string; line?: number | null; offset?: number | null }[];
  constructor(status: number, message: string, files: UploadError['files'] = []) {
    super(message);
    this.status = status;
    this.files = files;
  }
}

export function newProgressToken(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function uploadAnalysis(
  files: File[],
  name: string,
  token: string,
  onProgress: (p: UploadProgress) => void,
  signal?: AbortSignal,
): Promise<AnalysisCreated> {
  return new Promise((resolve, reject) => {
    const form = uploadForm(files, name); // a blktrace set's files in interleaved pieces (uploadForm.ts)
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/analyses?progress=${encodeURIComponent(token)}`);
    xhr.responseType = 'text';
    for (const [k, v] of Object.entries(tokenHeaders())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress({ sent: e.loaded, total: e.lengthComputable ? e.total : 0 });
    xhr.onload = () => {
      let body: unknown;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        resolve(body as AnalysisCreated);
        return;
      }
      const eb = (body ?? {}) as ApiErrorBody;
      const fallback =
        xhr.status === 413
          ? 'The upload is too large for this server.'
          : xhr.status === 401
            ? 'This server needs its token to upload: sign in below.'
            : `Upload failed: ${xhr.status} ${xhr.statusText}`;
      reject(new UploadError(xhr.status, errorMessage(eb, fallback), Array.isArray(eb.files) ? eb.files : []));
    };
    xhr.onerror = () => reject(new UploadError(0, 'Network error: the server could not be reached.'));
    xhr.onabort = () => reject(new UploadError(0, 'Upload cancelled.'));
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(form);
  });
}

/** Server-side progress; null while the server does not know the token yet. */
export async function fetchProgress(token: string): Promise<Progress | null> {
  const { data, response } = await api.GET('/api/progress/{token}', { params: { path: { token } } });
  return response.ok && data ? data : null;
}
