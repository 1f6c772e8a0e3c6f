import { useWorlds as useTestingWorlds, type World as TestingWorld } from '@herald/testing';
import { startDeliveryWorker, type DeliveryWorker } from '../../src';

export { useHttpRecorders, type SentEvent } from '@herald/testing';

/** packages/testing's World, whose workers are this service's DeliveryWorker. */
export type World = TestingWorld<DeliveryWorker>;

/** Registers an afterEach that closes every World the test made, even when it failed. */
export function useWorlds(): (env?: Record<string, string>, databaseUrl?: string) => World {
  return useTestingWorlds(startDeliveryWorker);
}
