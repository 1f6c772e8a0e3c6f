// The events-api's own in-process test harness, reused: the fault suite is a test of the
// services, and one harness keeps the way the app is wired for tests in one place.
export { createTestApi as createTenantApi, type TestApi } from '../../services/events-api/test/support/api';
