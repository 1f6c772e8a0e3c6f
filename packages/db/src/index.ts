// The Prisma client is not exported here but from `@herald/db/prisma` (prisma-client.ts), so that a
// service importing this module never loads @prisma/client.
export { closeDatabasePool, createDatabasePool, pingDatabase } from './pool';
export type { DatabasePool, DatabasePoolOptions } from './pool';
export { ensureDatabase, dropDatabase } from './database';
export { applyMigrations } from './migrations';
export type { Migration, MigrationResult } from './migrations';
export { apiKeyPrefixOf, apiKeyRepository, isWellFormedApiKey } from './repositories/api-keys';
export type { ApiKeyRecord, ApiKeyRepository, ApiKeyScope } from './repositories/api-keys';
export { portalSessionRepository } from './repositories/portal-sessions';
export type { PortalScope, PortalSession, PortalSessionRepository } from './repositories/portal-sessions';
export { tenantRepository, DuplicateIdError } from './repositories/tenants';
export type { MerchantRecord, ProgramRecord, TenantRepository } from './repositories/tenants';
export { eventRepository, pagesFoundThroughCounters } from './repositories/events';
export type { EventListPage, EventRepository, EventRepositoryOptions } from './repositories/events';
export type { EventListQuery } from './repositories/event-list-statements';
// GET /events' statements and the ingest's counting statement, for the bench's bare-SQL ceiling and
// its seed's check: the text and parameters Herald itself sends.
export { eventListQueries } from './repositories/event-list-statements';
export { countsStatement } from './repositories/event-counts';
export { eventJsonBytes, numberedEvent } from './repositories/event-json';
export type { KnownTenants, StoredEvent } from './repositories/event-ingest';
export type { NewEvent } from './repositories/event-ingest-statements';
export { ingestStore } from './repositories/ingest-store';
export type { IngestTransaction } from './repositories/ingest-store';
export { createCredentialsCipher, credentialsCipherFromConfig, CredentialsCipherError } from './credentials-cipher';
export type { ReencryptionResult } from './credentials-rotation';
export type {
  CredentialsCipher,
  CredentialsCipherFailure,
  CredentialsCipherOptions,
  EncryptedCredentials,
  EncryptedSecret,
  Keyring,
  TargetCredentials,
} from './credentials-cipher';
export { targetOwnerKey, targetRepository, TargetOwnerNotFoundError } from './repositories/targets';
export type { TargetRepository } from './repositories/targets';
export { fillMissingSigningSecrets } from './repositories/target-signing';
export { MASKED_PASSWORD } from './repositories/target-types';
export type {
  DeliveryTarget,
  MaskedTargetAuth,
  SigningSecretRecord,
  TargetSigning,
  NotificationTargetRecord,
  OAuthTargetAuth,
  TargetAuth,
  TargetInput,
  TargetNotifications,
  TargetOwner,
} from './repositories/target-types';
export { deliveryRepository } from './repositories/deliveries';
export type { DeliveryRepository, OutboxTransaction, ReconcileOptions, SweepOptions } from './repositories/deliveries';
export { isDatabaseUnavailable, isStatementCancelled } from './database-errors';
export { DELIVERY_STATUSES, deliveryHistoryRepository } from './repositories/delivery-history';
export type {
  DeliveryAttemptRecord,
  DeliveryDetail,
  DeliveryFilter,
  DeliveryHistoryRepository,
  DeliveryListQuery,
  DeliveryRecord,
  DeliveryStatus,
  DeliverySummary,
  ReplayCandidate,
  ReplaySelection,
  ReplayTransaction,
} from './repositories/delivery-history';
export { deliveryAttemptRepository } from './repositories/delivery-attempts';
export { storedRange, type StoredRange } from './stored-range';
export type {
  AttemptOutcome,
  AttemptRecord,
  DeferralRecord,
  DeliveryAttemptRepository,
  DeliveryToAttempt,
  DeliveryWork,
  NewDeliveryAttempt,
  RecordedAttempt,
} from './repositories/delivery-attempts';
export type { LoadedTarget } from './repositories/loaded-target';
export { objectOrderRepository, type ObjectOrderRepository, type OrderedDelivery } from './repositories/object-order';
export { partitionMaintenance, partitionName, weekStart } from './partitions';
export { createEventMonthsAhead, eventPartitionName, monthStart, type DroppedMonth, type HeldMonth } from './event-partitions';
export type { DroppedWeek, HeldWeek, PartitionMaintenance, PartitionMaintenanceOptions, PartitionMaintenanceReport } from './partitions';
export { recoveryRepository } from './repositories/recoveries';
export type {
  RecoveryCandidate,
  RecoveryRecord,
  RecoveryRepository,
  RecoveryTarget,
  RecoveryTransaction,
  RecoveryWindow,
} from './repositories/recoveries';
