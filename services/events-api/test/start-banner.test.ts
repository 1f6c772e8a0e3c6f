import { DEVELOPMENT_SECRETS } from '@herald/config';
import { startBanner } from '../src/start-banner';

const developmentConfig = {
  adminToken: DEVELOPMENT_SECRETS.adminToken,
  ingestToken: DEVELOPMENT_SECRETS.ingestToken,
  dashboard: { username: 'admin', password: DEVELOPMENT_SECRETS.dashboardPassword },
};

describe('the start-up banner', () => {
  it('shows the API and dashboard URLs on the port listened on, the development login and tokens, and the next step', () => {
    const banner = startBanner(developmentConfig, 3123);
    expect(banner).toContain('http://127.0.0.1:3123/admin/queues');
    expect(banner).toContain('user admin, password dev-dashboard-password');
    expect(banner).toContain('dev-admin-token');
    expect(banner).toContain('dev-ingest-token');
    expect(banner).toContain('run `pnpm demo` in another terminal');
    expect(banner).toContain('quickstart of README.md');
  });

  it('names the variables instead of showing secrets that are not the development defaults', () => {
    const banner = startBanner(
      { adminToken: 'own-admin-secret', ingestToken: 'own-ingest-secret', dashboard: { username: 'ops', password: 'own-dashboard-secret' } },
      3000,
    );
    expect(banner).not.toMatch(/own-(admin|ingest|dashboard)-secret/);
    expect(banner).toContain('the value of ADMIN_TOKEN');
    expect(banner).toContain('the value of INGEST_TOKEN');
    expect(banner).toContain('password the value of DASHBOARD_PASSWORD');
  });
});
