import { DEVELOPMENT_SECRETS } from '@herald/config';
import { startBanner } from '../src/start-banner';

const developmentConfig = {
  adminToken: DEVELOPMENT_SECRETS.adminToken,
  ingestToken: DEVELOPMENT_SECRETS.ingestToken,
  dashboard: { username: 'admin', password: DEVELOPMENT_SECRETS.dashboardPassword },
};

describe('the start-up banner', () => {
  it('shows the API and dashboard URLs on the port listened on, the development login and tokens, and the next step', () => {
    const banner = startBanner(developmentConfig, { host: '127.0.0.1', port: 3123 });
    expect(banner).toContain('http://127.0.0.1:3123/admin/queues');
    expect(banner).toContain('user admin, password dev-dashboard-password');
    expect(banner).toContain('dev-admin-token');
    expect(banner).toContain('dev-ingest-token');
    expect(banner).toContain('run `pnpm demo` in another terminal');
    expect(banner).toContain('quickstart of README.md');
  });

  it('says where the API listens: loopback only, or every interface with a warning', () => {
    expect(startBanner(developmentConfig, { host: '127.0.0.1', port: 3000 })).toContain(
      'Listening on    127.0.0.1 port 3000 (HOST; only this machine can connect)',
    );
    const open = startBanner(developmentConfig, { host: '0.0.0.0', port: 3000 });
    expect(open).toContain('every interface, port 3000 (HOST): anyone who reaches this machine can use the tokens below');
    expect(open).toContain('http://127.0.0.1:3000/admin/queues');
    expect(startBanner(developmentConfig, { host: '10.1.2.3', port: 3001 })).toContain('http://10.1.2.3:3001/readyz');
  });

  it('names the variables instead of showing secrets that are not the development defaults', () => {
    const banner = startBanner(
      { adminToken: 'own-admin-secret', ingestToken: 'own-ingest-secret', dashboard: { username: 'ops', password: 'own-dashboard-secret' } },
      { host: '127.0.0.1', port: 3000 },
    );
    expect(banner).not.toMatch(/own-(admin|ingest|dashboard)-secret/);
    expect(banner).toContain('the value of ADMIN_TOKEN');
    expect(banner).toContain('the value of INGEST_TOKEN');
    expect(banner).toContain('password the value of DASHBOARD_PASSWORD');
  });
});
