export { targetKeys } from './target-gate';
export {
  createTargetGate,
  type Admission,
  type BreakerChange,
  type GateEntry,
  type GateRelease,
  type GateVerdict,
  type LeaseGrant,
  type LeaseRequest,
  type TargetGate,
  type TargetGateSettings,
} from './target-gate';
export { countBreakers, readTargetHealth, type BreakerHealth, type BreakerState, type TargetHealth } from './target-health';
export { createWorkerGate, type WorkerGate } from './worker-gate';
export type { WorkerGateLogger, WorkerGateOptions } from './worker-gate-options';
