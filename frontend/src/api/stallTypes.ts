// Names for the generated API types of the Stalls and Off-CPU views (derived from the operations).
import type { paths } from './schema';

type Json<R> = R extends { content: { 'application/json': infer T } } ? T : never;
type Ok<P extends keyof paths> = paths[P]['get'] extends { responses: { 200: infer A } } ? Json<A> : never;

export type Chain = Ok<'/api/analyses/{analysis_id}/chains'>[number];
export type ChainLink = Chain['links'][number];
export type AlsoWaiting = ChainLink['also_waiting'][number];
export type LinkedRequest = NonNullable<ChainLink['request']>;
export type Wait = Ok<'/api/analyses/{analysis_id}/waits'>[number];
export type Calls = Ok<'/api/analyses/{analysis_id}/calls'>;
export type Call = Calls['calls'][number];
export type Mark = Ok<'/api/analyses/{analysis_id}/marks'>[number];
export type FlameGraph = Ok<'/api/analyses/{analysis_id}/flamegraph'>;
export type FlameDiff = Ok<'/api/analyses/{analysis_id}/flamegraph/diff'>;
export type FlameNode = FlameGraph['root'];
export type OffcpuTask = Ok<'/api/analyses/{analysis_id}/offcpu-tasks'>[number];
export type LockPrimitive = Ok<'/api/locks'>[number];
export type WakerPairs = Ok<'/api/analyses/{analysis_id}/wakers'>;
export type WakerPair = WakerPairs['items'][number];
