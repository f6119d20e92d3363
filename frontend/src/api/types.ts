// Names for the generated API types. Derived from the operations (paths), not from the schema
// names, so that renaming a Pydantic model in the backend does not break the frontend.
import type { paths } from './schema';

type Json<R> = R extends { content: { 'application/json': infer T } } ? T : never;
type Ok<P extends keyof paths, M extends 'get' | 'post'> = paths[P][M] extends { responses: infer R }
  ? R extends { 200: infer A }
    ? Json<A>
    : R extends { 201: infer B }
      ? Json<B>
      : never
  : never;

export type AnalysisSummary = Ok<'/api/analyses', 'get'>[number];
export type AnalysisCreated = Ok<'/api/analyses', 'post'>;
export type UploadedSource = AnalysisCreated['sources'][number];
export type AnalysisDetail = Ok<'/api/analyses/{analysis_id}', 'get'>;
export type SourceDetail = AnalysisDetail['sources'][number];
export type Progress = Ok<'/api/progress/{token}', 'get'>;
export type BlockRequest = Ok<'/api/analyses/{analysis_id}/requests', 'get'>[number];
export type RequestDetail = Ok<'/api/analyses/{analysis_id}/requests/{source_id}/{line}', 'get'>;
export type RequestEvent = RequestDetail['events'][number];
export type SchedMessage = RequestDetail['messages'][number];
export type DispatchSummaryRow = Ok<'/api/analyses/{analysis_id}/dispatch-summary', 'get'>[number];
export type PhaseStats = DispatchSummaryRow['i2d'];
export type LatencyOverTime = Ok<'/api/analyses/{analysis_id}/latency-over-time', 'get'>;
export type LatencyBucket = LatencyOverTime['series']['i2d'][number];

/** Error body of the API, the same for every error (ErrorBody): `detail` is a human message; a malformed request
 * adds each parameter's error (`errors`), an upload its files' problems (`files`). Partial: an answer that is not the
 * API's (a proxy's error page) has none of it. */
export type ApiErrorBody = Partial<Json<paths['/api/analyses']['post']['responses'][422]>>;
