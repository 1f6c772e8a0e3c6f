/**
 * Herald's configuration: the only module that reads process.env. Each process calls its own
 * loader once at start-up (`loadApiConfig`, `loadWorkerConfig`, `loadCliConfig`, or a database
 * script's) and passes the frozen result down; it reads, and in production requires, only the
 * settings that process uses. A bad value stops the process at once with a message naming the variable.
 */
export { ConfigError } from './config-error';
export type { Env } from './parsers';
export {
  DEFAULT_REDIS_URL,
  type AuthFailuresConfig,
  type CallbackConfig,
  type DeliveryJobsConfig,
  type LogLevel,
  type MetricsConfig,
  type NodeEnv,
  type SecretsKeyring,
  type ServiceConfig,
  type TargetPolicyConfig,
} from './shared';
export { parseRedisUrl, redisKeyPrefix, type RedisEndpoint, type RedisNode } from './redis-url';
export { DEVELOPMENT_SECRETS, loadApiConfig, type ApiConfig, type DashboardConfig, type HttpServerConfig, type PortalConfig } from './api';
export {
  loadWorkerConfig,
  type QueueWorkerConfig,
  type ReconcilerConfig,
  type RetryConfig,
  type PartitionsConfig,
  type SweeperConfig,
  type TargetGateConfig,
  type WorkerConfig,
  type WorkerMetricsConfig,
} from './worker';
export type { TraceExporterConfig, TraceSampler, TracingConfig } from './tracing';
export type { EventsListLimits, QueryClassConfig, QueryClassesConfig } from './query-limits';
export { loadCliConfig, loadDemoConfig, type CliConfig, type DemoConfig } from './cli';
export { loadDatabaseConfig, loadKeyRotationConfig, testDatabaseUrl, type DatabaseConfig, type KeyRotationConfig } from './database-tools';
