// The delivery-worker's own test world (program, target, events enqueued through the real
// producer), reused so the fault suite wires the worker's dependencies the way its tests do.
export { useHttpRecorders, useWorlds, waitFor, type World } from '../../services/delivery-worker/test/support/world';
