// The delivery-worker's public entry point, for what drives it from outside its own folder (the
// fault suite, packages/testing's World): the process itself starts from main.ts.
export { DeliveryWorker, startDeliveryWorker, type DeliveryWorkerDependencies } from './worker';
