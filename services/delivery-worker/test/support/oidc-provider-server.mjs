// oidc-provider (an ES module, which Jest's CommonJS runtime cannot load) run as a merchant's OAuth
// 2.0 authorization server on 127.0.0.1, in a process of its own. One confidential client, given
// as JSON in argv[2] ({clientId, clientSecret, scope}), may use the client credentials grant with
// client_secret_basic; token introspection lets the merchant's receiver check the tokens it gets.
// Prints {"port": …} on stdout once it listens.
import Provider from 'oidc-provider';

const { clientId, clientSecret, scope } = JSON.parse(process.argv[2]);
const provider = new Provider('http://127.0.0.1', {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope,
    },
  ],
  scopes: scope.split(' '),
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    devInteractions: { enabled: false },
  },
});
// The issuer's host and port do not matter to a client credentials grant; tokens are checked by introspection.
provider.proxy = false;
const server = provider.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
