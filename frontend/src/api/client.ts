import createClient from 'openapi-fetch';
import type { paths } from './schema';
import type { ApiErrorBody } from './types';
import { getToken } from './access';

export const api = createClient<paths>({ baseUrl: '' });

// The server's token, once this browser has signed in (access.ts): listing every analysis, uploading, changing
// and deleting need it on a shared server; reads ignore it.
api.use({
  onRequest({ request }) {
    const token = getToken();
    if (token && !request.headers.has('Authorization')) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
});

export class ApiError extends Error {
  readonly status: number;
  readonly body: ApiErrorBody | null;
  constructor(status: number, body: ApiErrorBody | null, fallback: string) {
    super(errorMessage(body, fallback));
    this.status = status;
    this.body = body;
  }
}

/** A human message from an API error body: its `detail` (every error of the API has one, a 422 naming each
 * malformed parameter in it); `fallback` for a body that is not the API's. */
export function errorMessage(body: ApiErrorBody | null | undefined, fallback: string): string {
  const d: unknown = body?.detail;
  return typeof d === 'string' && d ? d : fallback;
}

/** Unwrap an openapi-fetch result: data on success, a thrown ApiError otherwise. */
export async function unwrap<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await p;
  if (response.ok && data !== undefined) return data;
  throw new ApiError(response.status, (error as ApiErrorBody) ?? null, `${response.status} ${response.statusText || 'request failed'}`);
}
